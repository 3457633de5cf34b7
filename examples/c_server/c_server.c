#include "c_server.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

struct c_server {
  fastcm_engine* engine;
  fastcm_event_queue* queue;
  fastcm_id listen;
  int epoll_fd;
  unsigned established;
  uint32_t next_qpn; /* QPNs the REPs name; a real server creates a QP per connection */
};

enum { kEventsPerPoll = 32, kQueueCapacity = 4096 };

fastcm_status c_server_start(fastcm_fabric* fabric, uint64_t service_id, c_server** out) {
  c_server* s = calloc(1, sizeof *s);
  if (s == NULL) return FASTCM_ERR_NO_MEMORY;
  s->epoll_fd = -1;
  s->next_qpn = 0x100;

  fastcm_engine_config config;
  fastcm_engine_config_init(&config);
  config.max_endpoints = 4096;
  config.mad_buffers = 4096;
  fastcm_status st = fastcm_engine_create(fabric, NULL, &config, &s->engine);
  if (st == FASTCM_OK) st = fastcm_create_event_queue(s->engine, kQueueCapacity, &s->queue);
  if (st == FASTCM_OK) {
    fastcm_listen_params listen;
    fastcm_listen_params_init(&listen);
    listen.service_id = service_id;
    listen.delivery.queue = s->queue;
    st = fastcm_listen(s->engine, &listen, &s->listen);
  }
  if (st == FASTCM_OK) {
    s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data = {.ptr = s->queue}};
    if (s->epoll_fd < 0 || epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fastcm_event_queue_fd(s->queue), &ev) != 0) {
      st = FASTCM_ERR_NO_RESOURCES;
    }
  }
  if (st != FASTCM_OK) {
    c_server_stop(s);
    return st;
  }
  *out = s;
  return FASTCM_OK;
}

/* Answers one event; FASTCM_OK or the failing call's status. */
static fastcm_status handle(c_server* s, const fastcm_event* ev) {
  switch (ev->type) {
    case FASTCM_EVENT_REQ_RECEIVED: {
      fastcm_rep_params rep;
      fastcm_rep_params_init(&rep);
      rep.qpn = s->next_qpn++;
      rep.starting_psn = rep.qpn;
      rep.responder_resources = ev->u.req.initiator_depth;
      rep.initiator_depth = ev->u.req.responder_resources;
      return fastcm_send_rep(s->engine, ev->id, &rep);
    }
    case FASTCM_EVENT_RTU_RECEIVED:
      ++s->established;
      return FASTCM_OK;
    case FASTCM_EVENT_DREQ_RECEIVED:
      return fastcm_send_drep(s->engine, ev->id, NULL, 0);
    default:
      return FASTCM_OK; /* errors and time-wait exits need nothing from a counting server */
  }
}

fastcm_status c_server_serve(c_server* s, unsigned connections, int idle_timeout_ms) {
  const unsigned target = s->established + connections;
  fastcm_event events[kEventsPerPoll];
  while (s->established < target) {
    struct epoll_event ready;
    const int n = epoll_wait(s->epoll_fd, &ready, 1, idle_timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FASTCM_ERR_NO_RESOURCES;
    if (n == 0) return FASTCM_ERR_INVALID_STATE;
    const size_t got = fastcm_poll(s->engine, s->queue, events, kEventsPerPoll);
    fastcm_status st = FASTCM_OK;
    for (size_t i = 0; i < got; ++i) {
      if (st == FASTCM_OK) st = handle(s, &events[i]);
      fastcm_release(s->engine, &events[i]);
    }
    if (st != FASTCM_OK) return st;
  }
  return FASTCM_OK;
}

unsigned c_server_established(const c_server* s) { return s->established; }

void c_server_stop(c_server* s) {
  if (s == NULL) return;
  if (s->epoll_fd >= 0) close(s->epoll_fd);
  fastcm_engine_destroy(s->engine); /* frees the queue, the listen and every endpoint */
  free(s);
}
