// One shard of the engine: a Protocol (its endpoints, timers and indexes), the inbox that feeds
// it, and the loop that runs it — on its own worker thread, or inside Engine::progress() for an
// engine driven by its caller. A worker also polls the ports its shard owns (port_poller.h): it
// handles the MADs of its own shard at once and posts the others to their shards' inboxes.
//
// Its inbox carries MADs other workers routed here, API threads' commands and posted calls,
// destroys and stale notices (inbox_item.h).
//
// Thread contract: the shard's thread (the worker, or progress()'s caller) runs everything but
// the producer side: post_mads, post_command, post_call, post_destroy and post_stale may be called
// from any thread at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "engine/cid.h"
#include "engine/demand_zero_array.h"
#include "engine/mad_buf.h"
#include "engine/outbox.h"
#include "engine/protocol.h"
#include "mempool/mad_mempool.h"
#include "shards/counter_snapshot.h"
#include "shards/epoch.h"
#include "shards/inbox_item.h"
#include "shards/port_poller.h"
#include "shards/posted_call.h"
#include "shards/event_bursts.h"
#include "shards/send_batch.h"
#include "shards/shard_inbox.h"
#include "shards/spare_endpoints.h"

namespace fastcm::shards {

class ShardSet;

// A call executed by the shard on behalf of a waiting thread.
struct Command {
  void (*run)(Command& self, engine::Protocol& protocol) noexcept = nullptr;
  // 0 while pending; set by the shard after `run` returned (wait_word.h).
  std::atomic<std::uint32_t> done{0};
};
static_assert(alignof(Command) >= 8, "inbox_item.h tags a Command's address in its low 3 bits");

struct ShardEnv {
  Fabric& fabric;
  const Clock& clock;
  mempool::AccountedMadPool& pool;  // charges this shard's MAD accounts
  engine::Listens& listens;
  engine::RemoteQpns& remote_qpns;
  engine::EndpointBudget& budget;
  engine::HalfOpenBudget& half_open;
  Epoch& epoch;
  // The engine's queue of on_destroyed calls of listens (any thread defers into it): each shard
  // reclaims it after its quiescent point, so the last shard to pass one runs what is due.
  DeferQueue& listen_retired;
  const EngineConfig& config;
  engine::CidLayout layout;
  std::uint32_t index = 0;
  std::uint32_t endpoints = 0;  // this shard's table size (see endpoint_budget.h)
};

class Shard final : private engine::Outbox {
 public:
  // Room in the inbox beyond the MADs, the destroys (one per endpoint) and the posted calls (the
  // engine's bound on them): every other control item (stale notices, commands of waiting
  // threads) fits without waiting in all but pathological cases (post_control yields then).
  static constexpr std::uint32_t kControlHeadroom = 1024;
  // Empty polls a worker spins, at least, before it sleeps when API calls came through its inbox
  // since it last slept. The thread of a call whose shard sleeps pays the wake-up (an eventfd
  // write, and on busy cores the woken worker preempting it); where one call came, more follow (a
  // destroy loop, an application answering events), and a spinning worker takes them with no
  // system call on either side. MADs alone do not make a worker spin: on cores shared with
  // CPU-bound work, spinning gives the core away a yield at a time (EngineConfig::idle_spins).
  static constexpr std::uint32_t kSpinsAfterCalls = 64;
  // The sizes the shard's rings get from its MAD share, table size and the posted-call bound, in
  // 64 bits so a configuration check can compare them with the rings' limits before anything
  // overflows.
  [[nodiscard]] static constexpr std::uint64_t inbox_capacity(std::uint64_t shard_inbox, std::uint64_t endpoints,
                                                              std::uint64_t posted_calls) noexcept {
    return shard_inbox + endpoints + posted_calls + kControlHeadroom;
  }
  [[nodiscard]] static constexpr std::uint64_t retire_capacity(std::uint64_t endpoints) noexcept {
    return 2 * endpoints + kControlHeadroom;
  }

  // Allocates everything the shard will ever use. Throws std::system_error / std::bad_alloc.
  Shard(const ShardEnv& env, ShardSet& set);
  ~Shard() override;
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Gives the worker `poller`'s port to poll (each port has one owner). Before the worker starts.
  void add_port(PortPoller& poller);

  // ---- the shard's thread ------------------------------------------------------------------
  // One batch: a burst from each port the shard owns, everything queued in the inbox, then the due
  // timers; then a quiescent state, due deferred work and the counter snapshot. Returns how much
  // it handled (0: idle).
  std::size_t run_batch() noexcept;
  // Handles MADs received for this shard by its own worker (PortPoller::poll_once), taking over
  // one reference on each.
  void handle_received(std::span<engine::MadBuf* const> mads) noexcept;
  // Whether run_batch() would find something besides timers: queued MADs, or deferred calls
  // waiting for a quiescent point. Lets a caller-driven engine skip an idle shard (with its epoch
  // round trip) after checking its timers itself. Thread contract: the driving thread of a
  // caller-driven engine, where every inbox item is a MAD (API calls run inline there, so no
  // command, destroy or stale notice is ever queued) and every MAD holds one inbox credit.
  [[nodiscard]] bool has_queued_work() const noexcept;
  // Whether run_batch() polls ports (add_port gave it some). The owning thread.
  [[nodiscard]] bool polls_ports() const noexcept { return !ports_.empty(); }
  // The inbox's capacity and high-water mark (items of every kind). Any thread.
  [[nodiscard]] Level inbox_level() const noexcept {
    return Level{.now = inbox_.size(), .high_water = inbox_.high_water(), .limit = inbox_.capacity()};
  }
  // The worker thread's loop until stop(): batches, and when idle (after idle_spins empty polls,
  // at least kSpinsAfterCalls when API calls came through the inbox since it last slept) sleeps on
  // the inbox eventfd and its ports' rx event fds until work or the next timer.
  void run_worker() noexcept;
  [[nodiscard]] engine::Protocol& protocol() noexcept { return protocol_; }
  [[nodiscard]] const engine::Protocol& protocol() const noexcept { return protocol_; }
  // Whether the calling thread may touch this shard's Protocol directly: it is the shard's worker,
  // or the engine is driven by its caller.
  [[nodiscard]] bool owned_by_caller() const noexcept;
  // Ends an API call that the owning thread ran on protocol() directly: outside a batch (an
  // application thread of a caller-driven engine, or a callback of another shard's batch) it sends
  // what the call queued; inside this shard's batch the batch sends it.
  void end_direct_call() noexcept {
    if (!in_batch_) sends_.flush();
  }

  // ---- any thread ----------------------------------------------------------------------------
  // Queues received MADs as inbox items of `kind` (mad, mad_chain for RoutingKey::any_shard, or
  // mad_overflow: inbox_item.h); returns how many were taken. The rest stay the caller's (counted
  // inbox_full by the poller).
  std::size_t post_mads(std::span<engine::MadBuf* const> mads, InboxItem::Kind kind) noexcept;
  // Runs `cmd` on the shard and returns once it ran. Never call from a shard thread.
  void post_command(Command& cmd) noexcept;
  // Queues a pooled record for the shard, which runs it and gives it back (posted_call.h); a
  // call batch of this thread (held_calls.h) may hold it first. The poster says which kind of
  // record it has (it took it from the pool or made it on its stack) rather than the shard reading
  // the record back from a line another core may hold.
  void post_call(PostedCall& pooled) noexcept;
  // Queues a stack record and returns once the shard has run it: never from a shard thread.
  void post_call_and_wait(PostedCall& on_stack) noexcept;
  // A destroy from a thread that is not the shard's: detaches `id` at once (so that nothing about
  // it reaches the application after this returns) and posts the rest to the shard, which calls
  // on_destroyed after its grace period. Status::stale_id when the endpoint is gone or another
  // destroy of it won the detach; Status::ok otherwise.
  [[nodiscard]] Status post_destroy(Id id, Engine::DestroyedFn on_destroyed, void* ctx) noexcept;
  // Whether `id` names a live endpoint of this shard that no destroy has detached (a snapshot).
  [[nodiscard]] bool attached(Id id) const noexcept { return protocol_.table().attached(id); }
  // attached(id) where `slot` is known to be the slot `id` names (an event's, MpscEventQueue).
  [[nodiscard]] bool attached(Id id, std::uint32_t slot) const noexcept { return protocol_.table().attached(id, slot); }
  // create_id without the shard (EngineConfig::posted_calls; spare_endpoints.h): takes one of the
  // shard's spare endpoints and gives it `delivery` and `context`; nullopt when the shard keeps
  // none or has none left. Never blocks.
  [[nodiscard]] std::optional<SpareEndpoints::Spare> take_spare(const Delivery& delivery, void* context) noexcept;
  // Spare endpoints waiting for a create_id (a snapshot).
  [[nodiscard]] std::uint32_t spare_endpoints() const noexcept { return spares_ ? spares_->count() : 0; }
  // Asks the shard to judge `cause` and disconnect the endpoint it finds stale (see
  // Protocol::on_stale); takes a reference on `cause`. Never fails.
  void post_stale(engine::MadBuf& cause) noexcept;
  // Asks the worker to leave run_worker() (it finishes the batch it is in).
  void stop() noexcept;
  // Whether the calling thread is any shard's worker.
  [[nodiscard]] static bool on_worker_thread() noexcept;

  [[nodiscard]] std::uint32_t index() const noexcept { return env_.index; }
  // REQs this shard's thread passed on to another shard's inbox (Outbox::pass_on) in workers
  // threading: crossings beside its ports' forwarded MADs. Any thread (a statistic).
  [[nodiscard]] std::uint64_t passed_on() const noexcept { return passed_on_.load(std::memory_order_relaxed); }
  // The last published counters (any thread), or the live ones on the owning thread.
  void counters(std::span<PortCounters> out) const noexcept;

 private:
  struct PendingDestroy {
    Engine::DestroyedFn on_destroyed = nullptr;
    void* ctx = nullptr;
    std::uint32_t generation = 0;
  };

  // engine::Outbox
  void send(engine::MadBuf& buf, engine::SendTally tally) noexcept override { sends_.add(buf, tally); }
  bool enqueue(EventQueue& queue, const Event& event, std::uint32_t slot, engine::MadBuf* mad,
               std::uint16_t port_index) noexcept override;
  [[nodiscard]] bool queue_full(const EventQueue& queue) const noexcept override;
  void notify_stale(Id stale, engine::MadBuf& cause) noexcept override;
  [[nodiscard]] bool pass_on(engine::MadBuf& req, std::optional<Id> owner) noexcept override;
  void retire(Engine::DestroyedFn on_destroyed, void* ctx) noexcept override;

  void handle(InboxItem item) noexcept;
  void handle_chain(engine::MadBuf* mad) noexcept;
  // Hands a received MAD to the protocol with a kept credit reserved for it, so that whatever keeps
  // it afterwards (the endpoint, an event, the application) stays within the handshake part; with
  // no credit left it is dropped (counted no_resources; the peer retries). A REQ the protocol
  // passed on goes to its shard with this reference (counted forwarded, or inbox_full).
  // `overflow`: the MAD came as a mad_overflow item (inbox_item.h).
  void deliver(engine::MadBuf* mad, bool overflow = false) noexcept;
  // Per port, what the shard itself dropped: MADs with no kept credit left (added to no_resources
  // by counters()), REQs passed on (pass_on) that their shard's inbox had no room for (added to
  // inbox_full), and events their queue had no room for at the burst's end (added to queue_full).
  // Written by the shard's thread, read by any (relaxed: statistics).
  struct PortDrops {
    std::atomic<std::uint64_t> unkept{0};
    std::atomic<std::uint64_t> unpassed{0};
    std::atomic<std::uint64_t> unqueued{0};
  };
  // EventBursts' refusal handler: drops an event its queue had no room for when the burst ended,
  // releasing its MAD reference and counting it on its endpoint's port (`self` is the Shard).
  static void drop_unqueued(void* self, engine::MadBuf* mad, std::uint16_t port_index) noexcept;
  // Sends the REQ on_mad passed on (Outbox::pass_on) to its shard with deliver()'s reference.
  void hand_on(engine::MadBuf* req) noexcept;
  // Releases a MAD the shard drops unhandled, counting it in its port's `count`.
  void drop_unhandled(engine::MadBuf* mad, std::atomic<std::uint64_t> PortDrops::*count) noexcept;
  // Posts a control item (never a MAD), yielding while the inbox is full: control items are
  // bounded by the endpoints and waiting callers, and the shard drains without waiting on anyone.
  void post_control(InboxItem item) noexcept;
  // Handles dequeued items, sends what they queued and returns the MADs' inbox credits.
  void handle_all(std::span<void* const> items) noexcept;
  // Ends a burst: sends what it queued, wakes the event queues it pushed to, and gives back the
  // spare kept credit (AccountedMadPool::reserve_kept).
  void flush_burst() noexcept;
  // Sleeps until an inbox item or a MAD on an owned port arrives, or the next timer is due; returns
  // the items arm() found instead of sleeping (moved into `out`).
  std::size_t sleep(std::span<void*> out) noexcept;
  // Runs `handle(i)` for each index while prefetching for the MADs ahead, in Protocol::prefetch's
  // two steps, so the misses of a MAD's handler overlap the handling of the MADs before it.
  template <typename MadAt, typename Handle>
  void in_prefetched_order(std::size_t n, MadAt mad_at, Handle handle) noexcept;

  ShardEnv env_;
  ShardSet& set_;
  engine::Protocol protocol_;
  SendBatch sends_;  // after protocol_, which it counts into
  EventBursts bursts_;  // the events this burst emits for poll delivery, queued at its end
  FinishedCalls finished_calls_;  // the pooled posted calls this burst ran
  ShardInbox inbox_;
  std::optional<SpareEndpoints> spares_;  // with posted calls (workers threading) only
  std::vector<PortPoller*> ports_;  // the ports this shard's batches poll
  DeferQueue retired_;     // on_destroyed calls waiting for a grace period
  CounterSnapshot snapshot_;
  engine::DemandZeroArray<PendingDestroy> pending_destroys_;  // per slot, written by the detaching thread
  // MADs the inbox may hold: pollers take credits before posting, the shard returns them per
  // batch, so commands and destroys always find room. Relaxed: the ring orders the items.
  std::atomic<std::int64_t> mad_credits_;
  std::unique_ptr<PortDrops[]> port_drops_;  // per port (PortDrops)
  // See passed_on(). Written by the shard's thread, read by any (relaxed: a statistic).
  std::atomic<std::uint64_t> passed_on_{0};
  // The MAD on_mad is handling came as a mad_overflow item; the REQ it passed on, if any, the
  // shard it goes to and as what. The shard's thread only.
  bool delivering_overflow_ = false;
  // The MAD deliver() holds a reference on while on_mad handles it, until that reference goes to
  // the first event that carries the MAD (enqueue); then null. The shard's thread only.
  engine::MadBuf* delivering_ = nullptr;
  engine::MadBuf* passing_ = nullptr;
  std::uint32_t passing_to_ = 0;
  InboxItem::Kind passing_as_ = InboxItem::Kind::mad;
  bool stopping_ = false;  // set by stop()'s command: the shard's thread only
  bool in_batch_ = false;  // run_batch() is running: the shard's thread only
  // An API call (a command, posted call or destroy) came through the inbox since the worker last
  // slept: the worker's thread only.
  bool served_calls_ = false;
};

// The shards of one engine, for routing between them.
class ShardSet {
 public:
  virtual ~ShardSet() = default;
  [[nodiscard]] virtual Shard& shard(std::uint32_t index) noexcept = 0;
  [[nodiscard]] virtual std::uint32_t shard_count() const noexcept = 0;
  [[nodiscard]] virtual bool caller_driven() const noexcept = 0;
  // The shard that port `port_index` belongs to: its worker polls the port (workers threading),
  // and MADs of no routing key from it go there (PortPoller::shard_for), so those never cross.
  [[nodiscard]] std::uint32_t port_shard(std::uint16_t port_index) const noexcept {
    return port_index % shard_count();
  }
  // Which of `choices` shards a request's origin and ID (RoutingKey) hash to: a retransmission
  // hashes alike, and requests of many peers spread evenly. Fibonacci hashing of the mixed key.
  [[nodiscard]] static std::uint32_t hashed(std::uint64_t origin, std::uint32_t id, std::uint32_t choices) noexcept {
    const std::uint64_t mixed = (origin ^ (std::uint64_t{id} << 24 | id)) * 0x9E3779B97F4A7C15ull;
    return static_cast<std::uint32_t>(((mixed >> 32) * choices) >> 32);
  }
};

}  // namespace fastcm::shards
