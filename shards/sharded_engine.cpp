// The engine: shards, port pollers and the objects they share (pool, listens, remote-QP registry,
// epoch), wired together. API calls find the endpoint's shard from its Id and run
// there (shard.h); listens are the control path (listen_registry.h).
#include <algorithm>
#include <array>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/random.h>

#include <cerrno>

#include "engine/listens.h"
#include "engine/port_lookup.h"
#include "fastcm/engine.h"
#include "shards/engine_config.h"
#include "mempool/mad_mempool.h"
#include "runtime/dpdk_runtime.h"
#include "shards/epoch.h"
#include "shards/half_open_table.h"
#include "shards/held_calls.h"
#include "shards/listen_registry.h"
#include "shards/mpsc_event_queue.h"
#include "shards/port_poller.h"
#include "shards/posted_call.h"
#include "shards/recent_slots.h"
#include "shards/remote_qpn_registry.h"
#include "shards/shard.h"
#include "shards/wait_word.h"

namespace fastcm {

namespace {

using shards::Shard;

static_assert(kMaxShards <= engine::CidPermutation::kMaxTweaks, "each shard's IDs have a permutation tweak of their own");

// EAL once per process (runtime/dpdk_runtime.h): the first engine that owns it starts it and the
// runtime stays for the process's lifetime; an application-owned EAL is attached to per engine.
// Lock: control path only (engine creation).
std::shared_ptr<const shards::DpdkRuntime> acquire_runtime(EalOwner owner) {
  static std::mutex lock;
  static std::shared_ptr<const shards::DpdkRuntime> owned;
  const std::scoped_lock guard(lock);
  std::unique_ptr<shards::DpdkRuntime> fresh;
  if (owner == EalOwner::application) {
    if (!shards::DpdkRuntime::attach_hosted(&fresh).ok()) return nullptr;
    return fresh;
  }
  if (!owned) {
    if (!shards::DpdkRuntime::start_owned(shards::DpdkOwnedConfig{}, &fresh).ok()) return nullptr;
    owned = std::move(fresh);
  }
  return owned;
}

std::string unique_name(const char* prefix) {
  static std::atomic<std::uint32_t> next{0};
  return prefix + std::to_string(next.fetch_add(1, std::memory_order_relaxed));
}

// The comm-ID key: the configured one, else 16 bytes from getrandom(2) (which blocks only until
// the kernel's pool is first initialized, at boot). Nullopt when getrandom fails.
std::optional<engine::SipKey> cid_key(const EngineConfig& config) {
  if (config.cid_key) return engine::SipKey{config.cid_key->k0, config.cid_key->k1};
  std::uint64_t words[2];
  auto* bytes = reinterpret_cast<unsigned char*>(words);
  std::size_t got = 0;
  while (got < sizeof words) {
    const ssize_t n = ::getrandom(bytes + got, sizeof words - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got += static_cast<std::size_t>(n);
  }
  return engine::SipKey{words[0], words[1]};
}

// The half-open table's hash key: a SipHash of the comm-ID key under labels of its own, so one
// getrandom serves both and a configured cid_key makes both reproducible, while neither key tells
// anything of the other.
engine::SipKey half_open_key(const engine::SipKey& cid) {
  return engine::SipKey{engine::sip_hash<2, 4>(cid, 0x3068, 2), engine::sip_hash<2, 4>(cid, 0x3168, 2)};  // "h0", "h1"
}

class ShardedEngine final : public Engine, private shards::ShardSet {
 public:
  ShardedEngine(Fabric& fabric, const Clock& clock, const EngineConfig& config, const shards::EngineSizing& sizing,
                const engine::SipKey& key, std::shared_ptr<const shards::DpdkRuntime> runtime,
                std::unique_ptr<mempool::MadAccounts> accounts, std::unique_ptr<mempool::MadMempool> pool)
      : fabric_(fabric),
        clock_(clock),
        config_(config),
        runtime_(std::move(runtime)),
        accounts_(std::move(accounts)),
        pool_(std::move(pool)),
        layout_(config.shards, key),
        epoch_(config.shards),
        listens_(config.max_listens, epoch_),
        remote_qpns_(config.max_endpoints),
        budget_(config.max_endpoints),
        half_open_(shards::HalfOpenTable::Limits{.per_source = config.half_open_per_source,
                                                 .per_listen = config.half_open_per_listen,
                                                 .listens = config.max_listens,
                                                 .source_slots = sizing.half_open_source_slots},
                   half_open_key(key)),
        retired_listens_(epoch_, config.max_listens * 2, "listens_retired"),
        posted_calls_(shards::posted_calls(config) > 0
                          ? std::make_unique<shards::PostedCallPool>(unique_name("fcm_pc"), config.posted_calls)
                          : nullptr) {
    const std::uint32_t per_shard = sizing.endpoints_per_shard;
    for (std::uint32_t s = 0; s < config.shards; ++s) {
      shard_pools_.push_back(std::make_unique<mempool::AccountedMadPool>(*pool_, *accounts_, s));
      shards_.push_back(std::make_unique<Shard>(
          shards::ShardEnv{.fabric = fabric,
                           .clock = clock,
                           .pool = *shard_pools_.back(),
                           .listens = listens_,
                           .remote_qpns = remote_qpns_,
                           .budget = budget_,
                           .half_open = half_open_,
                           .epoch = epoch_,
                           .listen_retired = retired_listens_,
                           .config = config_,
                           .layout = layout_,
                           .index = s,
                           .endpoints = per_shard},
          static_cast<shards::ShardSet&>(*this)));
    }
    for (std::uint16_t p = 0; p < fabric.ports().size(); ++p) {
      pollers_.push_back(std::make_unique<shards::PortPoller>(fabric, p, *pool_, static_cast<shards::ShardSet&>(*this), layout_));
      shards_[port_shard(p)]->add_port(*pollers_.back());
    }
    if (config.threading == Threading::workers) start_threads();
  }

  ~ShardedEngine() override {
    if (!threads_.empty()) {
      for (auto& shard : shards_) shard->stop();  // after whatever was queued before
      for (auto& t : threads_) t.join();
    }
    for (auto& queue : queues_) {
      std::array<shards::QueuedEvent, 16> events;
      while (const std::size_t n = queue->pop(events)) {
        for (std::size_t i = 0; i < n; ++i) release(events[i].event);
      }
    }
  }

  std::size_t progress() override {
    if (config_.threading != Threading::caller) return 0;
    // Each shard's batch as its worker would run it: its ports polled and its own MADs handled
    // there and then, the others posted to their shards (handled by a later shard's batch of
    // this call, or of the next).
    std::size_t work = 0;
    std::optional<std::uint64_t> now;  // read once, and only if a shard has a timer armed
    for (auto& shard : shards_) {
      // A shard without ports and with nothing queued or due is skipped whole: the batch, its
      // epoch round trip and its clock read. Nothing is lost: it was offline (waits for no one).
      if (!shard->polls_ports() && !shard->has_queued_work()) {
        const std::optional<std::uint64_t> next = shard->protocol().next_timer_ns();
        if (!next) continue;
        if (!now) now = clock_.now_ns();
        if (*next > *now) continue;
      }
      epoch_.online(shard->index());
      work += shard->run_batch();
      epoch_.offline(shard->index());
    }
    return work;
  }

  std::optional<std::uint64_t> next_timer_ns() const override {
    std::optional<std::uint64_t> earliest;
    for (const auto& shard : shards_) {
      if (!shard->owned_by_caller()) return std::nullopt;  // workers keep their own time
      const auto next = shard->protocol().next_timer_ns();
      if (next && (!earliest || *next < *earliest)) earliest = next;
    }
    return earliest;
  }

  // ---- listens (control path) ----------------------------------------------------------------
  Status listen(const ListenParams& params, Id& out) override {
    if (params.port != 0 && !has_port(params.port)) return Status::invalid_argument;
    return listens_.add(params, out);
  }

  // ---- endpoints -------------------------------------------------------------------------------
  Status create_id(const Delivery& delivery, void* context, Id& out) override {
    return create_endpoint(delivery, context, std::nullopt, out);
  }
  Status create_id_for_port(const Delivery& delivery, void* context, std::uint8_t port, Id& out) override {
    const std::optional<std::uint16_t> index = engine::port_index_of(fabric_.ports(), port);
    if (!index) return Status::invalid_argument;
    return create_endpoint(delivery, context, port_shard(*index), out);
  }
  Status set_context(Id id, void* context) override {
    return post_or_run(
        id, [&](engine::Protocol& p) { return p.set_context(id, context); },
        [&](shards::PostedCall& c) {
          c.prepare_set_context(id, context);
          return Status::ok;
        });
  }
  Status send_req(Id id, const ReqParams& params) override { return send(id, params, &engine::Protocol::send_req); }
  Status send_rep(Id id, const RepParams& params) override { return send(id, params, &engine::Protocol::send_rep); }
  Status send_rtu(Id id, std::span<const std::uint8_t> pd) override {
    return send_bytes(id, ApiCall::send_rtu, pd, &engine::Protocol::send_rtu);
  }
  Status send_rej(Id id, const RejParams& params) override { return send(id, params, &engine::Protocol::send_rej); }
  Status send_mra(Id id, const MraParams& params) override { return send(id, params, &engine::Protocol::send_mra); }
  Status send_dreq(Id id, std::span<const std::uint8_t> pd) override {
    return send_bytes(id, ApiCall::send_dreq, pd, &engine::Protocol::send_dreq);
  }
  Status send_drep(Id id, std::span<const std::uint8_t> pd) override {
    return send_bytes(id, ApiCall::send_drep, pd, &engine::Protocol::send_drep);
  }
  Status send_lap(Id id, const LapParams& params) override { return send(id, params, &engine::Protocol::send_lap); }
  Status send_apr(Id id, const AprParams& params) override { return send(id, params, &engine::Protocol::send_apr); }
  Status send_sidr_req(Id id, const SidrReqParams& params) override {
    return send(id, params, &engine::Protocol::send_sidr_req);
  }
  Status send_sidr_rep(Id id, const SidrRepParams& params) override {
    return send(id, params, &engine::Protocol::send_sidr_rep);
  }
  Status establish(Id id) override {
    return post_or_run(
        id, [&](engine::Protocol& p) { return p.establish(id); },
        [&](shards::PostedCall& c) {
          c.prepare_establish(id);
          return Status::ok;
        });
  }
  Status init_qp_attr(Id id, QpState state, QpAttr& out) const override {
    return on_shard_of(id, [&](engine::Protocol& p) { return p.init_qp_attr(id, state, out); });
  }
  Status last_private_data(Id id, std::span<const std::uint8_t>& out) const override {
    return on_shard_of(id, [&](engine::Protocol& p) { return p.last_private_data(id, out); });
  }
  Status connection_info(Id id, ConnectionInfo& out) const override {
    return on_shard_of(id, [&](engine::Protocol& p) { return p.connection_info(id, out); });
  }

  Status destroy(Id id, DestroyedFn on_destroyed, void* ctx) override {
    if (engine::is_listen_id(id)) {
      const Status s = listens_.remove(id);
      if (s == Status::ok && on_destroyed != nullptr) retire_listen(on_destroyed, ctx);
      return s;
    }
    Shard* shard = shard_of(id);
    if (shard == nullptr) return Status::stale_id;
    if (shard->owned_by_caller()) {
      const Status status = shard->protocol().destroy(id, on_destroyed, ctx);
      shard->end_direct_call();
      return status;
    }
    return shard->post_destroy(id, on_destroyed, ctx);
  }

  Status destroy_sync(Id id) override {
    if (Shard::on_worker_thread()) return Status::would_deadlock;
    Shard* shard = engine::is_listen_id(id) ? nullptr : shard_of(id);
    if (shard != nullptr && shard->owned_by_caller() && shard->protocol().in_callback_of(id)) {
      return Status::would_deadlock;  // its own callback is still running on this thread
    }
    std::atomic<std::uint32_t> done{0};
    const Status s = destroy(id, [](void* word) { shards::set_and_wake(*static_cast<std::atomic<std::uint32_t>*>(word)); }, &done);
    if (s == Status::ok) shards::wait_until_set(done);
    return s;
  }

  // ---- events and MADs -----------------------------------------------------------------------
  EventQueue* create_event_queue(std::uint32_t capacity) override {
    if (capacity == 0 || capacity > shards::MpscEventQueue::kMaxCapacity) return nullptr;
    const std::scoped_lock guard(queues_lock_);  // control path: queue creation only
    try {
      return queues_.emplace_back(std::make_unique<shards::MpscEventQueue>(capacity)).get();
    } catch (const std::exception&) {
      return nullptr;
    }
  }

  std::size_t poll(EventQueue& queue, std::span<Event> events) override {
    // An event of an endpoint destroyed after it was queued is dropped here: once destroy has
    // returned nothing about the endpoint reaches the application, whose on_destroyed may have
    // freed the context the event carries.
    // The check reads the endpoint's attachment word at the slot queued with the event: no decode
    // of the Id on the polling thread, which answers every event and so limits a poll-mode rate.
    auto& ring = static_cast<shards::MpscEventQueue&>(queue);
    std::array<shards::QueuedEvent, 32> popped;  // 7.4 KiB of stack
    std::size_t kept = 0;
    while (kept < events.size()) {
      const std::size_t got = ring.pop(std::span(popped).first(std::min(popped.size(), events.size() - kept)));
      if (got == 0) break;
      for (std::size_t i = 0; i < got; ++i) {
        const Event& event = popped[i].event;
        const Shard* shard = shard_of(event.id);
        if (shard != nullptr && shard->attached(event.id, popped[i].slot)) {
          events[kept++] = event;
          shards::RecentSlots::remember(serial_, event.id, popped[i].slot);
        } else {
          release(event);
        }
      }
    }
    return kept;
  }
  void retain(const Event& event) override {
    if (event.mad != nullptr) engine::retain(*const_cast<MadRef*>(event.mad));
  }
  void release(const Event& event) override { engine::release(*pool_, const_cast<MadRef*>(event.mad)); }

  // The shards key a thread's held calls by their ShardSet (Shard::post_call).
  void begin_call_batch() override {
    if (posted_calls_) (void)shards::HeldCalls::open(static_cast<const shards::ShardSet*>(this));
  }
  void end_call_batch() override {
    if (posted_calls_) shards::HeldCalls::close(static_cast<const shards::ShardSet*>(this));
  }

  // ---- observability -------------------------------------------------------------------------
  void counters(std::span<PortCounters> out) const override {
    std::fill(out.begin(), out.end(), PortCounters{});
    for (std::uint32_t s = 0; s < shards_.size(); ++s) add_shard(s, out);
    const auto ports = fabric_.ports();
    for (std::size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].port_num < out.size()) {
        out[ports[p].port_num].drops[static_cast<std::size_t>(DropReason::inbox_full)] +=
            pollers_[p]->inbox_full_drops();
      }
    }
  }
  void shard_counters(std::uint32_t shard, std::span<PortCounters> out) const override {
    std::fill(out.begin(), out.end(), PortCounters{});
    if (shard < shards_.size()) add_shard(shard, out);
  }
  std::uint32_t mad_buffers_in_use() const override { return accounts_->handshake_in_use(); }

  void levels(EngineLevels& out) const override {
    out.port_numbers.clear();
    for (const PortAttr& port : fabric_.ports()) out.port_numbers.push_back(port.port_num);
    out.endpoints = Level{.now = budget_.used(), .high_water = budget_.high_water(), .limit = budget_.limit()};
    out.shards.resize(shards_.size());
    for (std::uint32_t s = 0; s < shards_.size(); ++s) {
      out.shards[s] = ShardLevels{.inbox = shards_[s]->inbox_level(),
                                  .mad_sent = accounts_->level(s, engine::MadAccount::sent),
                                  .mad_kept = accounts_->level(s, engine::MadAccount::kept),
                                  .forwarded = shards_[s]->passed_on()};
    }
    // A port's MADs are forwarded by the worker that polls it (the constructor's assignment).
    for (std::size_t p = 0; p < pollers_.size(); ++p) out.shards[p % shards_.size()].forwarded += pollers_[p]->forwarded();
    const std::scoped_lock guard(queues_lock_);  // control path: beside queue creation only
    out.event_queues.clear();
    for (const auto& queue : queues_) out.event_queues.push_back(queue->level());
  }

 private:
  // ShardSet
  Shard& shard(std::uint32_t index) noexcept override { return *shards_[index]; }
  std::uint32_t shard_count() const noexcept override { return static_cast<std::uint32_t>(shards_.size()); }
  bool caller_driven() const noexcept override { return config_.threading == Threading::caller; }

  void start_threads() {
    // One worker per shard, polling the ports add_port gave it. Each thread registers with DPDK for
    // its own mempool cache (mad_mempool.h).
    for (auto& shard : shards_) {
      threads_.emplace_back([this, s = shard.get()] {
        const bool registered = runtime_->register_thread().ok();
        s->run_worker();
        if (registered) runtime_->unregister_thread();
      });
    }
  }

  [[nodiscard]] Shard* shard_of(Id id) const noexcept {
    const std::uint32_t s = layout_.shard_of(id.comm_id());
    return s < shards_.size() ? shards_[s].get() : nullptr;
  }

  // Runs `f(protocol)` on `shard`: inline on its own thread (or the driving caller's), else as a
  // command the calling thread waits for; would_deadlock from another shard's callback.
  template <typename F>
  Status run_on(Shard& shard, F&& f) const {
    if (shard.owned_by_caller()) {
      const Status status = f(shard.protocol());
      shard.end_direct_call();
      return status;
    }
    if (Shard::on_worker_thread()) return Status::would_deadlock;
    struct Call : shards::Command {
      std::remove_reference_t<F>* fn = nullptr;
      Status status = Status::ok;
    } call;
    call.fn = &f;
    call.run = [](shards::Command& c, engine::Protocol& p) noexcept {
      auto& self = static_cast<Call&>(c);
      self.status = (*self.fn)(p);
    };
    shard.post_command(call);
    return call.status;
  }
  template <typename F>
  Status on_shard_of(Id id, F&& f) const {
    Shard* shard = engine::is_listen_id(id) ? nullptr : shard_of(id);
    return shard == nullptr ? Status::stale_id : run_on(*shard, std::forward<F>(f));
  }

  // create_id, on shard `home` when it is given and that costs no wait a caller may not make.
  Status create_endpoint(const Delivery& delivery, void* context, std::optional<std::uint32_t> home, Id& out) {
    if (!delivery.valid()) return Status::invalid_argument;
    const auto create = [&](engine::Protocol& p) { return p.create_id(delivery, context, out); };
    const auto take_spare = [&](Shard& shard) {
      const std::optional<shards::SpareEndpoints::Spare> spare = shard.take_spare(delivery, context);
      if (!spare) return false;
      shards::RecentSlots::remember(serial_, spare->id, spare->slot);  // its send_req comes next
      out = spare->id;
      return true;
    };
    if (Shard::on_worker_thread()) {
      // From a callback: inline on the home shard when the callback runs there, else one of its
      // spares; failing both, on the callback's own shard (a callback cannot wait for another).
      if (home) {
        Shard& h = *shards_[*home];
        if (h.owned_by_caller()) return run_on(h, create);
        if (take_spare(h)) return Status::ok;
      }
      for (auto& s : shards_) {
        if (s->owned_by_caller()) return run_on(*s, create);
      }
    }
    // From the home shard, else round-robin, from the shards' spare endpoints when they keep some
    // (every shard's, before one is asked to make one). no_resources only once every shard said
    // so: the tables are per shard, and a shard that had no spare a moment ago may have made some
    // since (they hold the budget the refusal saw spent).
    const std::uint32_t first = home ? *home : next_shard_.fetch_add(1, std::memory_order_relaxed);
    const auto nth = [&](std::uint32_t i) -> Shard& { return *shards_[(first + i) % shards_.size()]; };
    for (std::uint32_t i = 0; i < shards_.size(); ++i) {
      if (take_spare(nth(i))) return Status::ok;
    }
    Status status = Status::no_resources;
    for (std::uint32_t i = 0; i < shards_.size() && status == Status::no_resources; ++i) {
      status = run_on(nth(i), create);
      if (status == Status::no_resources && take_spare(nth(i))) return Status::ok;
    }
    return status;
  }

  // A call that may be posted (fastcm/engine.h, "Posted calls"): `run(protocol)` where the calling
  // thread may run the shard's protocol, or without posted calls; otherwise `prepare(record)`
  // fills a pooled record (or, with none free, one on this stack that the shard is waited for)
  // and the shard gets it.
  template <typename Run, typename Prepare>
  Status post_or_run(Id id, Run&& run, Prepare&& prepare) {
    Shard* shard = engine::is_listen_id(id) ? nullptr : shard_of(id);
    if (shard == nullptr) return Status::stale_id;
    if (!posted_calls_ || shard->owned_by_caller()) return run_on(*shard, std::forward<Run>(run));
    const std::optional<std::uint32_t> slot = shards::RecentSlots::recall(serial_, id);
    if (!(slot ? shard->attached(id, *slot) : shard->attached(id))) return Status::stale_id;
    if (shards::PostedCall* record = posted_calls_->take()) {
      if (const Status s = prepare(*record); s != Status::ok) {
        posted_calls_->give_back(std::span(&record, 1));
        return s;
      }
      shard->post_call(*record);
      return Status::ok;
    }
    if (Shard::on_worker_thread()) return Status::would_deadlock;  // a shard cannot wait for another
    shards::PostedCall record;
    if (const Status s = prepare(record); s != Status::ok) return s;
    shard->post_call_and_wait(record);
    return Status::ok;
  }
  template <typename Params>
  Status send(Id id, const Params& params, Status (engine::Protocol::*method)(Id, const Params&) noexcept) {
    return post_or_run(
        id, [&](engine::Protocol& p) { return (p.*method)(id, params); },
        [&](shards::PostedCall& c) { return c.prepare(id, params); });
  }
  Status send_bytes(Id id, ApiCall call, std::span<const std::uint8_t> pd,
                    Status (engine::Protocol::*method)(Id, std::span<const std::uint8_t>) noexcept) {
    return post_or_run(
        id, [&](engine::Protocol& p) { return (p.*method)(id, pd); },
        [&](shards::PostedCall& c) { return c.prepare(id, call, pd); });
  }

  void retire_listen(DestroyedFn on_destroyed, void* ctx) {
    if (caller_driven()) {
      on_destroyed(ctx);
      return;
    }
    // A REQ callback may still carry the listen's context on a shard: wait for a grace period.
    // Full only while a callback stalls the shards; then wait for it (control path).
    while (!retired_listens_.defer(on_destroyed, ctx)) std::this_thread::yield();
    retired_listens_.reclaim();
  }

  void add_shard(std::uint32_t s, std::span<PortCounters> out) const {
    const auto ports = fabric_.ports();
    std::vector<PortCounters> by_index(ports.size());  // control path: a counters read
    shards_[s]->counters(by_index);
    for (std::size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].port_num >= out.size()) continue;
      out[ports[p].port_num] += by_index[p];
    }
  }

  bool has_port(std::uint8_t port_num) const noexcept {
    const auto ports = fabric_.ports();
    return std::any_of(ports.begin(), ports.end(), [&](const PortAttr& p) { return p.port_num == port_num; });
  }

  Fabric& fabric_;
  const Clock& clock_;
  EngineConfig config_;
  std::shared_ptr<const shards::DpdkRuntime> runtime_;
  std::unique_ptr<mempool::MadAccounts> accounts_;  // outlives the pool, which gives credits back
  std::unique_ptr<mempool::MadMempool> pool_;
  std::vector<std::unique_ptr<mempool::AccountedMadPool>> shard_pools_;  // one per shard
  engine::CidLayout layout_;
  shards::Epoch epoch_;
  shards::ListenRegistry listens_;
  shards::RemoteQpnRegistry remote_qpns_;
  engine::EndpointBudget budget_;
  shards::HalfOpenTable half_open_;
  shards::DeferQueue retired_listens_;  // listens' on_destroyed, after a grace period
  // Records of posted calls (EngineConfig::posted_calls); null when calls wait. Outlives the
  // shards, which give records back until their last batch.
  std::unique_ptr<shards::PostedCallPool> posted_calls_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::unique_ptr<shards::PortPoller>> pollers_;
  std::vector<std::thread> threads_;
  std::atomic<std::uint32_t> next_shard_{0};
  // This engine's key in the threads' RecentSlots.
  const std::uint32_t serial_ = shards::RecentSlots::new_engine_serial();
  mutable std::mutex queues_lock_;  // create_event_queue and levels
  std::deque<std::unique_ptr<shards::MpscEventQueue>> queues_;
};

}  // namespace

Status Engine::create(Fabric& fabric, const Clock& clock, const EngineConfig& config, std::unique_ptr<Engine>& out,
                      ConfigError* why) {
  out.reset();
  ConfigError ignored;
  ConfigError& reason = why != nullptr ? *why : ignored;
  reason = ConfigError{};
  const std::size_t ports = fabric.ports().size();
  if (const std::optional<ConfigError> broken = shards::check_config(config, ports)) {
    reason = *broken;
    return Status::invalid_argument;
  }
  const shards::EngineSizing sizing = shards::engine_sizing(config, ports);
  const std::optional<engine::SipKey> key = cid_key(config);
  if (!key) {
    reason.rule = "getrandom failed to draw the comm-ID key";
    return Status::no_resources;
  }
  auto runtime = acquire_runtime(config.eal);
  if (!runtime) {
    if (config.eal == EalOwner::application) {
      reason = ConfigError{ConfigField::eal, "EalOwner::application needs rte_eal_init before Engine::create"};
      return Status::invalid_argument;
    }
    reason.rule = "EAL failed to start";
    return Status::no_resources;
  }
  std::unique_ptr<mempool::MadAccounts> accounts;
  try {
    accounts = std::make_unique<mempool::MadAccounts>(
        config.shards, mempool::MadAccountLimits{.sent = sizing.sent_per_shard,
                                                 .kept = sizing.kept_per_shard,
                                                 .answer = sizing.answers_per_shard});
  } catch (const std::exception&) {
    reason.rule = "out of memory for the MAD accounts";
    return Status::no_resources;
  }
  std::unique_ptr<mempool::MadMempool> pool;
  const mempool::MadMempoolConfig pool_config{.name = unique_name("fcm_mad"),
                                              .capacity = sizing.pool_capacity,
                                              .cache_size = sizing.pool_cache,
                                              .sharing = config.threading == Threading::caller
                                                             ? mempool::PoolSharing::one_at_a_time
                                                             : mempool::PoolSharing::threads,
                                              .accounts = accounts.get()};
  if (!mempool::MadMempool::create(*runtime, pool_config, &pool).ok()) {
    reason.rule = "DPDK could not allocate the MAD pool";
    return Status::no_resources;
  }
  try {
    out = std::make_unique<ShardedEngine>(fabric, clock, config, sizing, *key, std::move(runtime), std::move(accounts),
                                          std::move(pool));
  } catch (const std::exception&) {
    reason.rule = "out of memory for the engine's tables";
    return Status::no_resources;
  }
  return Status::ok;
}

std::unique_ptr<Engine> Engine::create(Fabric& fabric, const Clock& clock, const EngineConfig& config) {
  std::unique_ptr<Engine> engine;
  (void)create(fabric, clock, config, engine, nullptr);
  return engine;
}

}  // namespace fastcm
