/* The C API for operating an engine: a settings file read into the engine's configuration, the
 * log's sink receiving DPDK's start-up through an engine-owned EAL, and metrics in both formats.
 * C11, the strictest warnings. Also posted calls of a worker-threaded engine: a refusal as an event,
 * and an endpoint placed for its port.
 * Exit 0 on success; each failed check prints its line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <poll.h>

#include "fastcm/fastcm.h"

#include "c_check.h"

struct log_capture {
  unsigned lines;
  unsigned eal_lines;
};

static void capture(void* ctx, fastcm_log_level level, const char* text, size_t len) {
  struct log_capture* c = (struct log_capture*)ctx;
  (void)level;
  ++c->lines;
  if (len >= 4 && memcmp(text, "EAL:", 4) == 0) ++c->eal_lines;
}

static void settings(void) {
  char error[256] = "";
  fastcm_settings* s = NULL;
  CHECK(fastcm_settings_load(FASTCM_CONFIGS_DIR "/demo.ini", &s, error, sizeof error) == FASTCM_OK);
  if (s == NULL) return;
  fastcm_engine_config config;
  fastcm_settings_engine_config(s, &config);
  CHECK(config.shards == 4);
  CHECK(config.threading == FASTCM_THREADING_WORKERS);
  CHECK(fastcm_settings_fabric_type(s) == FASTCM_FABRIC_LOOPBACK);
  fastcm_loopback_config loopback;
  fastcm_loopback_config_init(&loopback);
  fastcm_settings_loopback_config(s, &loopback);
  CHECK(loopback.hcas == 2 && loopback.ports_per_hca == 4);
  fastcm_req_params req;
  fastcm_req_params_init(&req);
  fastcm_settings_req_params(s, &req);
  CHECK(req.remote_cm_response_timeout == 20 && req.max_cm_retries == 15);
  CHECK(strcmp(fastcm_settings_pcap_file(s), "") == 0);
  CHECK(fastcm_settings_metrics_interval_ms(s) == 1000);
  fastcm_settings_free(s);

  s = NULL;
  CHECK(fastcm_settings_load(FASTCM_CONFIGS_DIR "/appliance.ini", &s, error, sizeof error) == FASTCM_OK);
  if (s != NULL) {
    fastcm_settings_engine_config(s, &config);
    CHECK(config.eal == FASTCM_EAL_APPLICATION && config.threading == FASTCM_THREADING_CALLER);
    uint8_t ports[4];
    CHECK(fastcm_settings_umad_ports(s, ports, 4) == 1 && ports[0] == 1);
    CHECK(strcmp(fastcm_settings_umad_device(s), "mlx5_1") == 0);
    fastcm_settings_free(s);
  }

  s = NULL;
  CHECK(fastcm_settings_load("/nonexistent/x.ini", &s, error, sizeof error) == FASTCM_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL);
  CHECK(strcmp(error, "/nonexistent/x.ini: cannot open: No such file or directory") == 0);
  char small[8];
  CHECK(fastcm_settings_load("/nonexistent/x.ini", &s, small, sizeof small) == FASTCM_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(small, "/nonexi") == 0);
}

/* Posted calls: with worker threads and posted_calls, a send the shard refuses returns
 * FASTCM_OK and comes back as FASTCM_EVENT_CALL_FAILED naming the call and the status, also
 * when a call batch held it. */
static void posted_calls(fastcm_loopback* loopback) {
  fastcm_engine_config config;
  fastcm_engine_config_init(&config);
  CHECK(config.posted_calls == 0);
  config.posted_calls = 8;
  config.max_endpoints = 64;
  config.mad_buffers = 256;
  fastcm_engine* engine = NULL;
  CHECK(fastcm_engine_create(fastcm_loopback_hca(loopback, 1), NULL, &config, &engine) == FASTCM_OK);
  if (engine == NULL) return;
  fastcm_event_queue* queue = NULL;
  CHECK(fastcm_create_event_queue(engine, 16, &queue) == FASTCM_OK);
  fastcm_delivery delivery;
  memset(&delivery, 0, sizeof delivery);
  delivery.queue = queue;
  int context = 0;
  fastcm_id id = 0;
  CHECK(fastcm_create_id(engine, &delivery, &context, &id) == FASTCM_OK);
  /* Held by the batch until its end, then refused by the shard all the same. */
  fastcm_begin_call_batch(engine);
  CHECK(fastcm_send_rtu(engine, id, NULL, 0) == FASTCM_OK);
  fastcm_end_call_batch(engine);
  fastcm_event ev;
  size_t got = 0;
  /* The queue's fd wakes this thread when the event is in; 10 s is the guard, not a wait. */
  for (int tries = 0; tries < 1000 && got == 0; ++tries) {
    got = fastcm_poll(engine, queue, &ev, 1);
    struct pollfd ready = {fastcm_event_queue_fd(queue), POLLIN, 0};
    if (got == 0) (void)poll(&ready, 1, 10);
  }
  CHECK(got == 1);
  if (got == 1) {
    CHECK(ev.type == FASTCM_EVENT_CALL_FAILED && ev.id == id && ev.context == &context);
    CHECK(ev.u.call_failed.call == FASTCM_CALL_SEND_RTU);
    CHECK(ev.u.call_failed.status == FASTCM_ERR_INVALID_STATE);
    CHECK(strcmp(fastcm_api_call_str(ev.u.call_failed.call), "send_rtu") == 0);
    CHECK(strcmp(fastcm_event_type_str(ev.type), "call_failed") == 0);
    fastcm_release(engine, &ev);
  }
  CHECK(fastcm_destroy_sync(engine, id) == FASTCM_OK);

  /* An endpoint placed for its port: a port the fabric lacks is refused, port 1 is not. */
  fastcm_id placed = 0;
  CHECK(fastcm_create_id_for_port(engine, &delivery, &context, 99, &placed) == FASTCM_ERR_INVALID_ARGUMENT);
  CHECK(placed == 0);
  CHECK(fastcm_create_id_for_port(engine, &delivery, &context, 1, &placed) == FASTCM_OK);
  CHECK(placed != 0);
  CHECK(fastcm_destroy_sync(engine, placed) == FASTCM_OK);
  fastcm_engine_destroy(engine);
}

int main(void) {
  settings();

  /* The log: DPDK's start-up lines (INFO) reach the sink when the engine owns EAL. */
  struct log_capture log = {0, 0};
  fastcm_set_log_level(FASTCM_LOG_INFO);
  CHECK(fastcm_get_log_level() == FASTCM_LOG_INFO);
  CHECK(strcmp(fastcm_log_level_str(FASTCM_LOG_NOTICE), "notice") == 0);
  fastcm_set_log_sink(capture, &log);

  fastcm_loopback_config lc;
  fastcm_loopback_config_init(&lc);
  fastcm_loopback* loopback = NULL;
  CHECK(fastcm_loopback_create(&lc, NULL, &loopback) == FASTCM_OK);
  fastcm_engine_config config;
  fastcm_engine_config_init(&config);
  config.threading = FASTCM_THREADING_CALLER;
  config.max_endpoints = 64;
  config.mad_buffers = 256;
  fastcm_engine* engine = NULL;
  CHECK(fastcm_engine_create(fastcm_loopback_hca(loopback, 0), NULL, &config, &engine) == FASTCM_OK);
  fastcm_set_log_sink(NULL, NULL);
  CHECK(log.eal_lines > 0);

  /* Metrics: measured first, then written whole. */
  if (engine != NULL) {
    const size_t need = fastcm_metrics(engine, "e", FASTCM_METRICS_PROMETHEUS, NULL, 0);
    CHECK(need > 0);
    char* text = malloc(need + 1);
    CHECK(fastcm_metrics(engine, "e", FASTCM_METRICS_PROMETHEUS, text, need + 1) == need);
    CHECK(strncmp(text, "# HELP fastcm_", 14) == 0 && strlen(text) == need);
    CHECK(strstr(text, "fastcm_endpoints_limit{engine=\"e\"} 64\n") != NULL);
    free(text);
    char json[64];
    CHECK(fastcm_metrics(engine, NULL, FASTCM_METRICS_JSON, json, sizeof json) > sizeof json);
    CHECK(json[0] == '{' && strlen(json) == sizeof json - 1);
  }
  fastcm_engine_destroy(engine);
  posted_calls(loopback);
  fastcm_loopback_destroy(loopback);
  if (failures == 0) printf("capi_operate_test: passed\n");
  return failures == 0 ? 0 : 1;
}
