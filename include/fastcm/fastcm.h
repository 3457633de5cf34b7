/* The fastcm C API: the whole C++ API of fastcm/engine.h for C callers (C99 or later).
 *
 * Every type here is plain C; handles are opaque. No C++ exception crosses a call: calls with a
 * status catch them (FASTCM_ERR_NO_MEMORY, FASTCM_ERR_INTERNAL); the others cannot fail, and an
 * internal error inside one ends the process (they are noexcept). Values mirror the C++ API
 * one for one (capi/ checks every number at compile time), so the C++ header comments are the
 * reference for the protocol meaning of each field.
 *
 * Threads: the thread contract of a call is the C++ one (fastcm/engine.h):
 * - FASTCM_THREADING_WORKERS: every call from any thread. A call on an endpoint runs on the
 *   endpoint's shard; from inside a callback it runs inline for the callback's own shard and
 *   answers FASTCM_ERR_WOULD_DEADLOCK for another shard's endpoint (except fastcm_destroy).
 *   With fastcm_engine_config.posted_calls > 0, fastcm_set_context, fastcm_establish and the
 *   fastcm_send_* calls made outside the endpoint's shard are posted: they check the id and the
 *   lengths of private data and info, queue a copy and return; the shard's refusal arrives as a
 *   FASTCM_EVENT_CALL_FAILED event (u.call_failed) unless the endpoint was destroyed meanwhile
 *   (fastcm/engine.h, "Posted calls").
 * - FASTCM_THREADING_CALLER: nothing runs but inside fastcm_progress; every call, and
 *   fastcm_progress, from one thread at a time. Callbacks run inside fastcm_progress or inside the
 *   call that caused them.
 * "Any thread" means concurrently with every other call.
 *
 * Contract blocks: every call's comment ends with the same three items (a comment over a group of
 * calls holds for each of them):
 *   Threads: who may call it, and when.
 *   Blocks:  "no", or what it waits for. "Hand-off" means the call runs on the endpoint's shard and
 *            waits for that shard to execute it (bounded: a shard never waits for an application
 *            thread); from the shard's own callback, and under FASTCM_THREADING_CALLER, it runs
 *            inline.
 *   Errors:  the fastcm_status codes it returns beyond the common ones, or "none" (no status).
 * The common codes: every call with a status answers FASTCM_ERR_INVALID_ARGUMENT for a NULL pointer
 * it needs, FASTCM_ERR_NO_MEMORY when an allocation failed and FASTCM_ERR_INTERNAL for an
 * unexpected C++ exception (a bug). A failed call changes nothing and leaves its outputs untouched.
 *
 * Handles passed to a call must be live (created and not yet destroyed); only the calls that say
 * so accept NULL, and the calls without a status do not check.
 *
 * Ownership: pointers passed in are borrowed for the call only, unless a call says otherwise.
 * Events borrow the received MAD (see fastcm_event).
 *
 * ABI: every struct's layout is part of the ABI of libfastcm.so.N (see the README, "Installing").
 * Fill parameter structs with their fastcm_*_init function first, so fields get the C++ defaults.
 */
#ifndef FASTCM_FASTCM_H
#define FASTCM_FASTCM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fastcm/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* No call throws; C++ callers see it in the type. */
#ifdef __cplusplus
#define FASTCM_NOEXCEPT noexcept
#else
#define FASTCM_NOEXCEPT
#endif

/* ---- errors ----------------------------------------------------------------------------------- */

typedef enum fastcm_status {
  FASTCM_OK = 0,
  FASTCM_ERR_STALE_ID = 1,         /* the id names no live endpoint or listen */
  FASTCM_ERR_INVALID_STATE = 2,    /* not allowed in the endpoint's protocol state */
  FASTCM_ERR_INVALID_ARGUMENT = 3, /* a parameter out of range (private data too long, bad port) */
  FASTCM_ERR_NO_RESOURCES = 4,     /* a bounded table or pool is full */
  FASTCM_ERR_SERVICE_IN_USE = 5,   /* listen: the same service ID/mask on that port */
  FASTCM_ERR_WOULD_DEADLOCK = 6,   /* a shard thread called for another shard's endpoint */
  FASTCM_ERR_NOT_SUPPORTED = 7,    /* a feature the engine does not offer */
  /* C API only: */
  FASTCM_ERR_NO_MEMORY = 64,       /* an allocation failed */
  FASTCM_ERR_CREATE_FAILED = 65,   /* engine: configuration out of range, or DPDK's EAL unusable */
  FASTCM_ERR_INTERNAL = 66,        /* an unexpected C++ exception inside the library (a bug) */
  FASTCM_ERR_OPEN_FAILED = 67      /* a fabric could not be opened (the error text says why) */
} fastcm_status;

/* The code's name ("stale_id"), static storage; "unknown" for other values.
 * Threads: any. Blocks: no. Errors: none. */
const char* fastcm_strerror(int status) FASTCM_NOEXCEPT;

/* The library's version ("0.1.0"), to compare with FASTCM_VERSION_STRING.
 * Threads: any. Blocks: no. Errors: none. */
const char* fastcm_version(void) FASTCM_NOEXCEPT;

/* ---- the CM codes (fastcm/cm_enums.h) --------------------------------------------------------- */

typedef enum fastcm_rej_reason {
  FASTCM_REJ_NO_QP = 1,
  FASTCM_REJ_NO_EEC = 2,
  FASTCM_REJ_NO_RESOURCES = 3,
  FASTCM_REJ_TIMEOUT = 4,
  FASTCM_REJ_UNSUPPORTED_REQ = 5,
  FASTCM_REJ_INVALID_COMM_ID = 6,
  FASTCM_REJ_INVALID_COMM_INSTANCE = 7,
  FASTCM_REJ_INVALID_SERVICE_ID = 8,
  FASTCM_REJ_INVALID_TRANSPORT_TYPE = 9,
  FASTCM_REJ_STALE_CONN = 10,
  FASTCM_REJ_RDC_NOT_EXIST = 11,
  FASTCM_REJ_INVALID_GID = 12,
  FASTCM_REJ_INVALID_LID = 13,
  FASTCM_REJ_INVALID_SL = 14,
  FASTCM_REJ_INVALID_TRAFFIC_CLASS = 15,
  FASTCM_REJ_INVALID_HOP_LIMIT = 16,
  FASTCM_REJ_INVALID_PACKET_RATE = 17,
  FASTCM_REJ_INVALID_ALT_GID = 18,
  FASTCM_REJ_INVALID_ALT_LID = 19,
  FASTCM_REJ_INVALID_ALT_SL = 20,
  FASTCM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
  FASTCM_REJ_INVALID_ALT_HOP_LIMIT = 22,
  FASTCM_REJ_INVALID_ALT_PACKET_RATE = 23,
  FASTCM_REJ_PORT_CM_REDIRECT = 24,
  FASTCM_REJ_PORT_REDIRECT = 25,
  FASTCM_REJ_INVALID_MTU = 26,
  FASTCM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
  FASTCM_REJ_CONSUMER_REJECT = 28,
  FASTCM_REJ_INVALID_RNR_RETRY = 29,
  FASTCM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
  FASTCM_REJ_INVALID_CLASS_VERSION = 31,
  FASTCM_REJ_INVALID_FLOW_LABEL = 32,
  FASTCM_REJ_INVALID_ALT_FLOW_LABEL = 33,
  FASTCM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35
} fastcm_rej_reason;

typedef enum fastcm_message_kind {
  FASTCM_MESSAGE_REQ = 0,
  FASTCM_MESSAGE_REP = 1,
  FASTCM_MESSAGE_LAP_OR_NONE = 2
} fastcm_message_kind;

typedef enum fastcm_apr_status {
  FASTCM_APR_SUCCESS = 0,
  FASTCM_APR_INVALID_COMM_ID = 1,
  FASTCM_APR_UNSUPPORTED = 2,
  FASTCM_APR_REJECTED = 3,
  FASTCM_APR_REDIRECT = 4,
  FASTCM_APR_IS_CURRENT = 5,
  FASTCM_APR_INVALID_QPN_EECN = 6,
  FASTCM_APR_INVALID_LID = 7,
  FASTCM_APR_INVALID_GID = 8,
  FASTCM_APR_INVALID_FLOW_LABEL = 9,
  FASTCM_APR_INVALID_TRAFFIC_CLASS = 10,
  FASTCM_APR_INVALID_HOP_LIMIT = 11,
  FASTCM_APR_INVALID_PACKET_RATE = 12,
  FASTCM_APR_INVALID_SL = 13
} fastcm_apr_status;

typedef enum fastcm_sidr_status {
  FASTCM_SIDR_SUCCESS = 0,
  FASTCM_SIDR_SERVICE_ID_UNSUPPORTED = 1,
  FASTCM_SIDR_REJECTED = 2,
  FASTCM_SIDR_NO_QP = 3,
  FASTCM_SIDR_REDIRECT = 4,
  FASTCM_SIDR_CLASS_VERSION_UNSUPPORTED = 5
} fastcm_sidr_status;

/* The CM messages as counter indexes (fastcm_port_counters.messages). */
typedef enum fastcm_cm_message {
  FASTCM_CM_CLASS_PORT_INFO = 0,
  FASTCM_CM_REQ,
  FASTCM_CM_MRA,
  FASTCM_CM_REJ,
  FASTCM_CM_REP,
  FASTCM_CM_RTU,
  FASTCM_CM_DREQ,
  FASTCM_CM_DREP,
  FASTCM_CM_SIDR_REQ,
  FASTCM_CM_SIDR_REP,
  FASTCM_CM_LAP,
  FASTCM_CM_APR,
  FASTCM_CM_MESSAGE_COUNT
} fastcm_cm_message;

typedef enum fastcm_cep_state {
  FASTCM_CEP_IDLE = 0,
  FASTCM_CEP_REQ_SENT,
  FASTCM_CEP_REQ_RCVD,
  FASTCM_CEP_MRA_REQ_SENT,
  FASTCM_CEP_MRA_REQ_RCVD,
  FASTCM_CEP_REP_SENT,
  FASTCM_CEP_REP_RCVD,
  FASTCM_CEP_MRA_REP_SENT,
  FASTCM_CEP_MRA_REP_RCVD,
  FASTCM_CEP_ESTABLISHED,
  FASTCM_CEP_DREQ_SENT,
  FASTCM_CEP_DREQ_RCVD,
  FASTCM_CEP_TIMEWAIT,
  FASTCM_CEP_SIDR_REQ_SENT,
  FASTCM_CEP_SIDR_REQ_RCVD
} fastcm_cep_state;

typedef enum fastcm_event_type {
  FASTCM_EVENT_REQ_RECEIVED = 0,
  FASTCM_EVENT_REQ_ERROR,          /* REQ retries ran out */
  FASTCM_EVENT_REP_RECEIVED,
  FASTCM_EVENT_REP_ERROR,          /* REP retries ran out */
  FASTCM_EVENT_RTU_RECEIVED,       /* passive side established */
  FASTCM_EVENT_USER_ESTABLISHED,   /* fastcm_establish on the passive side */
  FASTCM_EVENT_REJ_RECEIVED,
  FASTCM_EVENT_MRA_RECEIVED,
  FASTCM_EVENT_DREQ_RECEIVED,
  FASTCM_EVENT_DREQ_ERROR,         /* DREQ retries ran out; time-wait anyway */
  FASTCM_EVENT_DREP_RECEIVED,
  FASTCM_EVENT_TIMEWAIT_EXIT,      /* the endpoint is idle again */
  FASTCM_EVENT_LAP_RECEIVED,
  FASTCM_EVENT_LAP_ERROR,
  FASTCM_EVENT_APR_RECEIVED,
  FASTCM_EVENT_SIDR_REQ_RECEIVED,
  FASTCM_EVENT_SIDR_REQ_ERROR,     /* SIDR_REQ retries ran out */
  FASTCM_EVENT_SIDR_REP_RECEIVED,
  FASTCM_EVENT_CALL_FAILED         /* a posted call was refused by the endpoint's shard */
} fastcm_event_type;

/* The calls that may be posted (fastcm_engine_config.posted_calls), named in FASTCM_EVENT_CALL_FAILED. */
typedef enum fastcm_api_call {
  FASTCM_CALL_SET_CONTEXT = 0,
  FASTCM_CALL_SEND_REQ,
  FASTCM_CALL_SEND_REP,
  FASTCM_CALL_SEND_RTU,
  FASTCM_CALL_SEND_REJ,
  FASTCM_CALL_SEND_MRA,
  FASTCM_CALL_SEND_DREQ,
  FASTCM_CALL_SEND_DREP,
  FASTCM_CALL_SEND_LAP,
  FASTCM_CALL_SEND_APR,
  FASTCM_CALL_SEND_SIDR_REQ,
  FASTCM_CALL_SEND_SIDR_REP,
  FASTCM_CALL_ESTABLISH
} fastcm_api_call;

/* Names of the values above ("consumer_reject"), static storage; "unknown" for other values.
 * The drop reasons have no C enum: they are indexes 0 .. fastcm_drop_reason_count()-1 of
 * fastcm_port_counters.drops, named by fastcm_drop_reason_str (NULL beyond the count).
 * Threads: any. Blocks: no. Errors: none. */
const char* fastcm_rej_reason_str(int reason) FASTCM_NOEXCEPT;
const char* fastcm_message_kind_str(int kind) FASTCM_NOEXCEPT;
const char* fastcm_apr_status_str(int status) FASTCM_NOEXCEPT;
const char* fastcm_sidr_status_str(int status) FASTCM_NOEXCEPT;
const char* fastcm_cm_message_str(int message) FASTCM_NOEXCEPT;
const char* fastcm_cep_state_str(int state) FASTCM_NOEXCEPT;
const char* fastcm_event_type_str(int type) FASTCM_NOEXCEPT;
const char* fastcm_api_call_str(int call) FASTCM_NOEXCEPT;
size_t fastcm_drop_reason_count(void) FASTCM_NOEXCEPT;
const char* fastcm_drop_reason_str(size_t reason) FASTCM_NOEXCEPT;

/* ---- basic types ------------------------------------------------------------------------------- */

/* An endpoint or listen handle (fastcm::Id::raw): safe to keep after the endpoint is gone, calls
 * then answer FASTCM_ERR_STALE_ID. 0 names nothing. */
typedef uint64_t fastcm_id;

/* A 128-bit GID in wire order (byte 0 is the most significant byte of the subnet prefix). */
typedef struct fastcm_gid {
  uint8_t raw[16];
} fastcm_gid;

typedef enum fastcm_qp_type { FASTCM_QP_RC = 0, FASTCM_QP_UC = 1, FASTCM_QP_XRC = 2 } fastcm_qp_type;

typedef enum fastcm_link_layer {
  FASTCM_LINK_INFINIBAND = 0,
  FASTCM_LINK_ETHERNET = 1
} fastcm_link_layer;

/* One path seen from the local port, as a path record gives it (= fastcm::Path). */
typedef struct fastcm_path {
  uint16_t local_lid;
  uint16_t remote_lid;
  fastcm_gid local_gid;
  fastcm_gid remote_gid;
  uint32_t flow_label;        /* 20 bits */
  uint8_t traffic_class;
  uint8_t hop_limit;          /* > 1: the path leaves the subnet (GRH) */
  uint8_t sl;                 /* 4 bits */
  uint8_t mtu;                /* MTU code, 1 = 256 ... 5 = 4096 */
  uint8_t rate;               /* static rate code, 0 = port current */
  uint8_t packet_life_time;   /* exponent: 4.096 us * 2^t */
  uint8_t port;               /* local port number (1-based) */
  uint16_t pkey;
  bool subnet_local;
} fastcm_path;

/* A clock: now_ns(ctx) returns monotonic nanoseconds (any epoch) and is called from any thread at
 * any time; now_ns NULL means CLOCK_MONOTONIC. Copied by the calls that take one; ctx must stay
 * valid as long as the object created with it. */
typedef uint64_t (*fastcm_now_fn)(void* ctx);
typedef struct fastcm_clock {
  fastcm_now_fn now_ns;
  void* ctx;
} fastcm_clock;

/* ---- fabrics ----------------------------------------------------------------------------------- */

/* A transport: the ports of one HCA (fastcm::Fabric). Borrowed from its owner (a loopback fabric
 * here, or a C++ fastcm::Fabric wrapped with fastcm/fastcm_interop.h) and valid as long as it. */
typedef struct fastcm_fabric fastcm_fabric;

typedef struct fastcm_port_attr {
  uint8_t port_num;            /* 1-based */
  uint64_t node_guid;
  uint64_t port_guid;
  fastcm_gid gids[16];         /* [0, gid_count) are valid; 0 is the default GID */
  uint8_t gid_count;
  uint16_t lid;                /* base LID; 0 on Ethernet ports */
  uint8_t lmc;
  uint16_t sm_lid;
  uint16_t pkeys[32];          /* [0, pkey_count) are valid */
  uint8_t pkey_count;
  uint8_t active_mtu;          /* MTU code */
  uint8_t active_rate;         /* static rate code */
  fastcm_link_layer link_layer;
  uint8_t max_qp_rd_atom;
  uint8_t max_qp_init_rd_atom;
  uint8_t local_ca_ack_delay;
} fastcm_port_attr;

/* The fabric's ports, indexed from 0: their number, and one port's attributes into *out.
 * Threads: any. Blocks: no.
 * Errors: fastcm_fabric_port: FASTCM_ERR_INVALID_ARGUMENT (index >= fastcm_fabric_port_count). */
size_t fastcm_fabric_port_count(const fastcm_fabric* fabric) FASTCM_NOEXCEPT;
fastcm_status fastcm_fabric_port(const fastcm_fabric* fabric, size_t index, fastcm_port_attr* out) FASTCM_NOEXCEPT;

/* The in-process loopback fabric: simulated HCAs joined by a simulated switch. */
typedef struct fastcm_loopback fastcm_loopback;

typedef struct fastcm_loopback_config {
  uint16_t hcas;             /* 1.. */
  uint8_t ports_per_hca;     /* 1..15; port p of HCA h gets LID h * 16 + p */
  uint32_t rx_queue_depth;   /* MADs in flight to one port, at most (1 .. 2^20) */
  uint64_t fault_seed;
  /* Fault injection on every MAD, in percent (0..100), each decided on its own from fault_seed:
   * lost; delivered twice; held back up to 1 ms so that later MADs overtake it. */
  double loss_pct;
  double dup_pct;
  double reorder_pct;
} fastcm_loopback_config;

/* Defaults: 2 HCAs of 1 port, queue depth 2048, seed 1, no faults.
 * Threads: any. Blocks: no. Errors: none. */
void fastcm_loopback_config_init(fastcm_loopback_config* config) FASTCM_NOEXCEPT;
/* Creates the fabric; clock (NULL: CLOCK_MONOTONIC) times its injected delays.
 * Threads: any. Blocks: while it allocates its rings.
 * Errors: FASTCM_ERR_INVALID_ARGUMENT (a count, depth or percentage out of range),
 *         FASTCM_ERR_NO_RESOURCES (no eventfd or ring). */
fastcm_status fastcm_loopback_create(const fastcm_loopback_config* config, const fastcm_clock* clock,
                                     fastcm_loopback** out) FASTCM_NOEXCEPT;
/* Frees it. NULL does nothing.
 * Threads: any, once every engine on its HCAs is destroyed. Blocks: no. Errors: none. */
void fastcm_loopback_destroy(fastcm_loopback* loopback) FASTCM_NOEXCEPT;
/* The number of simulated HCAs. Threads: any. Blocks: no. Errors: none. */
size_t fastcm_loopback_hca_count(const fastcm_loopback* loopback) FASTCM_NOEXCEPT;
/* HCA `index` as a fabric, valid until fastcm_loopback_destroy; NULL for an index out of range.
 * Threads: any. Blocks: no. Errors: none. */
fastcm_fabric* fastcm_loopback_hca(fastcm_loopback* loopback, size_t index) FASTCM_NOEXCEPT;
/* The path a subnet manager would give from port `from` to port `to` (the loopback has no SA):
 * both LIDs and first GIDs, the smaller MTU, the sender's rate, P_Key 0xffff, SL 0.
 * Threads: any (pure). Blocks: no. Errors: none. */
void fastcm_loopback_path_record(const fastcm_port_attr* from, const fastcm_port_attr* to,
                                 uint8_t packet_life_time, fastcm_path* out) FASTCM_NOEXCEPT;

/* ---- engines ----------------------------------------------------------------------------------- */

typedef struct fastcm_engine fastcm_engine;
typedef struct fastcm_event_queue fastcm_event_queue;
/* A received MAD kept alive by a reference count (fastcm_retain / fastcm_release). */
typedef struct fastcm_mad fastcm_mad;

typedef enum fastcm_threading {
  FASTCM_THREADING_WORKERS = 0, /* a thread per shard, which also polls its ports */
  FASTCM_THREADING_CALLER = 1   /* everything inside fastcm_progress */
} fastcm_threading;

typedef enum fastcm_eal_owner {
  FASTCM_EAL_ENGINE = 0,        /* the engine starts DPDK's EAL (once per process; its 64 MiB heap
                                   holds about 120,000 MAD buffers in all: fastcm::EalOwner) */
  FASTCM_EAL_APPLICATION = 1    /* the application called rte_eal_init before */
} fastcm_eal_owner;

/* = fastcm::EngineConfig. */
typedef struct fastcm_engine_config {
  uint32_t shards;              /* 1..64 */
  fastcm_threading threading;
  fastcm_eal_owner eal;
  uint32_t shard_inbox;         /* received MADs queued per shard, at most */
  uint32_t max_endpoints;       /* endpoints of all shards, time-wait included */
  uint32_t max_listens;
  uint32_t mad_buffers;         /* pooled MADs */
  double auto_mra_fraction;     /* of the peer's CM response timeout; 0 disables automatic MRAs */
  uint8_t mra_service_timeout;  /* exponent sent in automatic and backlog MRAs */
  uint32_t idle_spins;          /* empty polls before a worker sleeps (default 0: at once) */
  uint32_t half_open_per_source; /* unsettled handshakes a REQ opened, per source (LID, or GID) */
  uint32_t half_open_per_listen; /* the same, per listen */
  uint32_t posted_calls;        /* calls queued to shards without waiting, at most; 0: calls wait */
} fastcm_engine_config;

/* The C++ defaults (1 shard, workers, engine-owned EAL, 65536 endpoints, ...).
 * Threads: any. Blocks: no. Errors: none. */
void fastcm_engine_config_init(fastcm_engine_config* config) FASTCM_NOEXCEPT;

/* Creates an engine over the fabric's ports; the fabric must outlive it. clock (NULL:
 * CLOCK_MONOTONIC) drives every protocol timer.
 * Threads: any. Blocks: while it allocates its tables and, the first time, while EAL starts.
 * Errors: FASTCM_ERR_CREATE_FAILED (a configuration value out of range, EAL failed to start, or
 *         FASTCM_EAL_APPLICATION without an EAL). */
fastcm_status fastcm_engine_create(fastcm_fabric* fabric, const fastcm_clock* clock,
                                   const fastcm_engine_config* config, fastcm_engine** out) FASTCM_NOEXCEPT;
/* Stops the workers and frees the engine, its event queues and every pending event: no callback
 * runs once it returns. NULL does nothing.
 * Threads: any but a callback's, once no other call on the engine is in progress.
 * Blocks: until the workers have stopped. Errors: none. */
void fastcm_engine_destroy(fastcm_engine* engine) FASTCM_NOEXCEPT;

/* FASTCM_THREADING_CALLER: runs every shard's batch once on the calling thread, as its worker
 * would (its ports polled first; a MAD for a shard whose batch already ran waits for the next
 * call); returns how much it did (0: idle). FASTCM_THREADING_WORKERS: returns 0.
 * Threads: one at a time (caller threading). Blocks: no; callbacks run inside it. Errors: none. */
size_t fastcm_progress(fastcm_engine* engine) FASTCM_NOEXCEPT;
/* The clock time of the earliest pending protocol timer in *out and true, or false (and *out
 * untouched) when none is armed: an idle reactor may sleep until then. With
 * FASTCM_THREADING_WORKERS always false: the workers keep their own time.
 * Threads: the fastcm_progress thread. Blocks: no. Errors: none. */
bool fastcm_next_timer_ns(const fastcm_engine* engine, uint64_t* out) FASTCM_NOEXCEPT;

/* ---- events ------------------------------------------------------------------------------------ */

typedef struct fastcm_req_received {
  fastcm_id listen_id;
  uint64_t service_id;
  uint64_t remote_ca_guid;
  uint32_t remote_qpn;
  uint32_t remote_qkey;
  fastcm_qp_type qp_type;
  uint32_t starting_psn;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t remote_cm_response_timeout;
  uint8_t local_cm_response_timeout;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint8_t max_cm_retries;
  bool flow_control;
  bool srq;
  uint32_t ece_vendor_id;
  fastcm_path primary;          /* turned around: "local" is this side */
  bool has_alternate;
  fastcm_path alternate;
} fastcm_req_received;

typedef struct fastcm_rep_received {
  uint64_t remote_ca_guid;
  uint32_t remote_qpn;
  uint32_t remote_qkey;
  uint32_t starting_psn;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t target_ack_delay;
  uint8_t failover_accepted;
  uint8_t rnr_retry_count;
  bool flow_control;
  bool srq;
  uint32_t ece_vendor_id;
} fastcm_rep_received;

typedef struct fastcm_rej_received {
  uint16_t reason;              /* fastcm_rej_reason */
  uint8_t message_rejected;     /* fastcm_message_kind */
  const uint8_t* ari;           /* ari_len bytes in the MAD */
  size_t ari_len;
} fastcm_rej_received;

typedef struct fastcm_mra_received {
  uint8_t service_timeout;
} fastcm_mra_received;

typedef struct fastcm_lap_received {
  fastcm_path alternate;        /* turned around */
} fastcm_lap_received;

typedef struct fastcm_apr_received {
  uint8_t status;               /* fastcm_apr_status */
  const uint8_t* info;
  size_t info_len;
} fastcm_apr_received;

typedef struct fastcm_sidr_req_received {
  fastcm_id listen_id;
  uint64_t service_id;
  uint16_t pkey;
  uint8_t port;                 /* local port number it arrived on */
  uint16_t remote_lid;
  bool has_remote_gid;          /* the request carried a GRH */
  fastcm_gid remote_gid;
} fastcm_sidr_req_received;

typedef struct fastcm_sidr_rep_received {
  uint8_t status;               /* fastcm_sidr_status */
  uint32_t qpn;
  uint32_t qkey;
  uint32_t ece_vendor_id;
  const uint8_t* info;
  size_t info_len;
} fastcm_sidr_rep_received;

typedef struct fastcm_call_failed {
  uint8_t call;                 /* fastcm_api_call */
  uint8_t status;               /* fastcm_status the call would have returned */
} fastcm_call_failed;

/* One CM event. Every pointer in it points into the received MAD (`mad`; NULL for timeouts): a
 * callback's event is valid until the callback returns (fastcm_retain keeps it until
 * fastcm_release); a polled event until fastcm_release. The union member named by `type` is set:
 * req (REQ_RECEIVED), rep (REP_RECEIVED), rej, mra, lap, apr, sidr_req, sidr_rep, call_failed
 * (CALL_FAILED); other types carry no parameters. */
typedef struct fastcm_event {
  fastcm_event_type type;
  fastcm_id id;                 /* the endpoint the event is about */
  void* context;                /* the endpoint's (for new REQs and SIDR_REQs: the listen's) */
  const uint8_t* private_data;  /* full wire length */
  size_t private_data_len;
  const fastcm_mad* mad;
  union {
    fastcm_req_received req;
    fastcm_rep_received rep;
    fastcm_rej_received rej;
    fastcm_mra_received mra;
    fastcm_lap_received lap;
    fastcm_apr_received apr;
    fastcm_sidr_req_received sidr_req;
    fastcm_sidr_rep_received sidr_rep;
    fastcm_call_failed call_failed;
  } u;
} fastcm_event;

/* Callback delivery: runs on the thread that owns the endpoint; calls made inside it run inline. */
typedef void (*fastcm_event_fn)(const fastcm_event* event, void* handler_context);

/* Where an endpoint's events go: handler (with handler_context) or queue, exactly one. */
typedef struct fastcm_delivery {
  fastcm_event_fn handler;
  void* handler_context;
  fastcm_event_queue* queue;
} fastcm_delivery;

/* A bounded queue for poll delivery (capacity 1..2^20 events), owned by the engine until
 * fastcm_engine_destroy.
 * Threads: any. Blocks: while it allocates.
 * Errors: FASTCM_ERR_INVALID_ARGUMENT (capacity out of range). */
fastcm_status fastcm_create_event_queue(fastcm_engine* engine, uint32_t capacity,
                                        fastcm_event_queue** out) FASTCM_NOEXCEPT;
/* An eventfd readable while the queue holds events, for poll and epoll loops; owned by the queue:
 * never close it, and never read it (fastcm_poll reads it when it finds the queue empty; a read
 * of the application's own would take the wake-up fastcm_poll waits to clear). Threads: any.
 * Blocks: no. Errors: none. */
int fastcm_event_queue_fd(const fastcm_event_queue* queue) FASTCM_NOEXCEPT;
/* Events waiting (a snapshot). Threads: any. Blocks: no. Errors: none. */
size_t fastcm_event_queue_size(const fastcm_event_queue* queue) FASTCM_NOEXCEPT;
/* Takes up to `max` events into events[0..n) and returns n; each must be given back with
 * fastcm_release. Threads: any, one at a time per queue. Blocks: no. Errors: none. */
size_t fastcm_poll(fastcm_engine* engine, fastcm_event_queue* queue, fastcm_event* events,
                   size_t max) FASTCM_NOEXCEPT;
/* Keeps a callback event's MAD alive after the callback returns (no-op for mad == NULL).
 * Threads: the callback's, during the callback. Blocks: no. Errors: none. */
void fastcm_retain(fastcm_engine* engine, const fastcm_event* event) FASTCM_NOEXCEPT;
/* Gives back a polled or retained event's MAD (no-op for mad == NULL), exactly once.
 * Threads: any. Blocks: no. Errors: none. */
void fastcm_release(fastcm_engine* engine, const fastcm_event* event) FASTCM_NOEXCEPT;
/* A call batch (fastcm/engine.h, Engine::begin_call_batch): the posted calls this thread makes
 * until the matching fastcm_end_call_batch reach their shards together, one queue update per
 * shard; a destroy or a call that waits first sends what is held, so each shard keeps the
 * thread's order. Batches nest; one engine's at a time per thread; end on the thread that began.
 * No effect without posted_calls. Threads: any. Blocks: fastcm_end_call_batch, while a shard's
 * queue is full. Errors: none. */
void fastcm_begin_call_batch(fastcm_engine* engine) FASTCM_NOEXCEPT;
void fastcm_end_call_batch(fastcm_engine* engine) FASTCM_NOEXCEPT;

/* ---- listens and endpoints --------------------------------------------------------------------- */

typedef enum fastcm_backlog_policy {
  FASTCM_BACKLOG_DROP = 0,    /* drop the REQ; the peer retries */
  FASTCM_BACKLOG_REJECT = 1,  /* REJ "no resources" */
  FASTCM_BACKLOG_MRA = 2      /* MRA it and keep it outside the backlog */
} fastcm_backlog_policy;

typedef struct fastcm_listen_params {
  uint64_t service_id;
  uint64_t service_mask;      /* bits that must match */
  uint8_t port;               /* local port number, 0 = every port */
  uint32_t backlog;           /* REQs received and not yet answered, at most */
  fastcm_backlog_policy backlog_policy;
  fastcm_delivery delivery;
  void* context;              /* fastcm_event.context of its REQ and SIDR_REQ events */
} fastcm_listen_params;

/* Defaults: mask all ones, every port, backlog 1024, REJ when full, no delivery.
 * Threads: any. Blocks: no. Errors: none. */
void fastcm_listen_params_init(fastcm_listen_params* params) FASTCM_NOEXCEPT;
/* Listens for REQs and SIDR_REQs whose service ID matches under the mask; *out names the listen.
 * Threads: any; from a callback too. Blocks: on the listen table's lock, held by other listen and
 *   destroy calls only (shards read the table without it).
 * Errors: FASTCM_ERR_INVALID_ARGUMENT (bad port, no delivery), FASTCM_ERR_SERVICE_IN_USE (the same
 *         service ID and mask on that port), FASTCM_ERR_NO_RESOURCES (max_listens reached). */
fastcm_status fastcm_listen(fastcm_engine* engine, const fastcm_listen_params* params,
                            fastcm_id* out) FASTCM_NOEXCEPT;
/* A new idle endpoint for the active side; context is its events' fastcm_event.context. From a
 * callback it lives on the callback's shard; otherwise shards take turns.
 * Threads: any; from a callback too. Blocks: hand-off to the new endpoint's shard; with
 *   posted_calls, no, while a shard has a spare endpoint (fastcm/engine.h, "Posted calls").
 * Errors: FASTCM_ERR_NO_RESOURCES (the shard's endpoint table is full),
 *         FASTCM_ERR_INVALID_ARGUMENT (no delivery). */
fastcm_status fastcm_create_id(fastcm_engine* engine, const fastcm_delivery* delivery,
                               void* context, fastcm_id* out) FASTCM_NOEXCEPT;
/* fastcm_create_id for an endpoint whose REQ (or SIDR_REQ) will leave from local port `port` (the
 * primary path's port): it lives on the shard whose worker polls that port, so the peer's answers
 * do not cross to another shard. A preference, never a wait the caller could not otherwise make
 * (fastcm/engine.h, Engine::create_id_for_port).
 * Threads, Blocks: as fastcm_create_id.
 * Errors: as fastcm_create_id, and FASTCM_ERR_INVALID_ARGUMENT for a port the fabric does not
 *         have. */
fastcm_status fastcm_create_id_for_port(fastcm_engine* engine, const fastcm_delivery* delivery,
                                        void* context, uint8_t port, fastcm_id* out) FASTCM_NOEXCEPT;
/* Replaces the endpoint's context for the events that follow.
 * Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard, or posted.
 * Errors: FASTCM_ERR_STALE_ID, FASTCM_ERR_WOULD_DEADLOCK. */
fastcm_status fastcm_set_context(fastcm_engine* engine, fastcm_id id, void* context) FASTCM_NOEXCEPT;

/* ---- sends (parameters = fastcm/params.h) -------------------------------------------------------
 * Private data shorter than the message's field is sent zero-padded. */

#define FASTCM_MAX_REQ_PRIVATE_DATA 92
#define FASTCM_MAX_MRA_PRIVATE_DATA 222
#define FASTCM_MAX_REJ_PRIVATE_DATA 148
#define FASTCM_MAX_REP_PRIVATE_DATA 196
#define FASTCM_MAX_RTU_PRIVATE_DATA 224
#define FASTCM_MAX_DREQ_PRIVATE_DATA 220
#define FASTCM_MAX_DREP_PRIVATE_DATA 224
#define FASTCM_MAX_SIDR_REQ_PRIVATE_DATA 216
#define FASTCM_MAX_SIDR_REP_PRIVATE_DATA 136
#define FASTCM_MAX_LAP_PRIVATE_DATA 168
#define FASTCM_MAX_APR_PRIVATE_DATA 148
#define FASTCM_MAX_ADDITIONAL_INFO 72

typedef struct fastcm_req_params {
  uint64_t service_id;
  fastcm_path primary;
  bool has_alternate;
  fastcm_path alternate;
  uint32_t qpn;
  fastcm_qp_type qp_type;
  uint32_t starting_psn;              /* 24 bits */
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t remote_cm_response_timeout; /* exponent */
  uint8_t local_cm_response_timeout;  /* exponent */
  uint8_t retry_count;                /* 3 bits */
  uint8_t rnr_retry_count;            /* 3 bits */
  uint8_t max_cm_retries;             /* 4 bits */
  bool flow_control;
  bool srq;
  uint32_t ece_vendor_id;             /* 24 bits */
  const uint8_t* private_data;
  size_t private_data_len;
} fastcm_req_params;

/* fastcm_rep_params.target_ack_delay: send the local CA's ACK delay (the C++ API's unset value). */
#define FASTCM_ACK_DELAY_FROM_CA 0xFFu

typedef struct fastcm_rep_params {
  uint32_t qpn;
  uint32_t starting_psn;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t target_ack_delay;           /* exponent 0..31, or FASTCM_ACK_DELAY_FROM_CA (the default) */
  uint8_t failover_accepted;          /* 0 accepted, 1 unsupported, 2 rejected */
  uint8_t rnr_retry_count;
  bool flow_control;
  bool srq;
  uint32_t ece_vendor_id;
  const uint8_t* private_data;
  size_t private_data_len;
} fastcm_rep_params;

typedef struct fastcm_rej_params {
  uint16_t reason;                    /* fastcm_rej_reason */
  const uint8_t* ari;
  size_t ari_len;
  const uint8_t* private_data;
  size_t private_data_len;
} fastcm_rej_params;

typedef struct fastcm_mra_params {
  uint8_t service_timeout;            /* exponent */
  const uint8_t* private_data;
  size_t private_data_len;
} fastcm_mra_params;

typedef struct fastcm_lap_params {
  fastcm_path alternate;
  uint8_t remote_cm_response_timeout;
  const uint8_t* private_data;
  size_t private_data_len;
} fastcm_lap_params;

typedef struct fastcm_apr_params {
  uint8_t status;                     /* fastcm_apr_status */
  const uint8_t* info;
  size_t info_len;
  const uint8_t* private_data;
  size_t private_data_len;
} fastcm_apr_params;

typedef struct fastcm_sidr_req_params {
  uint64_t service_id;
  fastcm_path path;
  uint8_t timeout;                    /* exponent of the wait for the SIDR_REP */
  uint8_t max_retries;
  const uint8_t* private_data;
  size_t private_data_len;
} fastcm_sidr_req_params;

typedef struct fastcm_sidr_rep_params {
  uint8_t status;                     /* fastcm_sidr_status */
  uint32_t qpn;
  uint32_t qkey;
  uint32_t ece_vendor_id;
  const uint8_t* info;
  size_t info_len;
  const uint8_t* private_data;
  size_t private_data_len;
} fastcm_sidr_rep_params;

/* The C++ defaults of each parameter struct (see fastcm/params.h).
 * Threads: any. Blocks: no. Errors: none. */
void fastcm_path_init(fastcm_path* path) FASTCM_NOEXCEPT;
void fastcm_req_params_init(fastcm_req_params* params) FASTCM_NOEXCEPT;
void fastcm_rep_params_init(fastcm_rep_params* params) FASTCM_NOEXCEPT;
void fastcm_rej_params_init(fastcm_rej_params* params) FASTCM_NOEXCEPT;
void fastcm_mra_params_init(fastcm_mra_params* params) FASTCM_NOEXCEPT;
void fastcm_lap_params_init(fastcm_lap_params* params) FASTCM_NOEXCEPT;
void fastcm_apr_params_init(fastcm_apr_params* params) FASTCM_NOEXCEPT;
void fastcm_sidr_req_params_init(fastcm_sidr_req_params* params) FASTCM_NOEXCEPT;
void fastcm_sidr_rep_params_init(fastcm_sidr_rep_params* params) FASTCM_NOEXCEPT;

/* Each sends its message on the endpoint, in the states the IBTA state machine allows it (the REQ
 * from idle, the REP in req_rcvd or mra_req_sent, ...), with its private data.
 * Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard, or posted.
 * Errors: FASTCM_ERR_STALE_ID, FASTCM_ERR_INVALID_STATE (not allowed in the endpoint's state),
 *         FASTCM_ERR_INVALID_ARGUMENT (a field or the private data out of range: at most the
 *         FASTCM_MAX_*_PRIVATE_DATA above), FASTCM_ERR_NO_RESOURCES (MAD pool empty),
 *         FASTCM_ERR_WOULD_DEADLOCK (from another shard's callback). Posted: STALE_ID,
 *         INVALID_ARGUMENT (private data, ARI or info too long) and WOULD_DEADLOCK returned, the
 *         rest as FASTCM_EVENT_CALL_FAILED. */
fastcm_status fastcm_send_req(fastcm_engine* engine, fastcm_id id, const fastcm_req_params* params) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_rep(fastcm_engine* engine, fastcm_id id, const fastcm_rep_params* params) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_rtu(fastcm_engine* engine, fastcm_id id, const uint8_t* private_data,
                              size_t private_data_len) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_rej(fastcm_engine* engine, fastcm_id id, const fastcm_rej_params* params) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_mra(fastcm_engine* engine, fastcm_id id, const fastcm_mra_params* params) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_dreq(fastcm_engine* engine, fastcm_id id, const uint8_t* private_data,
                               size_t private_data_len) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_drep(fastcm_engine* engine, fastcm_id id, const uint8_t* private_data,
                               size_t private_data_len) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_lap(fastcm_engine* engine, fastcm_id id, const fastcm_lap_params* params) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_apr(fastcm_engine* engine, fastcm_id id, const fastcm_apr_params* params) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_sidr_req(fastcm_engine* engine, fastcm_id id,
                                   const fastcm_sidr_req_params* params) FASTCM_NOEXCEPT;
fastcm_status fastcm_send_sidr_rep(fastcm_engine* engine, fastcm_id id,
                                   const fastcm_sidr_rep_params* params) FASTCM_NOEXCEPT;

/* Passive side: data arrived before the RTU; the endpoint becomes established.
 * Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard, or posted.
 * Errors: FASTCM_ERR_STALE_ID, FASTCM_ERR_INVALID_STATE (not rep_sent or mra_rep_rcvd),
 *         FASTCM_ERR_WOULD_DEADLOCK. */
fastcm_status fastcm_establish(fastcm_engine* engine, fastcm_id id) FASTCM_NOEXCEPT;

/* ---- QP attributes (= struct ibv_qp_attr, mask bits = enum ibv_qp_attr_mask) ------------------- */

typedef enum fastcm_qp_state {
  FASTCM_QPS_RESET = 0,
  FASTCM_QPS_INIT = 1,
  FASTCM_QPS_RTR = 2,
  FASTCM_QPS_RTS = 3
} fastcm_qp_state;

typedef enum fastcm_mig_state {
  FASTCM_MIG_MIGRATED = 0,
  FASTCM_MIG_REARM = 1,
  FASTCM_MIG_ARMED = 2
} fastcm_mig_state;

#define FASTCM_QP_STATE (1u << 0)
#define FASTCM_QP_ACCESS_FLAGS (1u << 3)
#define FASTCM_QP_PKEY_INDEX (1u << 4)
#define FASTCM_QP_PORT (1u << 5)
#define FASTCM_QP_QKEY (1u << 6)
#define FASTCM_QP_AV (1u << 7)
#define FASTCM_QP_PATH_MTU (1u << 8)
#define FASTCM_QP_TIMEOUT (1u << 9)
#define FASTCM_QP_RETRY_CNT (1u << 10)
#define FASTCM_QP_RNR_RETRY (1u << 11)
#define FASTCM_QP_RQ_PSN (1u << 12)
#define FASTCM_QP_MAX_QP_RD_ATOMIC (1u << 13)
#define FASTCM_QP_ALT_PATH (1u << 14)
#define FASTCM_QP_MIN_RNR_TIMER (1u << 15)
#define FASTCM_QP_SQ_PSN (1u << 16)
#define FASTCM_QP_MAX_DEST_RD_ATOMIC (1u << 17)
#define FASTCM_QP_PATH_MIG_STATE (1u << 18)
#define FASTCM_QP_DEST_QPN (1u << 20)

/* = enum ibv_access_flags */
#define FASTCM_ACCESS_LOCAL_WRITE (1u << 0)
#define FASTCM_ACCESS_REMOTE_WRITE (1u << 1)
#define FASTCM_ACCESS_REMOTE_READ (1u << 2)
#define FASTCM_ACCESS_REMOTE_ATOMIC (1u << 3)

typedef struct fastcm_ah_attr {
  fastcm_gid dgid;
  uint32_t flow_label;
  uint8_t sgid_index;
  uint8_t hop_limit;
  uint8_t traffic_class;
  uint16_t dlid;
  uint8_t sl;
  uint8_t src_path_bits;
  uint8_t static_rate;
  bool is_global;
  uint8_t port_num;
} fastcm_ah_attr;

typedef struct fastcm_qp_attr {
  uint32_t mask;               /* FASTCM_QP_* bits of the fields set */
  fastcm_qp_state qp_state;
  uint8_t path_mtu;
  fastcm_mig_state path_mig_state;
  uint32_t qkey;
  uint32_t rq_psn;
  uint32_t sq_psn;
  uint32_t dest_qp_num;
  uint32_t qp_access_flags;
  fastcm_ah_attr ah_attr;
  fastcm_ah_attr alt_ah_attr;
  uint16_t pkey_index;
  uint16_t alt_pkey_index;
  uint8_t max_rd_atomic;
  uint8_t max_dest_rd_atomic;
  uint8_t min_rnr_timer;
  uint8_t port_num;
  uint8_t timeout;
  uint8_t retry_cnt;
  uint8_t rnr_retry;
  uint8_t alt_port_num;
  uint8_t alt_timeout;
} fastcm_qp_attr;

/* Attributes for moving the endpoint's QP to `state`, capped to the CA's limits: INIT once the
 * endpoint has a path, RTR and RTS once the REP is in (active side) or out (passive side, whose
 * receive PSN is the REP's starting_psn).
 * Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard.
 * Errors: FASTCM_ERR_STALE_ID, FASTCM_ERR_INVALID_STATE (the connection is not far enough for
 *         `state`), FASTCM_ERR_INVALID_ARGUMENT (a state other than INIT, RTR, RTS),
 *         FASTCM_ERR_WOULD_DEADLOCK. */
fastcm_status fastcm_init_qp_attr(const fastcm_engine* engine, fastcm_id id, fastcm_qp_state state,
                                  fastcm_qp_attr* out) FASTCM_NOEXCEPT;

/* ---- what an endpoint knows -------------------------------------------------------------------- */

/* The last private data received (full wire length) in *data / *len, valid until the next event
 * for the endpoint or its destruction; length 0 when nothing was received.
 * Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard.
 * Errors: FASTCM_ERR_STALE_ID, FASTCM_ERR_WOULD_DEADLOCK. */
fastcm_status fastcm_last_private_data(const fastcm_engine* engine, fastcm_id id,
                                       const uint8_t** data, size_t* len) FASTCM_NOEXCEPT;

/* = fastcm::ConnectionInfo */
typedef struct fastcm_connection_info {
  fastcm_cep_state state;
  bool active;                 /* this side sent the REQ */
  uint32_t local_comm_id;
  uint32_t remote_comm_id;
  uint64_t remote_ca_guid;
  uint64_t service_id;
  uint32_t local_qpn;
  uint32_t remote_qpn;
  fastcm_qp_type qp_type;
  uint8_t port;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint8_t max_cm_retries;
  uint8_t remote_cm_response_timeout; /* exponent: how long the peer may take to answer */
  uint8_t local_cm_response_timeout;  /* exponent: how long this side may take */
  uint8_t mtu;
  uint32_t local_psn;
  uint32_t remote_psn;
  bool flow_control;
  bool srq;
  uint32_t ece_vendor_id;
  fastcm_path primary;
  bool has_alternate;
  fastcm_path alternate;
} fastcm_connection_info;

/* The parameters negotiated so far.
 * Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard.
 * Errors: FASTCM_ERR_STALE_ID, FASTCM_ERR_WOULD_DEADLOCK. */
fastcm_status fastcm_connection_info_get(const fastcm_engine* engine, fastcm_id id,
                                         fastcm_connection_info* out) FASTCM_NOEXCEPT;

/* ---- destroy ----------------------------------------------------------------------------------- */

typedef void (*fastcm_destroyed_fn)(void* ctx);
/* Destroys the endpoint or listen (REJ before establishment, DREQ when established, then
 * time-wait). Returns at once; no callback for `id` starts afterwards and poll returns no event
 * for it; on_destroyed(ctx) (may be NULL) runs exactly once after any callback in flight has
 * returned.
 * Threads: any; from a callback too, for any shard's endpoint. Blocks: no.
 * Errors: FASTCM_ERR_STALE_ID. */
fastcm_status fastcm_destroy(fastcm_engine* engine, fastcm_id id, fastcm_destroyed_fn on_destroyed,
                             void* ctx) FASTCM_NOEXCEPT;
/* fastcm_destroy that returns only once on_destroyed would have run.
 * Threads: any but a callback's. Blocks: for the shards' grace period (every callback in flight
 *   for the endpoint has returned).
 * Errors: FASTCM_ERR_STALE_ID, FASTCM_ERR_WOULD_DEADLOCK (from a callback; nothing destroyed). */
fastcm_status fastcm_destroy_sync(fastcm_engine* engine, fastcm_id id) FASTCM_NOEXCEPT;

/* ---- observability ----------------------------------------------------------------------------- */

#define FASTCM_MAX_DROP_REASONS 32

typedef struct fastcm_message_counters {
  uint64_t sent;
  uint64_t received;
  uint64_t retried;            /* retransmissions we sent */
  uint64_t duplicate;          /* retransmissions we received */
  uint64_t timed_out;          /* sent, and every retransmission went unanswered */
} fastcm_message_counters;

typedef struct fastcm_port_counters {
  fastcm_message_counters messages[FASTCM_CM_MESSAGE_COUNT]; /* by fastcm_cm_message */
  uint64_t drops[FASTCM_MAX_DROP_REASONS];  /* by drop reason; zero from fastcm_drop_reason_count */
} fastcm_port_counters;

/* Per-port counters summed over the shards into out[port_num] (1-based; out[0] and ports without
 * an entry stay zero): pass count = highest port number + 1.
 * Threads: any; the shards go on counting (each counter is read whole, not all at one instant).
 * Blocks: no. Errors: FASTCM_ERR_INVALID_ARGUMENT (out NULL with count > 0). */
fastcm_status fastcm_counters(const fastcm_engine* engine, fastcm_port_counters* out, size_t count) FASTCM_NOEXCEPT;
/* One shard's part, as fastcm_counters (all zero for a shard beyond the engine's).
 * Threads: any. Blocks: no. Errors: FASTCM_ERR_INVALID_ARGUMENT (out NULL with count > 0). */
fastcm_status fastcm_shard_counters(const fastcm_engine* engine, uint32_t shard,
                                    fastcm_port_counters* out, size_t count) FASTCM_NOEXCEPT;
/* Pooled MADs taken right now; 0 once no endpoint is live and no event holds a MAD.
 * Threads: any. Blocks: no. Errors: none. */
uint32_t fastcm_mad_buffers_in_use(const fastcm_engine* engine) FASTCM_NOEXCEPT;

/* ---- metrics (fastcm/metrics.h) ---------------------------------------------------------------- */

typedef enum fastcm_metrics_format {
  FASTCM_METRICS_PROMETHEUS = 0, /* the Prometheus text exposition format */
  FASTCM_METRICS_JSON = 1
} fastcm_metrics_format;

/* The engine's counters and resource levels as metrics (the families are listed in
 * fastcm/metrics.h), `name` as the engine label (NULL or "": none). Writes at most `size` bytes
 * into buffer, NUL-terminated (buffer may be NULL with size 0), and returns the length of the
 * whole text without the NUL, as snprintf does: call again with a larger buffer when it is >= size.
 * Returns 0 when the text could not be made.
 * Threads: any. Blocks: while it allocates. Errors: none (0: no memory). */
size_t fastcm_metrics(const fastcm_engine* engine, const char* name, fastcm_metrics_format format, char* buffer,
                      size_t size) FASTCM_NOEXCEPT;

/* ---- logging (fastcm/log.h) -------------------------------------------------------------------- */

typedef enum fastcm_log_level {
  FASTCM_LOG_OFF = 0,
  FASTCM_LOG_ERROR = 1,
  FASTCM_LOG_WARNING = 2,
  FASTCM_LOG_NOTICE = 3,
  FASTCM_LOG_INFO = 4,
  FASTCM_LOG_DEBUG = 5 /* also every dropped MAD, with its reason */
} fastcm_log_level;

/* One message: len bytes of text (one line, no newline, not NUL-terminated), valid for the call.
 * Called from whichever thread logs, one call at a time; it must not call into fastcm. */
typedef void (*fastcm_log_fn)(void* ctx, fastcm_log_level level, const char* text, size_t len);

/* The process-wide sink (NULL write: stderr, the default). With FASTCM_EAL_ENGINE, DPDK's own log
 * goes there too. Once it returns, the old sink is never called again.
 * Threads: any but the sink's own. Blocks: while a message is being written. Errors: none. */
void fastcm_set_log_sink(fastcm_log_fn write, void* ctx) FASTCM_NOEXCEPT;
/* Messages at `level` and more severe are written (FASTCM_LOG_WARNING until set); the level now;
 * a level's name ("warning"; "unknown" for other values; static storage).
 * Threads: any. Blocks: no. Errors: none. */
void fastcm_set_log_level(fastcm_log_level level) FASTCM_NOEXCEPT;
fastcm_log_level fastcm_get_log_level(void) FASTCM_NOEXCEPT;
const char* fastcm_log_level_str(int level) FASTCM_NOEXCEPT;

/* ---- settings files (fastcm/settings.h; keys: configs/README.md) -------------------------------- */

typedef struct fastcm_settings fastcm_settings;

typedef enum fastcm_fabric_type {
  FASTCM_FABRIC_LOOPBACK = 0,
  FASTCM_FABRIC_UMAD = 1,
  FASTCM_FABRIC_UDP = 2
} fastcm_fabric_type;

/* Reads and checks an INI settings file into a new fastcm_settings (free it with
 * fastcm_settings_free). On FASTCM_ERR_INVALID_ARGUMENT (the file cannot be read, or a section,
 * key or value is refused) error[0..error_size) receives the reason, NUL-terminated and cut to
 * fit, naming the file, section and key ("demo.ini: [engine] shards: must be 1..64"); error may be
 * NULL. Needs no DPDK EAL.
 * Threads: any. Blocks: on the file system.
 * Errors: FASTCM_ERR_INVALID_ARGUMENT (unreadable file, or a refused section, key or value). */
fastcm_status fastcm_settings_load(const char* path, fastcm_settings** out, char* error,
                                   size_t error_size) FASTCM_NOEXCEPT;
/* Frees the settings and every string its getters returned. NULL does nothing.
 * Threads: any, once no getter runs on it. Blocks: no. Errors: none. */
void fastcm_settings_free(fastcm_settings* settings) FASTCM_NOEXCEPT;

/* The getters below read a loaded file (keys it left out have their defaults).
 * Threads: any. Blocks: no. Errors: none. */
/* [engine], [mra], [eal] into *out, every field. */
void fastcm_settings_engine_config(const fastcm_settings* settings, fastcm_engine_config* out) FASTCM_NOEXCEPT;
/* [listen]: backlog and backlog_policy of *out; its other fields are left as they are. */
void fastcm_settings_listen_params(const fastcm_settings* settings, fastcm_listen_params* out) FASTCM_NOEXCEPT;
/* [connect]: remote_cm_response_timeout, local_cm_response_timeout and max_cm_retries of *out. */
void fastcm_settings_req_params(const fastcm_settings* settings, fastcm_req_params* out) FASTCM_NOEXCEPT;
fastcm_log_level fastcm_settings_log_level(const fastcm_settings* settings) FASTCM_NOEXCEPT;
fastcm_fabric_type fastcm_settings_fabric_type(const fastcm_settings* settings) FASTCM_NOEXCEPT;
/* [loopback]: every field of *out. */
void fastcm_settings_loopback_config(const fastcm_settings* settings, fastcm_loopback_config* out) FASTCM_NOEXCEPT;
/* [umad]: the device ("" = the first with an active port) and up to `max` port numbers into
 * ports; returns how many the file names (0 = every active port). */
const char* fastcm_settings_umad_device(const fastcm_settings* settings) FASTCM_NOEXCEPT;
size_t fastcm_settings_umad_ports(const fastcm_settings* settings, uint8_t* ports, size_t max) FASTCM_NOEXCEPT;
/* [udp]: the addresses (NULL for an index out of range) and the UDP port. */
size_t fastcm_settings_udp_address_count(const fastcm_settings* settings) FASTCM_NOEXCEPT;
const char* fastcm_settings_udp_address(const fastcm_settings* settings, size_t index) FASTCM_NOEXCEPT;
uint16_t fastcm_settings_udp_port(const fastcm_settings* settings) FASTCM_NOEXCEPT;
/* [pcap] and [metrics]: "" when the file names none. Strings live as long as the settings. */
const char* fastcm_settings_pcap_file(const fastcm_settings* settings) FASTCM_NOEXCEPT;
uint64_t fastcm_settings_pcap_limit(const fastcm_settings* settings) FASTCM_NOEXCEPT;
const char* fastcm_settings_metrics_file(const fastcm_settings* settings) FASTCM_NOEXCEPT;
uint32_t fastcm_settings_metrics_interval_ms(const fastcm_settings* settings) FASTCM_NOEXCEPT;

/* ---- the fabric a settings file names (fastcm/opened_fabrics.h) -------------------------------- */

/* The fabrics engines are created on, opened from a settings file's [fabric] and [pcap]:
 *   loopback  one fabric per simulated HCA ([loopback] hcas), with the file's fault percentages
 *   umad      one fabric: the [umad] device's ports through rdma-core's libibumad
 *   udp       one fabric: a port per [udp] address (RoCEv2 GSI over UDP)
 * With a [pcap] file, fabric 0 records every CM MAD it sends and receives into that pcapng file. */
typedef struct fastcm_fabrics fastcm_fabrics;

typedef struct fastcm_capture_counters {
  uint64_t written;             /* MADs in the file */
  uint64_t dropped_queue_full;  /* not recorded: the writer was behind (the disk is slow) */
  uint64_t dropped_limit;       /* not recorded: the file had reached [pcap] limit */
  uint64_t write_errors;        /* lost to a failed write(2) (the file stays readable) */
} fastcm_capture_counters;

/* Opens them; clock (NULL: CLOCK_MONOTONIC; its ctx must outlive the result) times the
 * loopback's injected delays. On FASTCM_ERR_OPEN_FAILED (a loopback configuration out of range, no
 * such umad device or port, a port down, no permission, the kernel's ib_cm holding the CM class,
 * an address that is not local or a UDP port taken, a capture file that cannot be written)
 * error[0..error_size) receives the reason, NUL-terminated and cut to fit; error may be NULL.
 * Threads: any. Blocks: while devices, sockets and the capture file open.
 * Errors: FASTCM_ERR_OPEN_FAILED (the reasons above). */
fastcm_status fastcm_fabrics_open(const fastcm_settings* settings, const fastcm_clock* clock,
                                  fastcm_fabrics** out, char* error, size_t error_size) FASTCM_NOEXCEPT;
/* Closes them, first completing the capture. NULL does nothing.
 * Threads: any, once every engine on them is destroyed. Blocks: while the capture's last MADs are
 *   written. Errors: none. */
void fastcm_fabrics_close(fastcm_fabrics* fabrics) FASTCM_NOEXCEPT;
/* Loopback: the HCA count; umad and udp: 1. Threads: any. Blocks: no. Errors: none. */
size_t fastcm_fabrics_count(const fastcm_fabrics* fabrics) FASTCM_NOEXCEPT;
/* Fabric `index`, valid until fastcm_fabrics_close; NULL for an index out of range.
 * Threads: any. Blocks: no. Errors: none. */
fastcm_fabric* fastcm_fabrics_get(fastcm_fabrics* fabrics, size_t index) FASTCM_NOEXCEPT;
/* The capture's counters into *out and true; false (and *out untouched) without a [pcap] file.
 * Threads: any, while MADs flow (each counter a snapshot). Blocks: no. Errors: none. */
bool fastcm_fabrics_capture_counters(const fastcm_fabrics* fabrics, fastcm_capture_counters* out) FASTCM_NOEXCEPT;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* FASTCM_FASTCM_H */
