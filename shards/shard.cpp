#include "shards/shard.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <string>

#include "shards/engine_config.h"
#include "shards/held_calls.h"
#include "shards/mpsc_event_queue.h"
#include "shards/wait_word.h"

namespace fastcm::shards {

namespace {

static_assert(sizeof(std::uintptr_t) == 8, "inbox items pack slot and generation into a word");

constexpr std::size_t kBurst = 32;
// A batch takes at most this many bursts, so timers, quiescent states and counter snapshots keep
// coming under a flood.
constexpr int kBurstsPerBatch = 8;
constexpr std::uint64_t kRetryReclaimNs = 1'000'000;
// The sleep of a worker polling a port without an rx event fd: what a MAD arriving on an idle port
// may wait, far below any CM timeout (4.096 µs · 2^t, tens of milliseconds and more in practice),
// for about a thousand wake-ups a second instead of a busy core.
constexpr std::uint64_t kNoRxFdSleepNs = 1'000'000;
// The port fds one sleep watches; a worker owning more ports (shards < ports / 16) looks at the
// rest every kNoRxFdSleepNs.
constexpr std::size_t kMaxSleepPorts = 16;

thread_local const Shard* tls_worker_shard = nullptr;

}  // namespace

Shard::Shard(const ShardEnv& env, ShardSet& set)
    : env_(env),
      set_(set),
      protocol_(engine::ProtocolEnv{.ports = env.fabric.ports(),
                                    .clock = env.clock,
                                    .pool = env.pool,
                                    .outbox = *this,
                                    .listens = env.listens,
                                    .remote_qpns = env.remote_qpns,
                                    .budget = env.budget,
                                    .half_open = env.half_open,
                                    .config = env.config,
                                    .shard = env.index,
                                    .layout = env.layout,
                                    .max_endpoints = env.endpoints}),
      sends_(env.fabric, env.pool,
             [](void* protocol, std::uint16_t port, engine::SendTally tally) noexcept {
               static_cast<engine::Protocol*>(protocol)->count_accepted(port, tally);
             },
             &protocol_),
      bursts_(&Shard::drop_unqueued, this),
      inbox_(static_cast<std::uint32_t>(inbox_capacity(env.config.shard_inbox, env.endpoints, posted_calls(env.config))), env.index),
      retired_(env.epoch, static_cast<std::uint32_t>(retire_capacity(env.endpoints)), "retired" + std::to_string(env.index)),
      snapshot_(env.fabric.ports().size()),
      pending_destroys_(env.endpoints),
      mad_credits_(env.config.shard_inbox),
      port_drops_(std::make_unique<PortDrops[]>(env.fabric.ports().size())) {
  if (posted_calls(env.config) > 0) spares_.emplace();
}

Shard::~Shard() {
  // Whatever is still queued: MADs go back to the pool; control items cannot be left (the engine
  // stops its API users before it destroys shards, and destroys are handled by the last batch).
  std::array<void*, kBurst> items;
  while (const std::size_t n = inbox_.dequeue_burst(items)) {
    for (std::size_t i = 0; i < n; ++i) {
      if (engine::MadBuf* mad = InboxItem::from_word(items[i]).mad()) engine::release(env_.pool, mad);
    }
  }
}

void Shard::add_port(PortPoller& poller) { ports_.push_back(&poller); }

bool Shard::owned_by_caller() const noexcept { return set_.caller_driven() || tls_worker_shard == this; }

bool Shard::on_worker_thread() noexcept { return tls_worker_shard != nullptr; }

// ---- the shard's thread ----------------------------------------------------------------------

std::size_t Shard::run_batch() noexcept {
  std::array<void*, kBurst> items;
  std::size_t work = 0;
  in_batch_ = true;
  protocol_.begin_batch();  // ended by on_timers() below
  for (PortPoller* port : ports_) work += port->poll_once(*this);
  for (int burst = 0; burst < kBurstsPerBatch; ++burst) {
    const std::size_t n = inbox_.dequeue_burst(items);
    if (n == 0) break;
    handle_all(std::span<void* const>(items.data(), n));
    work += n;
  }
  work += protocol_.on_timers();
  if (spares_) {
    work += spares_->top_up(
        [this](SpareEndpoints::Spare& spare) noexcept { return protocol_.create_spare(spare.id, spare.slot); });
  }
  flush_burst();
  in_batch_ = false;
  // Nothing of the listen snapshot (or any retired object) is held past this point.
  env_.epoch.quiescent(env_.index);
  work += retired_.reclaim() + env_.listen_retired.reclaim();
  // A caller-driven engine reads the live counters (counters()), never the snapshot.
  if (work > 0 && !set_.caller_driven()) snapshot_.publish(protocol_.all_counters());
  return work;
}

bool Shard::has_queued_work() const noexcept {
  // Relaxed: the driving thread posted every MAD itself (pollers and chains run in progress()).
  return mad_credits_.load(std::memory_order_relaxed) != std::int64_t{env_.config.shard_inbox} ||
         retired_.pending() > 0 || env_.listen_retired.pending() > 0;
}

template <typename MadAt, typename Handle>
void Shard::in_prefetched_order(std::size_t n, MadAt mad_at, Handle handle) noexcept {
  // Handling a MAD takes longer than a miss: two MADs between the steps let each step's lines
  // arrive before the next step (or the handler) reads them.
  constexpr std::size_t kFirstAhead = 4;
  constexpr std::size_t kSecondAhead = 2;
  using Step = void (engine::Protocol::*)(const engine::MadBuf&) const noexcept;
  const auto prefetch = [&](Step step, std::size_t i) {
    if (const engine::MadBuf* mad = mad_at(i)) (protocol_.*step)(*mad);
  };
  for (std::size_t i = 0; i < std::min(kFirstAhead, n); ++i) prefetch(&engine::Protocol::prefetch, i);
  for (std::size_t i = 0; i < std::min(kSecondAhead, n); ++i) prefetch(&engine::Protocol::prefetch_second, i);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kFirstAhead < n) prefetch(&engine::Protocol::prefetch, i + kFirstAhead);
    if (i + kSecondAhead < n) prefetch(&engine::Protocol::prefetch_second, i + kSecondAhead);
    handle(i);
  }
}

void Shard::handle_all(std::span<void* const> items) noexcept {
  // Posted calls' records come from an application thread's core: their loads start now and
  // arrive while the burst's earlier items are handled.
  for (void* word : items) {
    const InboxItem item = InboxItem::from_word(word);
    if (item.kind() == InboxItem::Kind::posted) item.posted().prefetch();
  }
  std::int64_t mads = 0;
  in_prefetched_order(
      items.size(),
      [&](std::size_t i) {
        const InboxItem item = InboxItem::from_word(items[i]);
        return item.kind() == InboxItem::Kind::mad ? item.mad() : nullptr;
      },
      [&](std::size_t i) {
        const InboxItem item = InboxItem::from_word(items[i]);
        // Posted MADs hold inbox credits (post_mads); stale notices do not.
        if (item.mad() != nullptr && item.kind() != InboxItem::Kind::stale) ++mads;
        handle(item);
      });
  // Per burst: the answers go out and the events' consumers wake while the next burst is handled,
  // and the credits come back (per batch, a batch would hold up to kBurstsPerBatch bursts of room).
  flush_burst();
  if (mads > 0) mad_credits_.fetch_add(mads, std::memory_order_relaxed);
}

void Shard::flush_burst() noexcept {
  sends_.flush();
  bursts_.flush();
  finished_calls_.flush();
  env_.pool.return_spare_kept();
}

void Shard::handle_received(std::span<engine::MadBuf* const> mads) noexcept {
  in_prefetched_order(
      mads.size(), [&](std::size_t i) { return mads[i]; }, [&](std::size_t i) { deliver(mads[i]); });
  flush_burst();
}

void Shard::run_worker() noexcept {
  tls_worker_shard = this;
  env_.epoch.online(env_.index);
  unsigned idle = 0;
  while (!stopping_) {
    if (run_batch() != 0) {
      idle = 0;
      continue;
    }
    const std::uint32_t spins =
        served_calls_ ? std::max(env_.config.idle_spins, kSpinsAfterCalls) : env_.config.idle_spins;
    if (++idle < spins) {
      std::this_thread::yield();  // a preempted producer gets the core
      continue;
    }
    idle = 0;
    served_calls_ = false;
    std::array<void*, kBurst> items;
    // Offline while asleep: a sleeping shard must not hold up anyone's grace period.
    env_.epoch.offline(env_.index);
    const std::size_t n = sleep(items);
    env_.epoch.online(env_.index);
    if (n > 0) handle_all(std::span<void* const>(items.data(), n));
  }
  env_.epoch.offline(env_.index);
  tls_worker_shard = nullptr;
}

std::size_t Shard::sleep(std::span<void*> out) noexcept {
  const std::size_t n = inbox_.arm(out);
  if (n > 0) return n;
  // The inbox and every owned port with an rx event fd. A port without one (fastcm/fabric.h), or
  // beyond the ports one sleep watches, is polled again after a bounded sleep instead, unarmed:
  // arming it would only say whether MADs wait, at the price of a call into the fabric (under
  // ibsim's umad2sim an interposed poll) on every sleep of a worker that API calls wake again and
  // again.
  std::array<pollfd, 1 + kMaxSleepPorts> fds;
  fds[0] = pollfd{.fd = inbox_.event_fd(), .events = POLLIN, .revents = 0};
  std::size_t watched = 1;
  std::optional<std::uint64_t> wait_ns;
  for (PortPoller* port : ports_) {
    const int fd = env_.fabric.rx_event_fd(port->port_index());
    if (fd < 0 || watched == fds.size()) {
      wait_ns = kNoRxFdSleepNs;
      continue;
    }
    if (!env_.fabric.arm_rx_event(port->port_index())) {  // MADs are waiting: do not sleep
      inbox_.disarm();
      return 0;
    }
    fds[watched++] = pollfd{.fd = fd, .events = POLLIN, .revents = 0};
  }
  if (const std::optional<std::uint64_t> next = protocol_.next_timer_ns()) {
    const std::uint64_t now = env_.clock.now_ns();
    wait_ns = std::min(wait_ns.value_or(UINT64_MAX), *next > now ? *next - now : 0);
  }
  // Deferred on_destroyed calls wait for the other shards' quiescent points, which nobody
  // announces: look again soon rather than sleep on them.
  if (retired_.pending() > 0) wait_ns = std::min<std::uint64_t>(wait_ns.value_or(kRetryReclaimNs), kRetryReclaimNs);
  if (wait_ns) {
    const timespec limit{.tv_sec = static_cast<std::time_t>(*wait_ns / 1'000'000'000),
                         .tv_nsec = static_cast<long>(*wait_ns % 1'000'000'000)};
    (void)::ppoll(fds.data(), watched, &limit, nullptr);
  } else {
    (void)::ppoll(fds.data(), watched, nullptr, nullptr);
  }
  inbox_.disarm();
  return 0;
}

void Shard::handle(InboxItem item) noexcept {
  const InboxItem::Kind kind = item.kind();
  served_calls_ |=
      kind == InboxItem::Kind::command || kind == InboxItem::Kind::posted || kind == InboxItem::Kind::destroy;
  switch (kind) {
    case InboxItem::Kind::mad: deliver(item.mad()); break;
    case InboxItem::Kind::mad_overflow: deliver(item.mad(), true); break;
    case InboxItem::Kind::mad_chain: handle_chain(item.mad()); break;
    case InboxItem::Kind::command: {
      Command& cmd = item.command();
      cmd.run(cmd, protocol_);
      set_and_wake(cmd.done);  // `cmd` may be gone from here on
      break;
    }
    case InboxItem::Kind::posted: item.posted().run(protocol_, finished_calls_); break;  // `run` completes the record
    case InboxItem::Kind::destroy: {
      const std::uint32_t slot = item.slot();
      const PendingDestroy pending = pending_destroys_[slot];
      protocol_.destroy_detached(slot, pending.generation, pending.on_destroyed, pending.ctx);
      break;
    }
    case InboxItem::Kind::stale: {
      engine::MadBuf* cause = item.mad();
      protocol_.on_stale(*cause);
      engine::release(env_.pool, cause);
      break;
    }
  }
}

void Shard::handle_chain(engine::MadBuf* mad) noexcept {
  // Only REJ "timeout" naming a REQ by the peer's own comm ID travels the chain (routing_key.h):
  // the shard whose duplicate-REQ index holds it takes it; the last shard handles it anyway and
  // counts it unknown.
  const std::uint32_t next = env_.index + 1;
  if (next < set_.shard_count() && !protocol_.holds_rejected_req(*mad)) {
    engine::MadBuf* one[] = {mad};
    if (set_.shard(next).post_mads(one, InboxItem::Kind::mad_chain) == 1) return;
  }
  deliver(mad);
}

void Shard::deliver(engine::MadBuf* mad, bool overflow) noexcept {
  if (!env_.pool.reserve_kept()) return drop_unhandled(mad, &PortDrops::unkept);
  delivering_overflow_ = overflow;
  delivering_ = mad;
  protocol_.on_mad(*mad);
  if (delivering_ == nullptr) return;  // our reference went to an event, charged as kept (enqueue)
  delivering_ = nullptr;
  if (passing_ == mad) return hand_on(mad);
  // Our reference tells whether anyone else holds the MAD now. Acquire: pairs with the acq_rel
  // decrement of a holder on another thread that let go already (an event polled and released),
  // so a count of 1 means nobody else holds it.
  if (mad->refs.load(std::memory_order_acquire) > 1) {
    env_.pool.charge_kept(*mad);  // before our release: the last holder's put reads it
  } else {
    env_.pool.cancel_kept();
  }
  engine::release(env_.pool, mad);
}

void Shard::hand_on(engine::MadBuf* req) noexcept {
  passing_ = nullptr;
  env_.pool.cancel_kept();  // nobody here kept it
  engine::MadBuf* one[] = {req};
  if (set_.shard(passing_to_).post_mads(one, passing_as_) == 1) {
    if (!set_.caller_driven()) passed_on_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  drop_unhandled(req, &PortDrops::unpassed);
}

void Shard::drop_unqueued(void* self, engine::MadBuf* mad, std::uint16_t port_index) noexcept {
  auto& shard = *static_cast<Shard*>(self);
  if (port_index < shard.env_.fabric.ports().size()) {
    shard.port_drops_[port_index].unqueued.fetch_add(1, std::memory_order_relaxed);
  }
  // The event's reference: its charge, kept, was set before it was held (enqueue, deliver), so
  // the last release gives the kept credit back.
  if (mad != nullptr) engine::release(shard.env_.pool, mad);
}

void Shard::drop_unhandled(engine::MadBuf* mad, std::atomic<std::uint64_t> PortDrops::*count) noexcept {
  const std::uint16_t port = mad->packet.addr.port_index;
  if (port < env_.fabric.ports().size()) (port_drops_[port].*count).fetch_add(1, std::memory_order_relaxed);
  engine::release(env_.pool, mad);
}

// ---- any thread --------------------------------------------------------------------------------

std::size_t Shard::post_mads(std::span<engine::MadBuf* const> mads, InboxItem::Kind kind) noexcept {
  const auto want = static_cast<std::int64_t>(mads.size());
  const std::int64_t had = mad_credits_.fetch_sub(want, std::memory_order_relaxed);
  const std::int64_t granted = std::clamp<std::int64_t>(had, 0, want);
  std::array<void*, kBurst> items;
  std::size_t posted = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(granted);) {
    const std::size_t n = std::min<std::size_t>(kBurst, static_cast<std::size_t>(granted) - i);
    for (std::size_t k = 0; k < n; ++k) items[k] = InboxItem::mad(*mads[i + k], kind).word();
    const std::size_t taken = inbox_.enqueue_burst(std::span<void* const>(items.data(), n));
    posted += taken;
    i += n;
    if (taken < n) break;
  }
  const std::int64_t unused = want - static_cast<std::int64_t>(posted);
  if (unused > 0) mad_credits_.fetch_add(unused, std::memory_order_relaxed);
  return posted;
}

void Shard::post_control(InboxItem item) noexcept {
  HeldCalls::release();  // first: nothing this thread queues overtakes a call it holds back
  void* const word = item.word();
  inbox_.enqueue_all({&word, 1});
}

void Shard::post_command(Command& cmd) noexcept {
  post_control(InboxItem::command(cmd));
  wait_until_set(cmd.done);
}

void Shard::post_call(PostedCall& pooled) noexcept {
  if (HeldCalls::hold(&set_, inbox_, InboxItem::posted(pooled).word())) return;
  post_control(InboxItem::posted(pooled));
}

void Shard::post_call_and_wait(PostedCall& on_stack) noexcept {
  post_control(InboxItem::posted(on_stack));
  on_stack.wait_until_run();
}

Status Shard::post_destroy(Id id, Engine::DestroyedFn on_destroyed, void* ctx) noexcept {
  const std::optional<std::uint32_t> slot = protocol_.table().try_detach_remote(id);
  if (!slot) return Status::stale_id;
  // Exclusively ours: the slot cannot be detached again before the shard handled this item
  // (cep_table.h, kDetachPending). The inbox's release/acquire publishes it with the item.
  pending_destroys_[*slot] = PendingDestroy{on_destroyed, ctx, id.generation()};
  post_control(InboxItem::destroy(*slot));
  return Status::ok;
}

std::optional<SpareEndpoints::Spare> Shard::take_spare(const Delivery& delivery, void* context) noexcept {
  if (!spares_) return std::nullopt;
  const std::optional<SpareEndpoints::Spare> spare = spares_->take();
  if (spare) protocol_.adopt_spare(spare->slot, delivery, context);
  return spare;
}

void Shard::post_stale(engine::MadBuf& cause) noexcept {
  engine::retain(cause);
  post_control(InboxItem::stale(cause));
}

void Shard::stop() noexcept {
  // A command, not a flag: it runs after everything queued before it (a destroy, say).
  struct Stop : Command {
    Shard* shard = nullptr;
  } stop;
  stop.shard = this;
  stop.run = [](Command& c, engine::Protocol&) noexcept { static_cast<Stop&>(c).shard->stopping_ = true; };
  post_command(stop);
}

void Shard::counters(std::span<PortCounters> out) const noexcept {
  if (owned_by_caller()) {
    const auto live = protocol_.all_counters();
    std::copy_n(live.begin(), std::min(live.size(), out.size()), out.begin());
  } else {
    snapshot_.read(out);
  }
  const std::size_t ports = std::min(out.size(), env_.fabric.ports().size());
  for (std::size_t p = 0; p < ports; ++p) {
    out[p].drops[static_cast<std::size_t>(DropReason::no_resources)] += port_drops_[p].unkept.load(std::memory_order_relaxed);
    out[p].drops[static_cast<std::size_t>(DropReason::inbox_full)] += port_drops_[p].unpassed.load(std::memory_order_relaxed);
    out[p].drops[static_cast<std::size_t>(DropReason::queue_full)] += port_drops_[p].unqueued.load(std::memory_order_relaxed);
  }
}

// ---- engine::Outbox ------------------------------------------------------------------------------

bool Shard::enqueue(EventQueue& queue, const Event& event, std::uint32_t slot, engine::MadBuf* mad,
                    std::uint16_t port_index) noexcept {
  auto& events = static_cast<MpscEventQueue&>(queue);
  const QueuedEvent queued{.event = event, .slot = slot};
  // The first event of the MAD being delivered takes deliver()'s reference rather than one of its
  // own, and deliver() then drops none: two atomic updates of the buffer's count fewer, and no
  // update after the application thread may have polled the event and released it (the count's
  // line would have moved to its core). Charged as kept before the event is visible, since the
  // consumer's release may be the last one, and the put reads the charge.
  const bool hand_over = mad != nullptr && mad == delivering_;
  if (hand_over) env_.pool.charge_kept(*mad);
  const auto hold = hand_over ? MpscEventQueue::MadHold::hand_over : MpscEventQueue::MadHold::share;
  // Inside a batch the burst's end queues the events and wakes the consumer (flush_burst); a
  // direct call outside one (end_direct_call) has no such end, so it pushes and wakes at once.
  const bool pushed =
      in_batch_ ? bursts_.push(events, queued, mad, hold, port_index) : events.push(queued, mad, hold);
  if (hand_over) {
    if (pushed) {
      delivering_ = nullptr;
    } else {
      env_.pool.uncharge_kept(*mad);  // deliver() still holds it and settles the credit itself
    }
  }
  return pushed;
}

bool Shard::queue_full(const EventQueue& queue) const noexcept {
  return bursts_.full(static_cast<const MpscEventQueue&>(queue));
}

void Shard::notify_stale(Id stale, engine::MadBuf& cause) noexcept {
  const std::uint32_t owner = env_.layout.shard_of(stale.comm_id());
  if (owner >= set_.shard_count()) return;
  // One thread runs every shard when the caller drives them: tell the owner directly (it is not
  // inside a handler: only this shard is).
  if (owner == env_.index || set_.caller_driven()) {
    Shard& shard = set_.shard(owner);
    shard.protocol_.on_stale(cause);
    shard.end_direct_call();
  } else {
    set_.shard(owner).post_stale(cause);
  }
}

bool Shard::pass_on(engine::MadBuf& req, std::optional<Id> owner) noexcept {
  const std::uint32_t shards = set_.shard_count();
  std::uint32_t to = 0;
  if (owner) {
    to = env_.layout.shard_of(owner->comm_id());
    if (to == env_.index || to >= shards) return false;
  } else {
    // Once only, so two full shards never pass a REQ back and forth: the second one rejects it.
    if (delivering_overflow_ || shards == 1) return false;
    // One of the other shards, by the REQ's hash, so that what one table cannot hold spreads evenly.
    const engine::RoutingKey key = engine::routing_key(mad::ConstMadSpan(req.packet.mad), req.packet.addr);
    to = ShardSet::hashed(key.origin, key.id, shards - 1);
    to += to >= env_.index ? 1 : 0;
  }
  passing_ = &req;
  passing_to_ = to;
  passing_as_ = owner ? InboxItem::Kind::mad : InboxItem::Kind::mad_overflow;
  return true;
}

void Shard::retire(Engine::DestroyedFn on_destroyed, void* ctx) noexcept {
  if (set_.caller_driven()) {
    on_destroyed(ctx);
    return;
  }
  // Full only when another shard's callback has stalled grace periods for as long as it takes to
  // destroy twice this shard's endpoints; then wait for it rather than break the contract.
  while (!retired_.defer(on_destroyed, ctx)) std::this_thread::yield();
}

}  // namespace fastcm::shards
