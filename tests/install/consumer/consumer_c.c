/* An out-of-tree C program on the installed fastcm's C API: an engine listening on the loopback
 * fabric. Prints "consumer_c: listening" and exits 0 on success. */
#include <fastcm/fastcm.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  if (strcmp(fastcm_version(), FASTCM_VERSION_STRING) != 0) return 1;
  fastcm_loopback_config fabric_config;
  fastcm_loopback_config_init(&fabric_config);
  fastcm_loopback* loopback = NULL;
  if (fastcm_loopback_create(&fabric_config, NULL, &loopback) != FASTCM_OK) return 1;
  fastcm_engine_config config;
  fastcm_engine_config_init(&config);
  config.threading = FASTCM_THREADING_CALLER;
  config.max_endpoints = 64;
  config.mad_buffers = 256;
  fastcm_engine* engine = NULL;
  fastcm_status st = fastcm_engine_create(fastcm_loopback_hca(loopback, 0), NULL, &config, &engine);
  fastcm_event_queue* queue = NULL;
  if (st == FASTCM_OK) st = fastcm_create_event_queue(engine, 16, &queue);
  fastcm_id listen_id = 0;
  if (st == FASTCM_OK) {
    fastcm_listen_params listen;
    fastcm_listen_params_init(&listen);
    listen.service_id = 0x42;
    listen.delivery.queue = queue;
    st = fastcm_listen(engine, &listen, &listen_id);
  }
  printf("consumer_c: %s\n", st == FASTCM_OK ? "listening" : fastcm_strerror(st));
  fastcm_engine_destroy(engine);
  fastcm_loopback_destroy(loopback);
  return st == FASTCM_OK ? 0 : 1;
}
