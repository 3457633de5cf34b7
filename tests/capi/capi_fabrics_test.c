/* The fabric a settings file names, opened through the C API (fastcm_fabrics_open), and the
 * loopback's fault percentages as C fields. C11, the strictest warnings.
 *   - loopback from a file: one fabric per HCA with the file's ports; a [pcap] file adds counters
 *   - udp on 127.0.0.1 and 127.0.0.2: a connection from one port of an engine to the other goes
 *     REQ, REP, RTU over real sockets
 *   - the error outcomes: a umad device that does not exist (no RDMA device can run here), an
 *     address that is not local, a capture file that cannot be written, a loopback out of range
 *   - fastcm_loopback_config.loss_pct = 100: a REQ never arrives and its retries run out
 * Exit 0 on success; each failed check prints its line. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcm/fastcm.h"

#include "c_check.h"

static char scratch_dir[128];

/* Writes `text` to scratch_dir/name and loads it; NULL (a failed check) when it does not load. */
static fastcm_settings* settings_from(const char* name, const char* text) {
  char path[192];
  snprintf(path, sizeof path, "%s/%s", scratch_dir, name);
  FILE* f = fopen(path, "w");
  CHECK(f != NULL);
  if (f == NULL) return NULL;
  fputs(text, f);
  fclose(f);
  fastcm_settings* s = NULL;
  char error[256] = "";
  if (fastcm_settings_load(path, &s, error, sizeof error) != FASTCM_OK) {
    fprintf(stderr, "%s: %s\n", name, error);
    ++failures;
  }
  return s;
}

/* Opens what the file names; the status, with the reason in error[]. */
static fastcm_status open_from(const char* name, const char* text, fastcm_fabrics** out, char* error,
                               size_t error_size) {
  fastcm_settings* s = settings_from(name, text);
  if (s == NULL) return FASTCM_ERR_INVALID_ARGUMENT;
  const fastcm_status status = fastcm_fabrics_open(s, NULL, out, error, error_size);
  fastcm_settings_free(s);
  return status;
}

static void loopback_from_file(void) {
  char text[512];
  snprintf(text, sizeof text,
           "[fabric]\ntype = loopback\n[loopback]\nhcas = 3\nports_per_hca = 2\nloss = 5\n"
           "[pcap]\nfile = %s/x.pcapng\n",
           scratch_dir);
  fastcm_fabrics* fabrics = NULL;
  char error[256] = "";
  CHECK(open_from("loopback.ini", text, &fabrics, error, sizeof error) == FASTCM_OK);
  if (fabrics == NULL) return;
  CHECK(fastcm_fabrics_count(fabrics) == 3);
  CHECK(fastcm_fabrics_get(fabrics, 3) == NULL);
  for (size_t i = 0; i < 3; ++i) CHECK(fastcm_fabric_port_count(fastcm_fabrics_get(fabrics, i)) == 2);
  fastcm_port_attr port;
  CHECK(fastcm_fabric_port(fastcm_fabrics_get(fabrics, 2), 1, &port) == FASTCM_OK);
  CHECK(port.lid == 2 * 16 + 2 && port.link_layer == FASTCM_LINK_INFINIBAND);
  fastcm_capture_counters counters = {1, 1, 1, 1};
  CHECK(fastcm_fabrics_capture_counters(fabrics, &counters));
  CHECK(counters.written == 0 && counters.dropped_queue_full == 0 && counters.dropped_limit == 0);
  fastcm_fabrics_close(fabrics);

  /* Without [pcap]: no counters, *out untouched. */
  fabrics = NULL;
  CHECK(open_from("plain.ini", "[fabric]\ntype = loopback\n", &fabrics, error, sizeof error) == FASTCM_OK);
  if (fabrics == NULL) return;
  CHECK(fastcm_fabrics_count(fabrics) == 2);
  counters.written = 7;
  CHECK(!fastcm_fabrics_capture_counters(fabrics, &counters) && counters.written == 7);
  fastcm_fabrics_close(fabrics);
  fastcm_fabrics_close(NULL);
}

static void error_outcomes(void) {
  fastcm_fabrics* fabrics = NULL;
  char error[256] = "";
  CHECK(open_from("umad.ini", "[fabric]\ntype = umad\n[umad]\ndevice = fastcm_no_such_hca\n", &fabrics, error,
                  sizeof error) == FASTCM_ERR_OPEN_FAILED);
  CHECK(fabrics == NULL);
  /* Without ib_umad libibumad fails to initialise; with it, there is no such device. */
  CHECK(strstr(error, "ib_umad") != NULL || strstr(error, "no device 'fastcm_no_such_hca'") != NULL);

  error[0] = '\0';
  CHECK(open_from("far.ini", "[fabric]\ntype = udp\n[udp]\naddresses = 192.0.2.1\n", &fabrics, error,
                  sizeof error) == FASTCM_ERR_OPEN_FAILED);
  CHECK(fabrics == NULL && strstr(error, "192.0.2.1") != NULL);

  char text[320];
  snprintf(text, sizeof text, "[fabric]\ntype = loopback\n[pcap]\nfile = %s/no/such/dir/x.pcapng\n", scratch_dir);
  error[0] = '\0';
  CHECK(open_from("pcap.ini", text, &fabrics, error, sizeof error) == FASTCM_ERR_OPEN_FAILED);
  CHECK(fabrics == NULL && strncmp(error, "[pcap] ", 7) == 0);

  /* The reason is cut to fit; a NULL buffer is allowed. */
  char small[8];
  CHECK(open_from("umad.ini", "[fabric]\ntype = umad\n[umad]\ndevice = fastcm_no_such_hca\n", &fabrics, small,
                  sizeof small) == FASTCM_ERR_OPEN_FAILED);
  CHECK(strlen(small) == sizeof small - 1);
  CHECK(open_from("umad.ini", "[fabric]\ntype = umad\n[umad]\ndevice = fastcm_no_such_hca\n", &fabrics, NULL,
                  0) == FASTCM_ERR_OPEN_FAILED);
  CHECK(fastcm_fabrics_open(NULL, NULL, &fabrics, NULL, 0) == FASTCM_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(fastcm_strerror(FASTCM_ERR_OPEN_FAILED), "open_failed") == 0);
}

/* A UDP port the kernel had free on 127.0.0.1 a moment ago (0 when it gives none). */
static unsigned free_udp_port(void) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return 0;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  unsigned port = 0;
  if (bind(fd, (struct sockaddr*)&sa, sizeof sa) == 0 && getsockname(fd, (struct sockaddr*)&sa, &len) == 0) {
    port = ntohs(sa.sin_port);
  }
  close(fd);
  return port;
}

static fastcm_id accepted = 0;
static fastcm_status rep_status = FASTCM_ERR_INTERNAL;
static void on_server_event(const fastcm_event* ev, void* ctx) {
  fastcm_engine* engine = ctx;
  if (ev->type != FASTCM_EVENT_REQ_RECEIVED) return;
  accepted = ev->id;
  fastcm_rep_params rep;
  fastcm_rep_params_init(&rep);
  rep.qpn = 0x200;
  rep_status = fastcm_send_rep(engine, ev->id, &rep);
}

static fastcm_event_type last_client_event = FASTCM_EVENT_TIMEWAIT_EXIT;
static int client_events = 0;
static fastcm_id client_id = 0;
static void on_client_event(const fastcm_event* ev, void* ctx) {
  (void)ctx;
  last_client_event = ev->type;
  ++client_events;
}

/* An engine driven on this thread, sized for a few connections. */
static fastcm_engine* small_engine(fastcm_fabric* fabric, const fastcm_clock* clock) {
  fastcm_engine_config config;
  fastcm_engine_config_init(&config);
  config.threading = FASTCM_THREADING_CALLER;
  config.max_endpoints = 16;
  config.mad_buffers = 64;
  fastcm_engine* engine = NULL;
  CHECK(fastcm_engine_create(fabric, clock, &config, &engine) == FASTCM_OK);
  return engine;
}

/* Sends a REQ for `service` from port `from` to port `to` on a new endpoint whose events go to
 * on_client_event. */
static void connect_to(fastcm_engine* engine, const fastcm_port_attr* from, const fastcm_port_attr* to,
                       uint64_t service, uint8_t max_cm_retries) {
  const fastcm_delivery by_callback = {.handler = on_client_event};
  fastcm_id id = 0;
  CHECK(fastcm_create_id(engine, &by_callback, NULL, &id) == FASTCM_OK);
  fastcm_req_params req;
  fastcm_req_params_init(&req);
  req.service_id = service;
  req.qpn = 0x100;
  req.max_cm_retries = max_cm_retries;
  fastcm_loopback_path_record(from, to, 14, &req.primary);
  client_events = 0;
  CHECK(fastcm_send_req(engine, id, &req) == FASTCM_OK);
  client_id = id;
}

/* Runs the engine until `*counter` moves or the rounds run out (the peer is this engine itself:
 * a datagram sent to 127.0.0.1 is in the socket's queue when sendto returns). */
static void progress_until(fastcm_engine* engine, const int* counter, int from) {
  for (int round = 0; round < 100000 && *counter == from; ++round) (void)fastcm_progress(engine);
}

static void udp_connection(void) {
  const unsigned udp_port = free_udp_port();
  CHECK(udp_port != 0);
  char text[256];
  snprintf(text, sizeof text, "[fabric]\ntype = udp\n[udp]\naddresses = 127.0.0.1, 127.0.0.2\nport = %u\n", udp_port);
  fastcm_fabrics* fabrics = NULL;
  char error[256] = "";
  CHECK(open_from("udp.ini", text, &fabrics, error, sizeof error) == FASTCM_OK);
  if (fabrics == NULL) {
    fprintf(stderr, "udp: %s\n", error);
    return;
  }
  CHECK(fastcm_fabrics_count(fabrics) == 1);
  fastcm_fabric* fabric = fastcm_fabrics_get(fabrics, 0);
  CHECK(fastcm_fabric_port_count(fabric) == 2);
  fastcm_port_attr a;
  fastcm_port_attr b;
  CHECK(fastcm_fabric_port(fabric, 0, &a) == FASTCM_OK && fastcm_fabric_port(fabric, 1, &b) == FASTCM_OK);
  CHECK(a.link_layer == FASTCM_LINK_ETHERNET && a.lid == 0);
  /* RoCEv2 GIDs: the IPv4-mapped IPv6 addresses ::ffff:127.0.0.1 and ::ffff:127.0.0.2. */
  CHECK(a.gid_count >= 1 && a.gids[0].raw[10] == 0xff && a.gids[0].raw[15] == 1 && b.gids[0].raw[15] == 2);

  fastcm_engine* engine = small_engine(fabric, NULL);
  if (engine == NULL) {
    fastcm_fabrics_close(fabrics);
    return;
  }
  fastcm_listen_params listen;
  fastcm_listen_params_init(&listen);
  listen.service_id = 0x4242;
  listen.delivery.handler = on_server_event;
  listen.delivery.handler_context = engine;
  fastcm_id listen_id = 0;
  CHECK(fastcm_listen(engine, &listen, &listen_id) == FASTCM_OK);

  connect_to(engine, &b, &a, 0x4242, 15); /* from 127.0.0.2 to 127.0.0.1 */
  progress_until(engine, &client_events, 0);
  CHECK(client_events == 1 && last_client_event == FASTCM_EVENT_REP_RECEIVED && rep_status == FASTCM_OK);
  CHECK(fastcm_send_rtu(engine, client_id, NULL, 0) == FASTCM_OK);
  fastcm_connection_info info;
  for (int round = 0; round < 100000; ++round) {
    (void)fastcm_progress(engine);
    if (fastcm_connection_info_get(engine, accepted, &info) == FASTCM_OK && info.state == FASTCM_CEP_ESTABLISHED) break;
  }
  CHECK(fastcm_connection_info_get(engine, accepted, &info) == FASTCM_OK);
  CHECK(info.state == FASTCM_CEP_ESTABLISHED && info.remote_qpn == 0x100);

  fastcm_port_counters counters[3]; /* by port number: port 1 is 127.0.0.1, port 2 127.0.0.2 */
  CHECK(fastcm_counters(engine, counters, 3) == FASTCM_OK);
  CHECK(counters[2].messages[FASTCM_CM_REQ].sent == 1 && counters[1].messages[FASTCM_CM_REQ].received == 1);
  CHECK(counters[1].messages[FASTCM_CM_RTU].received == 1);
  fastcm_engine_destroy(engine);
  fastcm_fabrics_close(fabrics);
}

/* Moves only when the test says. */
static uint64_t virtual_now = 1000;
static uint64_t read_virtual_clock(void* ctx) {
  (void)ctx;
  return virtual_now;
}

static void loopback_loss(void) {
  const fastcm_clock clock = {read_virtual_clock, NULL};
  fastcm_loopback_config lc;
  fastcm_loopback_config_init(&lc);
  CHECK(lc.loss_pct == 0 && lc.dup_pct == 0 && lc.reorder_pct == 0);
  fastcm_loopback* loopback = NULL;
  lc.dup_pct = 100.5;
  CHECK(fastcm_loopback_create(&lc, &clock, &loopback) == FASTCM_ERR_INVALID_ARGUMENT && loopback == NULL);
  lc.dup_pct = 0;
  lc.loss_pct = 100;
  CHECK(fastcm_loopback_create(&lc, &clock, &loopback) == FASTCM_OK);
  if (loopback == NULL) return;
  fastcm_engine* client = small_engine(fastcm_loopback_hca(loopback, 1), &clock);
  if (client == NULL) return;
  fastcm_port_attr from;
  fastcm_port_attr to;
  CHECK(fastcm_fabric_port(fastcm_loopback_hca(loopback, 1), 0, &from) == FASTCM_OK);
  CHECK(fastcm_fabric_port(fastcm_loopback_hca(loopback, 0), 0, &to) == FASTCM_OK);
  connect_to(client, &from, &to, 1, 2);
  for (int round = 0; round < 100 && client_events == 0; ++round) {
    while (fastcm_progress(client) > 0) {
    }
    uint64_t next = 0;
    if (!fastcm_next_timer_ns(client, &next)) break;
    if (next > virtual_now) virtual_now = next;
  }
  CHECK(client_events == 1 && last_client_event == FASTCM_EVENT_REQ_ERROR);
  fastcm_port_counters counters[2];
  CHECK(fastcm_counters(client, counters, 2) == FASTCM_OK);
  /* The REQ and its 2 retries, all lost. */
  const fastcm_message_counters* sent_req = &counters[1].messages[FASTCM_CM_REQ];
  CHECK(sent_req->sent == 1 && sent_req->retried == 2 && sent_req->timed_out == 1);
  fastcm_engine_destroy(client);
  fastcm_loopback_destroy(loopback);
}

int main(void) {
  const char* tmp = getenv("TMPDIR");
  snprintf(scratch_dir, sizeof scratch_dir, "%s/fastcm-capi-fabrics-XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  if (mkdtemp(scratch_dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  loopback_from_file();
  error_outcomes();
  udp_connection();
  loopback_loss();
  char command[160];
  snprintf(command, sizeof command, "rm -rf %s", scratch_dir);
  if (system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch_dir);
  if (failures == 0) printf("capi_fabrics_test: passed\n");
  return failures == 0 ? 0 : 1;
}
