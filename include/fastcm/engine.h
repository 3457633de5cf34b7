// fastcm::Engine: the Communication Manager over one Fabric (the ports of one HCA, or several).
//
// The engine runs EngineConfig::shards protocol shards: each owns the endpoints whose
// IDs carry its shard bits, its timers and its indexes; received MADs are routed to their shard by
// their routing key. A REQ's passive endpoint is made by the shard whose worker received the REQ
// (where every worker polls a port; else by the shard its remote CA GUID and QPN hash to), so the
// MADs that follow it arrive where it lives; a REQ from a remote QP that another shard's endpoint
// is connected to (a copy that reached another port, a stale REQ) goes to that shard, so duplicate
// and stale detection see every shard. Two ways to run them (EngineConfig::threading):
//
// - Threading::workers: one worker thread per shard, started by create() and joined by the
//   destructor; port p is polled by the worker of shard p mod shards, which handles its own
//   shard's MADs and passes the others to their shard. progress() does nothing. Every call may be
//   made from any thread.
//   A call on an endpoint is executed by its shard and returns that shard's answer; from inside a
//   callback it runs inline when the endpoint belongs to the callback's shard (always true for the
//   endpoint the event is about) and returns Status::would_deadlock for another shard's endpoint,
//   except destroy(), which works from anywhere. Callbacks of one endpoint never overlap; those of
//   different shards run at the same time.
//   Posted calls (EngineConfig::posted_calls > 0): set_context, establish and the send_* calls
//   made outside the endpoint's shard (an application thread, another shard's callback) do not
//   wait for it. The call checks what the calling thread can see (the Id is live and attached,
//   the private data and info fit the message), copies its parameters, queues them to the shard
//   and returns ok; the shard runs the calls one thread queued in the order it queued them, and
//   before a destroy that thread called afterwards (a REJ with private data, then destroy, sends
//   that REJ). What the shard refuses (invalid_state, no_resources, a field out of range) arrives
//   as an EventType::call_failed event (CallFailed: the call and the status it would have
//   returned) on the endpoint's delivery, unless the endpoint was destroyed meanwhile (no event
//   follows a destroy). When posted_calls calls are queued already (a call's room comes back when
//   the shard has run it, at the end of the shard's burst of work), a call waits for its shard
//   instead ("hand-off"), with the same outcome: ok returned, a refusal as the event; from another
//   shard's callback, where it cannot wait, it returns would_deadlock. create_id outside a
//   callback takes one of the idle endpoints each shard keeps spare (up to 256, counted in
//   max_endpoints) without waiting, and waits for a shard only when none is left. The queries
//   (init_qp_attr, last_private_data, connection_info) always wait: their answer is the shard's.
// - Threading::caller: nothing runs unless the caller drives progress(), which runs every shard's
//   batch, its ports polled first, on the calling thread (an SPDK-style reactor, or a test with a
//   virtual clock).
//   Every call, and progress(), must come from one thread at a time; callbacks run inside
//   progress() or inside the API call that caused them, and calls made from them execute inline.
//
// Ownership: the Engine borrows the Fabric and the Clock; both must outlive it. Ids are values
// (see fastcm/id.h). Events borrow received MADs (see fastcm/event.h).
//
// Contract blocks: every call's comment ends with the same three items:
//   Threads: who may call it, and when ("any": concurrently with every other call).
//   Blocks:  "no", or what it waits for. "Hand-off": the call is executed by the endpoint's shard
//            and waits for it (bounded: a shard never waits for an application thread); inline from
//            that shard's own callbacks and under Threading::caller. "Posted": with
//            EngineConfig::posted_calls, queued to the shard without waiting (see above).
//   Errors:  the Status values it returns besides ok, or "none".
// A call that fails changes nothing and leaves its outputs untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "fastcm/clock.h"
#include "fastcm/connection_info.h"
#include "fastcm/counters.h"
#include "fastcm/event.h"
#include "fastcm/event_queue.h"
#include "fastcm/fabric.h"
#include "fastcm/id.h"
#include "fastcm/params.h"
#include "fastcm/qp_attr.h"
#include "fastcm/status.h"

namespace fastcm {

// Where an endpoint's events go: a callback, or an EventQueue drained by poll(). Exactly one.
struct Delivery {
  EventHandler handler = nullptr;
  void* handler_context = nullptr;
  EventQueue* queue = nullptr;

  // Exactly one of handler and queue is set.
  [[nodiscard]] constexpr bool valid() const noexcept { return (handler == nullptr) != (queue == nullptr); }
};

struct ListenParams {
  std::uint64_t service_id = 0;
  std::uint64_t service_mask = ~std::uint64_t{0};  // bits that must match
  std::uint8_t port = 0;                  // local port number, 0 = every port
  std::uint32_t backlog = 1024;           // REQs received and not yet answered, at most
  BacklogPolicy backlog_policy = BacklogPolicy::reject;
  Delivery delivery;
  void* context = nullptr;                // Event::context of REQ/SIDR_REQ events for this listen
};

enum class Threading : std::uint8_t { workers, caller };

// Who initializes DPDK's EAL: the engine (once per process, without hugepages,
// shared config, PCI or telemetry; later engines reuse it) or the embedding application, which
// must have called rte_eal_init before Engine::create. EAL offers no reliable "already
// initialized" query, so the application says which. The EAL heap holds each engine's MAD pool
// (about 512 bytes per EngineConfig::mad_buffers) and posted-call pool, nothing sized by
// max_endpoints; the engine starts EAL with a 64 MiB heap, which the process's live engines share:
// about 120,000 MAD buffers in all. Larger pools need an application-owned EAL with more memory.
enum class EalOwner : std::uint8_t { engine, application };

// The key of the engine's comm-ID permutation (engine/cid.h): local comm IDs are a keyed
// pseudo-random permutation of [shard | slot | generation], so the IDs a peer sees tell it nothing
// about the others, nor about the next one a slot will get. Two engines with the same key and the
// same sequence of calls and MADs issue the same IDs.
struct CidKey {
  std::uint64_t k0 = 0;
  std::uint64_t k1 = 0;
};

// What an exporter (fastcm/metrics.h) needs of an engine besides its counters: the port numbers of
// its fabric, its shards, and the levels of its bounded resources.
struct EngineLevels {
  std::vector<std::uint8_t> port_numbers;  // the fabric's, in Fabric::ports() order
  // Live endpoints, time-wait included (max_endpoints), without the spares shards keep for
  // create_id (posted_calls), which count toward the limit.
  Level endpoints;
  std::vector<ShardLevels> shards;          // one per shard
  // One per event queue, in create_event_queue order: events waiting, the most that waited for a
  // poll at once, the capacity.
  std::vector<Level> event_queues;
};

// Every field is checked by Engine::create (see ConfigField for the rules); the defaults pass.
struct EngineConfig {
  std::uint32_t shards = 1;                  // 1..kMaxShards; CIDs carry the shard bits
  Threading threading = Threading::workers;
  EalOwner eal = EalOwner::engine;
  std::uint32_t shard_inbox = 4096;          // received MADs queued per shard, at most
  std::uint32_t max_endpoints = 1u << 16;    // connection endpoints of all shards, time-wait included
  std::uint32_t max_listens = 256;
  // MAD buffers, the handshake part: what endpoints keep, split evenly over the shards and, in each
  // shard, in halves: MADs an endpoint sent and keeps to send again (one per endpoint: its next
  // step is written over the last), and received MADs kept after their handling (by the endpoint,
  // an event queue, or the application's retain()). mad_buffers_in_use() never exceeds it. The
  // engine holds two reserves apart, sized from the other fields: the receive reserve (32 per port
  // for receiving bursts, shard_inbox per shard for MADs on their way), which nothing the protocol keeps
  // can take, so receiving never starves; and the answer reserve (33 per shard: a batch's sends)
  // for answers kept only until sent (REJ, DREP, ... to MADs of no endpoint). When a shard's sent
  // half is full, or its kept half is within 1/8 of full, it takes no new handshake: a REQ that
  // arrives there goes once to another shard, and where that one has no room either it gets
  // REJ "no resources" from the answer reserve (counted DropReason::no_resources); a received MAD
  // finding no kept credit at all is dropped before handling (counted no_resources; the peer
  // retries).
  std::uint32_t mad_buffers = 1u << 14;
  // Automatic MRA: when the application has not answered a REQ (or a REP) within this fraction of
  // the peer's CM response timeout, the engine sends an MRA for it. 0 disables.
  double auto_mra_fraction = 0.5;
  std::uint8_t mra_service_timeout = 24;     // exponent sent in automatic and backlog MRAs
  // Empty polls (each followed by a yield) before a worker sleeps. 0: it sleeps at its first empty
  // poll. A yield hands the core to whatever else is runnable, so on cores shared with CPU-bound
  // work spinning halves the engine's rate (fastcm-bench --contend 2: 162k/s at 64, 299k/s at
  // 0), while on quiet cores it saves only a few percent of sleeps and wake-ups (541k vs 523k/s).
  // Sleeping would cost application threads' calls instead: a call whose shard sleeps pays the
  // eventfd write that wakes it, and woken workers preempt callers on busy cores. So after serving
  // API calls (commands, posted calls, destroys) a worker spins at least 64 empty polls whatever
  // this says (fastcm_bench_destroy, two shared cores, destroy's p99 while callbacks run: 2.3 us
  // when workers slept at once, 0.6 us with those spins). Raise it where the engine's cores are its
  // own, to save MADs' wake-ups too.
  std::uint32_t idle_spins = 0;
  // Half-open handshakes: passive endpoints a REQ made, from the REQ until its handshake settles
  // (established, rejected, timed out or abandoned), at most per source and per listen. A REQ beyond
  // either bound makes no endpoint: its listen's BacklogPolicy answers it (REJ "no resources",
  // drop, or MRA), counted DropReason::source_budget or listen_budget. A source is what the fabric
  // stamps on the REQ, not what the REQ claims: on InfiniBand the source LID (the subnet manager's
  // to assign), with a GRH (RoCE, routed InfiniBand) the source GID, which a RoCE host can forge (a
  // host forging a fresh GID per REQ meets only the per-listen bound and the pools). A source that
  // left its last two handshakes unanswered (our REP's retries ran out) gets its REPs sent once,
  // without retransmission, until it answers one again. Size the per-source bound above the
  // handshakes one honest host has in flight (a client window), and the per-listen bound above
  // what the listen accepts in a peer's CM response time.
  std::uint32_t half_open_per_source = 1024;
  std::uint32_t half_open_per_listen = 1u << 14;
  // Calls posted to shards and not yet run, at most (see "Posted calls" above); 0 (the default):
  // every call from outside its endpoint's shard waits for the shard and returns its answer.
  // Ignored under Threading::caller, where every call runs inline.
  std::uint32_t posted_calls = 0;
  // nullopt (the default): a fresh key from getrandom(2) per engine. Set only where IDs must be
  // reproducible (tests); a key a peer knows makes every ID predictable again.
  std::optional<CidKey> cid_key = std::nullopt;
};

inline constexpr std::uint32_t kMaxShards = 64;

// The field a refused EngineConfig broke, and the rule (ConfigError::rule says it in words):
//   shards               1..kMaxShards
//   threading, eal       one of the enumerators
//   shard_inbox          1..2^20
//   max_endpoints        at least 1; each shard's table (up to 4096 the whole number, beyond it
//                        twice the even share) within the CID's slot field (2^(24 - shard bits),
//                        shard bits = bit width of shards - 1) and within the shard's destroy
//                        queue (2 x table + 1024 <= 2^24); so at most about 2^23
//   max_listens          1..2^20
//   mad_buffers          32..2^24, and at least 8 per shard (4 per half)
//   auto_mra_fraction    0 <= f < 1 (NaN refused)
//   mra_service_timeout  0..31 (a 5-bit exponent)
//   idle_spins           any value (0: sleep after the first empty poll; ~0u: never, in effect)
//   half_open_per_source 1..2^24 - 1
//   half_open_per_listen 1..2^24
//   posted_calls         0..2^20
//   fabric               the Fabric has 1..255 ports (port numbers are 8 bits)
//   none                 not the configuration: EAL or DPDK memory, getrandom, or memory failed
enum class ConfigField : std::uint8_t {
  none,
  shards,
  threading,
  eal,
  shard_inbox,
  max_endpoints,
  max_listens,
  mad_buffers,
  auto_mra_fraction,
  mra_service_timeout,
  half_open_per_source,
  half_open_per_listen,
  posted_calls,
  fabric,
};

[[nodiscard]] constexpr std::string_view to_string(ConfigField f) noexcept {
  switch (f) {
    case ConfigField::none: return "none";
    case ConfigField::shards: return "shards";
    case ConfigField::threading: return "threading";
    case ConfigField::eal: return "eal";
    case ConfigField::shard_inbox: return "shard_inbox";
    case ConfigField::max_endpoints: return "max_endpoints";
    case ConfigField::max_listens: return "max_listens";
    case ConfigField::mad_buffers: return "mad_buffers";
    case ConfigField::auto_mra_fraction: return "auto_mra_fraction";
    case ConfigField::mra_service_timeout: return "mra_service_timeout";
    case ConfigField::half_open_per_source: return "half_open_per_source";
    case ConfigField::half_open_per_listen: return "half_open_per_listen";
    case ConfigField::posted_calls: return "posted_calls";
    case ConfigField::fabric: return "fabric";
  }
  return "unknown";
}

// Why Engine::create refused: the field and the rule it broke. `rule` is static text (it lives as
// long as the program), e.g. "must be 1..64".
struct ConfigError {
  ConfigField field = ConfigField::none;
  std::string_view rule;
};

class Engine {
 public:
  // Creates an engine over `fabric`'s ports into `out` (left null on failure). When `why` is not
  // null it receives the reason of a refusal (ConfigField::none and an empty rule on success).
  // Threads: any, also concurrently. Blocks: while EAL starts (the first engine of a process with
  //   EalOwner::engine) and while getrandom(2) waits for the kernel's entropy at boot.
  // Errors:
  //   invalid_argument  a field breaks its rule (ConfigField); nothing was started or allocated
  //   invalid_argument  EalOwner::application without an initialized EAL (field eal)
  //   no_resources      EAL failed to start, DPDK memory for the pool, getrandom or memory failed
  //                     (field none, the rule names what failed)
  static Status create(Fabric& fabric, const Clock& clock, const EngineConfig& config,
                       std::unique_ptr<Engine>& out, ConfigError* why);
  // create() without the reason: null on any error. Threads, Blocks: as create().
  static std::unique_ptr<Engine> create(Fabric& fabric, const Clock& clock, const EngineConfig& config);
  // Stops the workers (if any) and frees everything: no callback runs once it returns.
  // Threads: any but a callback's, once no other call on the engine is in progress.
  // Blocks: until the workers have stopped. Errors: none.
  virtual ~Engine() = default;

  // Threading::caller: runs every shard's batch once, in shard order, as its worker would: the
  // shard's ports polled (its own MADs handled there, the others queued to their shards), then
  // its queued MADs and commands and its expired timers. A MAD queued to a shard whose batch
  // already ran waits for the next call. Returns how much it did (0: idle: nothing was received,
  // queued or due). Threading::workers: does nothing, returns 0.
  // Threads: one at a time (Threading::caller). Blocks: no; callbacks run inside it. Errors: none.
  virtual std::size_t progress() = 0;
  // The clock time of the earliest pending protocol timer, or nullopt when none is armed: an idle
  // driver may sleep until then (or until the fabric's rx event fd wakes it). Threading::workers:
  // always nullopt (the workers keep their own time).
  // Threads: the progress() thread. Blocks: no. Errors: none.
  [[nodiscard]] virtual std::optional<std::uint64_t> next_timer_ns() const = 0;

  // ---- listens -------------------------------------------------------------------------------
  // Listens for REQs and SIDR_REQs whose service ID matches under the mask; `out` names the listen.
  // Threads: any; from a callback too. Blocks: on the listen table's lock, which only listen() and
  //   the destroy of a listen take (shards read the table without it).
  // Errors: invalid_argument (bad port, no delivery), service_in_use (the same service ID and mask
  //   on that port), no_resources (max_listens reached).
  virtual Status listen(const ListenParams& params, Id& out) = 0;

  // ---- endpoints -----------------------------------------------------------------------------
  // A new idle endpoint for the active side (send_req / send_sidr_req); `context` is its events'
  // Event::context. From a callback it lives on the callback's shard; otherwise shards take turns.
  // Threads: any; from a callback too. Blocks: hand-off to the new endpoint's shard; with
  //   posted_calls, no, while a shard has a spare endpoint (see "Posted calls").
  // Errors: no_resources (the shard's endpoint table is full), invalid_argument (no delivery).
  virtual Status create_id(const Delivery& delivery, void* context, Id& out) = 0;
  // create_id for an endpoint whose REQ (or SIDR_REQ) will leave from local port `port` (the
  // primary path's PathRecord::port): it lives on the shard whose worker polls that port, so its
  // peer's answers are handled by the thread that receives them instead of crossing to another
  // shard (counters: ShardLevels::forwarded). Placement is a preference, never a wait the caller
  // could not otherwise make: from a callback on another shard it takes a spare of the port's shard
  // (posted_calls) or else stays on the callback's shard; from an application thread it falls back
  // to the other shards as create_id does when the port's shard is full. The endpoint behaves the
  // same on any shard, and may send on any port.
  // Threads, Blocks: as create_id.
  // Errors: as create_id, and invalid_argument for a port number the fabric does not have.
  virtual Status create_id_for_port(const Delivery& delivery, void* context, std::uint8_t port, Id& out) = 0;
  // Replaces the endpoint's context for the events that follow.
  // Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard, or posted.
  // Errors: stale_id, would_deadlock (from another shard's callback, unless posted).
  virtual Status set_context(Id id, void* context) = 0;

  // Each sends its message on the endpoint with its private data, in the states the IBTA state
  // machine allows it (the REQ from idle, the REP in req_rcvd or mra_req_sent, the DREQ when
  // established, ...); a message the engine must retransmit is kept until answered.
  // Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard, or posted.
  // Errors: stale_id, invalid_state (not allowed in the endpoint's state), invalid_argument (a field
  //   or the private data out of range: at most the message's kMax*PrivateData), no_resources (the
  //   MAD pool, or the shard's part of it, is empty), would_deadlock (from another shard's callback).
  //   Posted: stale_id, invalid_argument (private data, ARI or info longer than the message
  //   carries) and would_deadlock returned; the rest as EventType::call_failed.

  virtual Status send_req(Id id, const ReqParams& params) = 0;
  virtual Status send_rep(Id id, const RepParams& params) = 0;
  virtual Status send_rtu(Id id, std::span<const std::uint8_t> private_data) = 0;
  virtual Status send_rej(Id id, const RejParams& params) = 0;
  virtual Status send_mra(Id id, const MraParams& params) = 0;
  virtual Status send_dreq(Id id, std::span<const std::uint8_t> private_data) = 0;
  virtual Status send_drep(Id id, std::span<const std::uint8_t> private_data) = 0;
  virtual Status send_lap(Id id, const LapParams& params) = 0;
  virtual Status send_apr(Id id, const AprParams& params) = 0;
  virtual Status send_sidr_req(Id id, const SidrReqParams& params) = 0;
  virtual Status send_sidr_rep(Id id, const SidrRepParams& params) = 0;

  // Passive side: data arrived on the QP before the RTU; the endpoint becomes established.
  // Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard, or posted.
  // Errors: stale_id, invalid_state (not rep_sent or mra_rep_rcvd), would_deadlock. Posted:
  //   invalid_state as EventType::call_failed.
  virtual Status establish(Id id) = 0;

  // QP attributes for moving the endpoint's QP to `state`, capped to the CA's limits. INIT once
  // the endpoint has a path (REQ sent or received); RTR and RTS once the REP is in (active side)
  // or out (passive side: its receive PSN is RepParams::starting_psn, chosen in send_rep).
  // Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard.
  // Errors: stale_id, invalid_state (not that far yet, or past the connection), invalid_argument
  //   (QpState::reset), would_deadlock.
  virtual Status init_qp_attr(Id id, QpState state, QpAttr& out) const = 0;

  // The last private data received on the endpoint (full wire length), valid until the next
  // event for it or its destruction. Empty when nothing was received.
  // Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard.
  // Errors: stale_id, would_deadlock.
  virtual Status last_private_data(Id id, std::span<const std::uint8_t>& out) const = 0;

  // The parameters negotiated so far (what was sent and received), readable at any time.
  // Threads: any; from a callback too. Blocks: hand-off to the endpoint's shard.
  // Errors: stale_id, would_deadlock.
  virtual Status connection_info(Id id, ConnectionInfo& out) const = 0;

  // Destroys the endpoint or listen: the protocol side follows the spec (REJ before
  // establishment, DREQ when established, then time-wait before the ID is reused). Returns at once;
  // no callback for `id` starts afterwards, nor does poll return an event for it;
  // `on_destroyed(ctx)` runs exactly once, after any callback in flight has returned and every
  // shard has passed a quiescent point (with Threading::caller: at once, or when the running
  // callback of `id` returns).
  // Threads: any; from a callback too, for any shard's endpoint. Blocks: no. Errors: stale_id.
  using DestroyedFn = void (*)(void* ctx);
  virtual Status destroy(Id id, DestroyedFn on_destroyed = nullptr, void* ctx = nullptr) = 0;
  // destroy() that returns only once on_destroyed would have run.
  // Threads: any but a callback's (a shard's thread cannot wait for the shards).
  // Blocks: for the shards' grace period (every callback in flight for `id` has returned).
  // Errors: stale_id, would_deadlock (from a callback; nothing destroyed).
  virtual Status destroy_sync(Id id) = 0;

  // ---- events and MADs -----------------------------------------------------------------------
  // A bounded queue for poll delivery (1..2^20 events). Owned by the engine; lives until the engine
  // is destroyed.
  // Threads: any. Blocks: while it allocates. Errors: null for a capacity out of range.
  virtual EventQueue* create_event_queue(std::uint32_t capacity) = 0;
  // Takes up to events.size() events; each must be given back with release(event).
  // Events of an endpoint destroyed after they were queued are not returned (as no callback
  // starts after destroy); their MADs are released.
  // Threads: any, one at a time per queue. Blocks: no. Errors: none.
  virtual std::size_t poll(EventQueue& queue, std::span<Event> events) = 0;
  // Keeps the MAD of a callback's event alive after the callback returns.
  // Threads: the callback's, during the callback. Blocks: no. Errors: none.
  virtual void retain(const Event& event) = 0;
  // Gives back a polled or retained event's MAD, exactly once.
  // Threads: any. Blocks: no. Errors: none.
  virtual void release(const Event& event) = 0;

  // A call batch: the posted calls (see "Posted calls") this thread makes between
  // begin_call_batch() and the matching end_call_batch() are held back, then queued to their
  // shards together: one queue update and at most one wake-up per shard, not one per call (a poll
  // loop answering its events in one batch). Each call still checks and returns as it would
  // unbatched; its shard only sees it later: at the end, or earlier once 64 are held. Nothing
  // else is held: a destroy, a call that waits, or a call that runs inline first queues what this
  // thread holds, so each shard still runs the thread's calls in the order it made them. Batches
  // nest (the outermost end queues); one engine's batch at a time per thread: while another
  // engine's is open, these do nothing and this engine's calls are queued at once. No effect
  // without posted calls or under Threading::caller. A batch ends on the thread that began it,
  // before that thread waits for events (what it holds reaches no shard until then) and before
  // the engine is destroyed.
  // Threads: any. Blocks: end_call_batch, while a shard's queue is full (as a posted call does).
  // Errors: none.
  virtual void begin_call_batch() = 0;
  virtual void end_call_batch() = 0;

  // ---- observability -------------------------------------------------------------------------
  // The per-port counters summed over the shards (port numbers are 1-based; index 0 is unused).
  // Each shard's part is consistent as of the end of its last batch.
  // Threads: any, without stopping the shards. Blocks: no. Errors: none.
  virtual void counters(std::span<PortCounters> out) const = 0;
  // One shard's per-port counters, as counters() (shard < EngineConfig::shards; else all zero).
  // Threads: any. Blocks: no. Errors: none.
  virtual void shard_counters(std::uint32_t shard, std::span<PortCounters> out) const = 0;
  // The handshake part's buffers taken right now, never more than EngineConfig::mad_buffers: sent
  // MADs kept for retransmission, received MADs kept by endpoints, events queued for poll or
  // retained (and the MAD a shard is handling, whose kept credit it takes first). 0 once no
  // endpoint is live and no event holds a MAD, so tests and tools can check for leaks. The
  // reserves are not counted (the ports' receive buffers, MADs waiting in inboxes, answers in
  // flight). A snapshot, exact when the engine is idle. Threads: any. Blocks: no. Errors: none.
  [[nodiscard]] virtual std::uint32_t mad_buffers_in_use() const = 0;
  // The port numbers, shards and resource levels (EngineLevels) into `out`, replacing its
  // contents. Each level is a snapshot, each high-water mark exact up to the moment it is read.
  // Threads: any, without stopping the shards. Blocks: while it allocates its vectors.
  // Errors: throws std::bad_alloc.
  virtual void levels(EngineLevels& out) const = 0;
};

// Engine::begin_call_batch for the life of a scope. Threads, Blocks, Errors: as those calls.
class CallBatch {
 public:
  explicit CallBatch(Engine& engine) : engine_(engine) { engine_.begin_call_batch(); }
  CallBatch(const CallBatch&) = delete;
  CallBatch& operator=(const CallBatch&) = delete;
  ~CallBatch() { engine_.end_call_batch(); }

 private:
  Engine& engine_;
};

}  // namespace fastcm
