/* c_server: a CM server in C on the fastcm C API. It listens on a service ID, accepts every REQ
 * with a REP from an epoll loop on its event queue's fd, answers DREQs, and counts the
 * connections that reach established (the RTU). The fabric comes from the caller, so the same
 * loop serves the in-process loopback fabric (tests/capi/c_server_test.cpp runs it against a C++
 * client in one process) and any fabric the C API gives.
 *
 * Thread contract: one c_server is driven by one thread at a time; c_server_start and
 * c_server_stop from any thread. */
#ifndef FASTCM_EXAMPLES_C_SERVER_H
#define FASTCM_EXAMPLES_C_SERVER_H

#include <stdint.h>

#include "fastcm/fastcm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct c_server c_server;

/* Creates an engine (worker threads) on `fabric` and listens on service_id. Returns FASTCM_OK or
 * the failing call's status (nothing is left behind then). */
fastcm_status c_server_start(fastcm_fabric* fabric, uint64_t service_id, c_server** out);

/* Runs the epoll loop until `connections` more connections are established (FASTCM_OK), no event
 * arrived for idle_timeout_ms (FASTCM_ERR_INVALID_STATE: nobody came), epoll failed
 * (FASTCM_ERR_NO_RESOURCES) or a call failed (its status). Blocks in epoll_wait. */
fastcm_status c_server_serve(c_server* server, unsigned connections, int idle_timeout_ms);

/* Connections established so far. */
unsigned c_server_established(const c_server* server);

/* Destroys the engine and everything on it (established connections included). NULL: nothing. */
void c_server_stop(c_server* server);

#ifdef __cplusplus
}
#endif

#endif /* FASTCM_EXAMPLES_C_SERVER_H */
