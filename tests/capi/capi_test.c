/* The C API from C11 (-Wall -Wextra -Werror -pedantic): two engines on the C loopback fabric,
 * driven on this thread (FASTCM_THREADING_CALLER) with a virtual clock. The server takes events
 * by callback, the client through an event queue; a connection goes through REQ, REP, RTU, DREQ,
 * DREP and time-wait, a second one is rejected, and each error return the header names for these
 * calls is provoked. Exits 0 when every check holds; otherwise prints the failed checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastcm/fastcm.h"

#include "c_check.h"

#define CHECK_STATUS(call, expected)                                                      \
  do {                                                                                    \
    const fastcm_status got_ = (call);                                                    \
    if (got_ != (expected)) {                                                             \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call, \
              fastcm_strerror(got_), fastcm_strerror(expected));                          \
      ++failures;                                                                         \
    }                                                                                     \
  } while (0)

/* The virtual clock: moves only when the test says. */
static uint64_t virtual_now = 1000;
static uint64_t read_virtual_clock(void* ctx) {
  (void)ctx;
  return virtual_now;
}

enum { kMaxRecorded = 64 };
static const uint8_t kRepData[4] = {0xca, 0xfe, 0xf0, 0x0d};
static const uint64_t kService = 0x1234;

/* What the server's callback saw, and what it answers. */
typedef struct server_state {
  fastcm_engine* engine;
  fastcm_event_type types[kMaxRecorded];
  size_t count;
  fastcm_id last_req;
  uint64_t last_req_service;
  fastcm_req_received last_req_terms; /* as the client sent them */
  int reject_next; /* answer the next REQ with a REJ instead of a REP */
  fastcm_status answer_status;
} server_state;

static void on_server_event(const fastcm_event* ev, void* ctx) {
  server_state* s = ctx;
  if (s->count < kMaxRecorded) s->types[s->count++] = ev->type;
  if (ev->type == FASTCM_EVENT_REQ_RECEIVED) {
    s->last_req = ev->id;
    s->last_req_service = ev->u.req.service_id;
    s->last_req_terms = ev->u.req;
    if (s->reject_next) {
      fastcm_rej_params rej;
      fastcm_rej_params_init(&rej);
      s->answer_status = fastcm_send_rej(s->engine, ev->id, &rej);
    } else {
      fastcm_rep_params rep;
      fastcm_rep_params_init(&rep);
      rep.qpn = 0x200;
      rep.starting_psn = 77;
      rep.private_data = kRepData;
      rep.private_data_len = sizeof kRepData;
      s->answer_status = fastcm_send_rep(s->engine, ev->id, &rep);
    }
  } else if (ev->type == FASTCM_EVENT_DREQ_RECEIVED) {
    s->answer_status = fastcm_send_drep(s->engine, ev->id, NULL, 0);
  }
}

static size_t server_saw(const server_state* s, fastcm_event_type type) {
  size_t n = 0;
  for (size_t i = 0; i < s->count; ++i) n += s->types[i] == type;
  return n;
}

/* Runs both engines until neither has work at the current time. */
static void settle(fastcm_engine* a, fastcm_engine* b) {
  for (int round = 0; round < 10000; ++round) {
    if (fastcm_progress(a) + fastcm_progress(b) == 0) return;
  }
  CHECK(!"the engines never went idle");
}

/* Moves the clock to the earliest protocol timer of either engine (false when none). */
static int jump_to_next_timer(fastcm_engine* a, fastcm_engine* b) {
  uint64_t ta = 0;
  uint64_t tb = 0;
  const bool has_a = fastcm_next_timer_ns(a, &ta);
  const bool has_b = fastcm_next_timer_ns(b, &tb);
  if (!has_a && !has_b) return 0;
  uint64_t next = has_a ? ta : tb;
  if (has_a && has_b && tb < ta) next = tb;
  if (next > virtual_now) virtual_now = next;
  return 1;
}

/* Polls the client's queue for one event of `type` (its MAD released), settling in between. */
static int client_wait(fastcm_engine* client, fastcm_engine* server, fastcm_event_queue* queue,
                       fastcm_event_type type, fastcm_event* out) {
  for (int round = 0; round < 100; ++round) {
    settle(client, server);
    fastcm_event ev;
    while (fastcm_poll(client, queue, &ev, 1) == 1) {
      const int match = ev.type == type;
      if (match) *out = ev;
      else fastcm_release(client, &ev);
      if (match) return 1;
    }
    if (!jump_to_next_timer(client, server)) break;
  }
  fprintf(stderr, "no %s event arrived\n", fastcm_event_type_str(type));
  return 0;
}

static int destroyed_calls = 0;
static void on_destroyed(void* ctx) {
  (void)ctx;
  ++destroyed_calls;
}

static void check_names(void) {
  CHECK(strcmp(fastcm_strerror(FASTCM_OK), "ok") == 0);
  CHECK(strcmp(fastcm_strerror(FASTCM_ERR_STALE_ID), "stale_id") == 0);
  CHECK(strcmp(fastcm_strerror(FASTCM_ERR_NO_MEMORY), "no_memory") == 0);
  CHECK(strcmp(fastcm_strerror(1000), "unknown") == 0);
  CHECK(strcmp(fastcm_rej_reason_str(FASTCM_REJ_CONSUMER_REJECT), "consumer_reject") == 0);
  CHECK(strcmp(fastcm_rej_reason_str(34), "unknown") == 0);
  CHECK(strcmp(fastcm_rej_reason_str(70000), "unknown") == 0);
  CHECK(strcmp(fastcm_message_kind_str(FASTCM_MESSAGE_REP), "rep") == 0);
  CHECK(strcmp(fastcm_apr_status_str(FASTCM_APR_IS_CURRENT), "is_current") == 0);
  CHECK(strcmp(fastcm_sidr_status_str(FASTCM_SIDR_NO_QP), "no_qp") == 0);
  CHECK(strcmp(fastcm_cm_message_str(FASTCM_CM_DREQ), "dreq") == 0);
  CHECK(strcmp(fastcm_cep_state_str(FASTCM_CEP_ESTABLISHED), "established") == 0);
  CHECK(strcmp(fastcm_cep_state_str(300), "unknown") == 0);
  CHECK(strcmp(fastcm_event_type_str(FASTCM_EVENT_TIMEWAIT_EXIT), "timewait_exit") == 0);
  CHECK(fastcm_drop_reason_count() > 0 && fastcm_drop_reason_count() <= FASTCM_MAX_DROP_REASONS);
  CHECK(strcmp(fastcm_drop_reason_str(0), "malformed") == 0);
  CHECK(fastcm_drop_reason_str(fastcm_drop_reason_count()) == NULL);
  CHECK(strcmp(fastcm_version(), FASTCM_VERSION_STRING) == 0);
}

int main(void) {
  check_names();

  const fastcm_clock clock = {read_virtual_clock, NULL};
  fastcm_loopback_config fabric_config;
  fastcm_loopback_config_init(&fabric_config);
  fastcm_loopback* loopback = NULL;
  fabric_config.ports_per_hca = 0;
  CHECK_STATUS(fastcm_loopback_create(&fabric_config, &clock, &loopback), FASTCM_ERR_INVALID_ARGUMENT);
  fabric_config.ports_per_hca = 1;
  CHECK_STATUS(fastcm_loopback_create(&fabric_config, &clock, &loopback), FASTCM_OK);
  if (loopback == NULL) return 1;
  CHECK(fastcm_loopback_hca_count(loopback) == 2);
  CHECK(fastcm_loopback_hca(loopback, 2) == NULL);
  fastcm_fabric* server_fabric = fastcm_loopback_hca(loopback, 0);
  fastcm_fabric* client_fabric = fastcm_loopback_hca(loopback, 1);
  CHECK(fastcm_fabric_port_count(client_fabric) == 1);
  fastcm_port_attr server_port;
  fastcm_port_attr client_port;
  CHECK_STATUS(fastcm_fabric_port(server_fabric, 0, &server_port), FASTCM_OK);
  CHECK_STATUS(fastcm_fabric_port(client_fabric, 0, &client_port), FASTCM_OK);
  CHECK_STATUS(fastcm_fabric_port(client_fabric, 1, &client_port), FASTCM_ERR_INVALID_ARGUMENT);
  CHECK(server_port.lid == 1 && client_port.lid == 17 && client_port.gid_count == 1);

  fastcm_engine_config config;
  fastcm_engine_config_init(&config);
  CHECK(config.shards == 1 && config.threading == FASTCM_THREADING_WORKERS);
  config.threading = FASTCM_THREADING_CALLER;
  config.max_endpoints = 64;
  config.mad_buffers = 256;
  fastcm_engine* server = NULL;
  fastcm_engine* client = NULL;
  config.shards = 0;
  CHECK_STATUS(fastcm_engine_create(server_fabric, &clock, &config, &server), FASTCM_ERR_CREATE_FAILED);
  config.shards = 1;
  CHECK_STATUS(fastcm_engine_create(server_fabric, &clock, &config, &server), FASTCM_OK);
  CHECK_STATUS(fastcm_engine_create(client_fabric, &clock, &config, &client), FASTCM_OK);
  if (server == NULL || client == NULL) return 1;

  /* The server listens with a callback. */
  server_state srv = {.engine = server};
  fastcm_listen_params listen;
  fastcm_listen_params_init(&listen);
  CHECK(listen.service_mask == UINT64_MAX && listen.backlog == 1024);
  listen.service_id = kService;
  fastcm_id listen_id = 0;
  CHECK_STATUS(fastcm_listen(server, &listen, &listen_id), FASTCM_ERR_INVALID_ARGUMENT); /* no delivery */
  listen.delivery.handler = on_server_event;
  listen.delivery.handler_context = &srv;
  CHECK_STATUS(fastcm_listen(server, &listen, &listen_id), FASTCM_OK);
  fastcm_id second_listen = 0;
  CHECK_STATUS(fastcm_listen(server, &listen, &second_listen), FASTCM_ERR_SERVICE_IN_USE);

  /* The client takes its events from a queue. */
  fastcm_event_queue* queue = NULL;
  CHECK_STATUS(fastcm_create_event_queue(client, 0, &queue), FASTCM_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(fastcm_create_event_queue(client, 16, &queue), FASTCM_OK);
  if (queue == NULL) return 1;
  CHECK(fastcm_event_queue_fd(queue) >= 0);
  fastcm_delivery by_queue = {.queue = queue};
  fastcm_delivery both = {.handler = on_server_event, .queue = queue};
  fastcm_id id = 0;
  int client_context = 7;
  CHECK_STATUS(fastcm_create_id(client, &both, NULL, &id), FASTCM_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(fastcm_create_id(client, &by_queue, &client_context, &id), FASTCM_OK);

  fastcm_req_params req;
  fastcm_req_params_init(&req);
  CHECK(req.max_cm_retries == 15 && !req.flow_control && req.primary.pkey == 0xFFFF);
  req.service_id = kService;
  fastcm_loopback_path_record(&client_port, &server_port, 14, &req.primary);
  CHECK(req.primary.local_lid == 17 && req.primary.remote_lid == 1);
  req.qpn = 0x100;
  req.starting_psn = 55; /* what our receive queue expects: the RTR's rq_psn */
  req.responder_resources = 4;
  req.initiator_depth = 3;
  req.local_cm_response_timeout = 18;
  uint8_t too_long[FASTCM_MAX_REQ_PRIVATE_DATA + 1] = {0};
  req.private_data = too_long;
  req.private_data_len = sizeof too_long;
  CHECK_STATUS(fastcm_send_req(client, id, &req), FASTCM_ERR_INVALID_ARGUMENT);
  req.private_data_len = FASTCM_MAX_REQ_PRIVATE_DATA;
  CHECK_STATUS(fastcm_send_req(client, id, &req), FASTCM_OK);
  CHECK_STATUS(fastcm_send_req(client, id, &req), FASTCM_ERR_INVALID_STATE);
  CHECK_STATUS(fastcm_send_req(client, id, NULL), FASTCM_ERR_INVALID_ARGUMENT);

  /* REQ -> server callback sends the REP -> client polls it, checks it, sends the RTU. */
  fastcm_event ev;
  if (client_wait(client, server, queue, FASTCM_EVENT_REP_RECEIVED, &ev)) {
    CHECK(ev.id == id && ev.context == &client_context && ev.mad != NULL);
    CHECK(ev.u.rep.remote_qpn == 0x200 && ev.u.rep.starting_psn == 77);
    CHECK(ev.private_data_len == FASTCM_MAX_REP_PRIVATE_DATA);
    CHECK(memcmp(ev.private_data, kRepData, sizeof kRepData) == 0);
    const uint8_t* data = NULL;
    size_t len = 0;
    CHECK_STATUS(fastcm_last_private_data(client, id, &data, &len), FASTCM_OK);
    CHECK(len == FASTCM_MAX_REP_PRIVATE_DATA && memcmp(data, kRepData, sizeof kRepData) == 0);
    fastcm_qp_attr attr;
    CHECK_STATUS(fastcm_init_qp_attr(client, id, FASTCM_QPS_RTR, &attr), FASTCM_OK);
    CHECK(attr.qp_state == FASTCM_QPS_RTR && attr.dest_qp_num == 0x200 && attr.rq_psn == 55);
    CHECK((attr.mask & FASTCM_QP_DEST_QPN) && (attr.mask & FASTCM_QP_AV));
    CHECK(attr.ah_attr.dlid == 1);
    CHECK_STATUS(fastcm_init_qp_attr(client, id, FASTCM_QPS_RTS, &attr), FASTCM_OK);
    CHECK(attr.qp_state == FASTCM_QPS_RTS && attr.sq_psn == 77 && (attr.mask & FASTCM_QP_SQ_PSN));
    CHECK_STATUS(fastcm_init_qp_attr(client, id, FASTCM_QPS_RESET, &attr), FASTCM_ERR_INVALID_ARGUMENT);
    fastcm_release(client, &ev);
  }
  CHECK(server_saw(&srv, FASTCM_EVENT_REQ_RECEIVED) == 1 && srv.answer_status == FASTCM_OK);
  CHECK(srv.last_req_service == kService);
  CHECK(srv.last_req_terms.initiator_depth == 3 && srv.last_req_terms.local_cm_response_timeout == 18);
  CHECK_STATUS(fastcm_send_rtu(client, id, NULL, 0), FASTCM_OK);
  settle(client, server);
  CHECK(server_saw(&srv, FASTCM_EVENT_RTU_RECEIVED) == 1);

  fastcm_connection_info info;
  CHECK_STATUS(fastcm_connection_info_get(client, id, &info), FASTCM_OK);
  CHECK(info.state == FASTCM_CEP_ESTABLISHED && info.active && info.remote_qpn == 0x200);
  CHECK(info.service_id == kService && !info.has_alternate);
  CHECK(info.local_cm_response_timeout == 18 && info.max_cm_retries == 15);
  CHECK_STATUS(fastcm_connection_info_get(server, srv.last_req, &info), FASTCM_OK);
  CHECK(info.state == FASTCM_CEP_ESTABLISHED && !info.active && info.local_qpn == 0x200);
  /* The passive side's view: the REQ's terms crosswise. */
  CHECK(info.remote_cm_response_timeout == 18 && info.local_cm_response_timeout == 20);
  CHECK(info.max_cm_retries == 15 && info.responder_resources == 0); /* the REP offered none */

  fastcm_port_counters counters[2];
  CHECK_STATUS(fastcm_counters(client, counters, 2), FASTCM_OK);
  CHECK(counters[1].messages[FASTCM_CM_REQ].sent == 1 && counters[1].messages[FASTCM_CM_REP].received == 1);
  CHECK(counters[1].messages[FASTCM_CM_RTU].sent == 1);
  CHECK_STATUS(fastcm_shard_counters(server, 0, counters, 2), FASTCM_OK);
  CHECK(counters[1].messages[FASTCM_CM_REQ].received == 1);
  CHECK_STATUS(fastcm_counters(client, NULL, 2), FASTCM_ERR_INVALID_ARGUMENT);

  /* DREQ -> server DREP from its callback -> time-wait -> idle. */
  CHECK_STATUS(fastcm_send_dreq(client, id, NULL, 0), FASTCM_OK);
  if (client_wait(client, server, queue, FASTCM_EVENT_DREP_RECEIVED, &ev)) fastcm_release(client, &ev);
  CHECK(server_saw(&srv, FASTCM_EVENT_DREQ_RECEIVED) == 1);
  if (client_wait(client, server, queue, FASTCM_EVENT_TIMEWAIT_EXIT, &ev)) fastcm_release(client, &ev);
  CHECK_STATUS(fastcm_connection_info_get(client, id, &info), FASTCM_OK);
  CHECK(info.state == FASTCM_CEP_IDLE);

  /* A second connection (a new endpoint and QP: the server may still hold the first in its
   * time-wait), rejected by the server. */
  srv.reject_next = 1;
  req.private_data_len = 0;
  req.qpn = 0x101;
  fastcm_id rejected = 0;
  CHECK_STATUS(fastcm_create_id(client, &by_queue, NULL, &rejected), FASTCM_OK);
  CHECK_STATUS(fastcm_send_req(client, rejected, &req), FASTCM_OK);
  if (client_wait(client, server, queue, FASTCM_EVENT_REJ_RECEIVED, &ev)) {
    CHECK(ev.id == rejected && ev.u.rej.reason == FASTCM_REJ_CONSUMER_REJECT);
    CHECK(ev.u.rej.message_rejected == FASTCM_MESSAGE_REQ);
    fastcm_release(client, &ev);
  }
  CHECK_STATUS(fastcm_destroy_sync(client, rejected), FASTCM_OK);

  /* Destroy: the callback runs once, then the id is stale. */
  CHECK_STATUS(fastcm_destroy(client, id, on_destroyed, NULL), FASTCM_OK);
  settle(client, server);
  CHECK(destroyed_calls == 1);
  CHECK_STATUS(fastcm_destroy(client, id, on_destroyed, NULL), FASTCM_ERR_STALE_ID);
  CHECK_STATUS(fastcm_send_rtu(client, id, NULL, 0), FASTCM_ERR_STALE_ID);
  CHECK_STATUS(fastcm_set_context(client, id, NULL), FASTCM_ERR_STALE_ID);
  CHECK_STATUS(fastcm_establish(client, id), FASTCM_ERR_STALE_ID);
  CHECK_STATUS(fastcm_destroy_sync(server, listen_id), FASTCM_OK);
  for (int round = 0; round < 100 && jump_to_next_timer(client, server); ++round) settle(client, server);
  CHECK(fastcm_event_queue_size(queue) == 0);
  CHECK(fastcm_mad_buffers_in_use(client) == 0);

  fastcm_engine_destroy(client);
  fastcm_engine_destroy(server);
  fastcm_loopback_destroy(loopback);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("capi_test: all checks passed\n");
  return 0;
}
