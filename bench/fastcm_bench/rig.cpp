#include "bench/fastcm_bench/rig.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench/fastcm_bench/target_path.h"
#include "engine/mad/units.h"

namespace fastcm::bench {

namespace {

constexpr std::uint32_t kSlack = 4096;       // endpoints and MADs beyond the computed need
constexpr std::uint32_t kMaxQueue = 1u << 20;  // the engine's and the fabric's queue limit
// Bytes of EAL heap per pooled MAD: the 384-byte MadRef in a 448-byte mempool element, plus its
// slot in the pool's ring (rounded up to a power of two), rounded up.
constexpr std::uint64_t kEalBytesPerMad = 512;
constexpr std::uint64_t kEalHeadroomMb = 256;  // the posted-call pools and what EAL itself takes
// Time-wait on another fabric: 2 packet life times of 4 us (target_path.h) plus the peer's ACK
// delay, 4.3 s for an ACK delay exponent of 20, above what HCAs report (Soft-RoCE: 15).
constexpr auto kTimewaitBound = std::chrono::seconds(5);
// Endpoints a --role server has room for in time-wait at once: half a second of disconnects at
// 130,000 per second with rxe's 134 ms time-wait.
constexpr std::uint64_t kServerTimewaitEndpoints = 65'536;

std::uint32_t clamp_queue(std::uint64_t want, std::uint32_t floor) {
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(want, floor, kMaxQueue));
}

// The engines use the tool's EAL as an application-owned one: an engine-owned EAL has a fixed
// 64 MiB heap (DpdkOwnedConfig's default, which EngineConfig cannot change), about 140,000 pooled
// MADs for the whole process, while a million established connections keep two MADs per
// endpoint on each side. The EAL is set up exactly as the engine would (no hugepages, PCI,
// telemetry or shared config; the caller's CPU affinity restored), with a heap sized for the run.
std::unique_ptr<shards::DpdkRuntime> start_eal(const RigSizing& sizing) {
  std::unique_ptr<shards::DpdkRuntime> runtime;
  shards::DpdkOwnedConfig config;
  config.memory_mb = sizing.eal_memory_mb;
  const shards::DpdkStatus status = shards::DpdkRuntime::start_owned(config, &runtime);
  if (!status.ok()) {
    throw std::runtime_error("DPDK EAL (" + std::to_string(sizing.eal_memory_mb) +
                             " MiB heap) failed to start: " + status.message);
  }
  return runtime;
}

// Time-wait is two packet life times plus the peer's CA ACK delay (IBTA 12.9.8.7): with a packet
// life time of 0 in the paths and an ACK delay of 0 on every port it lasts about 12 us, as on a
// one-switch fabric, instead of the 268 ms the default ACK delay (16) would add to every
// --disconnect life cycle.
loopback::LoopbackConfig fabric_config(const Options& options, const RigSizing& sizing) {
  auto config = loopback::LoopbackConfig::two_hcas(static_cast<std::uint8_t>(options.ports));
  if (options.flood_rate > 0) {
    config.hcas.push_back({.ports = {loopback::LoopbackConfig::default_port(2, 1)}});
  }
  for (auto& hca : config.hcas) {
    for (auto& port : hca.ports) port.ca.local_ca_ack_delay = 0;
  }
  config.rx_queue_depth = sizing.rx_queue_depth;
  config.fault_seed = options.seed;
  return config;
}

// The engines each need the heap for their own MAD pool; one engine per side the role has.
std::uint32_t engine_count(const Options& options) { return options.role == Role::both ? 2 : 1; }

std::vector<Path> target_paths(const Fabric& fabric, const Options& options) {
  std::vector<Path> paths;
  for (const PortAttr& port : fabric.ports()) {
    std::string error;
    const std::optional<Path> path =
        target_path(port, options.target, options.source_ip, error);
    if (!path) throw std::runtime_error(error);
    paths.push_back(*path);
  }
  return paths;
}

// Engine::counters() spans are indexed by port number (index 0 unused).
std::size_t counter_slots(const Fabric& fabric) {
  std::uint8_t max_port = 0;
  for (const PortAttr& port : fabric.ports()) max_port = std::max(max_port, port.port_num);
  return std::size_t{max_port} + 1;
}

}  // namespace

RigSizing size_rig(const Options& options) {
  RigSizing s;
  const std::uint64_t window = options.window;
  // Without --disconnect every connection stays: the limit, plus a lane's connection in flight,
  // plus failed ones passing through time-wait. With it, each lane holds at most one client
  // endpoint, and the server a few per lane (the one in flight, others in time-wait).
  std::uint64_t endpoints =
      options.disconnect ? 4 * window + kSlack : options.connection_limit() + window + kSlack;
  if (!options.disconnect) {
    // A lane stays on the client shard that made its first endpoint (created round-robin from
    // the main thread), and each shard's table holds 2 x max_endpoints / shards slots
    // (shards/sharded_engine.cpp): with fewer lanes than shards, or an uneven split, one shard
    // needs more than an even share.
    const std::uint64_t lanes_per_shard = (window + options.shards - 1) / options.shards;
    const std::uint64_t per_lane = (options.connection_limit() + window - 1) / window;
    const std::uint64_t shard_need = lanes_per_shard * per_lane + kSlack;
    endpoints = std::max(endpoints, std::uint64_t{options.shards} * ((shard_need + 1) / 2));
  }
  // A --config file's sizes (SizeFloors), where larger than the run's.
  const SizeFloors& floors = options.floors;
  endpoints = std::max<std::uint64_t>(endpoints, floors.max_endpoints);
  s.max_endpoints = static_cast<std::uint32_t>(endpoints);
  s.shard_inbox = std::max(clamp_queue(4 * window, 4096), floors.shard_inbox);
  s.rx_queue_depth = std::max(clamp_queue(4 * window, 2048), floors.rx_queue_depth);
  s.event_queue_capacity = clamp_queue(4 * window, 4096);
  s.backlog = std::max(static_cast<std::uint32_t>(2 * window + 1024), floors.backlog);
  // Every lane may have its handshake half-open at once, all from one port (one source); a
  // --config file's bounds (else EngineConfig's defaults) where larger.
  s.half_open_per_source = std::max(options.engine.half_open_per_source, options.window);
  s.half_open_per_listen = std::max(options.engine.half_open_per_listen, options.window);
  // An endpoint keeps its last sent and last received MAD until it is established, and none after
  // (the storm's REP and RTU carry no private data: Protocol::settle_established); add full
  // inboxes, and in poll mode the MADs that queued events hold.
  // A server in another process also holds two (the DREQ received, the DREP sent) in each
  // endpoint in time-wait, which lasts its peer's ACK delay (rxe: 15, 134 ms); the loopback's
  // lasts microseconds.
  const std::uint64_t holding =
      options.disconnect ? endpoints
      : options.role == Role::server
          ? std::min(endpoints, window + kSlack + kServerTimewaitEndpoints)
          : window + kSlack;
  const std::uint64_t mads = 2 * holding + std::uint64_t{options.shards} * s.shard_inbox +
                             (options.mode == DeliveryMode::poll ? s.event_queue_capacity : 0) +
                             kSlack;
  s.mad_buffers = std::max(static_cast<std::uint32_t>(mads), floors.mad_buffers);
  s.eal_memory_mb = static_cast<std::uint32_t>(
      (engine_count(options) * (std::uint64_t{s.mad_buffers} + 2 * kSlack) * kEalBytesPerMad + (1u << 20) - 1) /
          (1u << 20) +
      kEalHeadroomMb);
  return s;
}

Rig::Rig(const Options& options, const RigSizing& sizing, std::unique_ptr<Fabric> fabric)
    : options_(options), sizing_(sizing), runtime_(start_eal(sizing)), fabric_(std::move(fabric)) {
  if (options.role != Role::both) {
    if (!fabric_) throw std::runtime_error("no fabric for the " + std::string(to_string(options.role)));
    (options.role == Role::server ? server_fabric_ : client_fabric_) = fabric_.get();
    if (options.role == Role::client) client_paths_ = target_paths(*fabric_, options);
    return;
  }
  config_ = fabric_config(options, sizing);
  loopback_ = std::make_unique<loopback::LoopbackFabric>(config_, clock_);
  server_fabric_ = &loopback_->hca(0);
  client_fabric_ = &loopback_->hca(1);
  std::uint8_t packet_life_time = 0;
  if (options.loss_pct > 0 || options.dup_pct > 0 || options.reorder_pct > 0) {
    loopback::FaultRule rule;
    rule.loss_pct = options.loss_pct;
    rule.dup_pct = options.dup_pct;
    rule.reorder_pct = options.reorder_pct;
    loopback_->set_fault(rule);
    // The paths' packet life time covers the longest hold of a reordered MAD: time-wait lasts two
    // packet life times (IBTA 12.9.8.7) so that no copy of a connection's MADs is in flight when
    // its endpoint goes; a REQ copy held longer would open a second connection at the listen.
    if (options.reorder_pct > 0) {
      packet_life_time = mad::ns_to_timeout_exponent(rule.delay_ns + rule.reorder_window_ns);
    }
  }
  for (std::uint32_t p = 0; p < options.ports; ++p) {
    client_paths_.push_back(loopback::path_record(config_.hcas[1].ports[p],
                                                  config_.hcas[0].ports[p], packet_life_time));
  }
  if (has_flood()) {
    flood_path_ = loopback::path_record(flood_port(), config_.hcas[0].ports[0], packet_life_time);
  }
}

Rig::~Rig() {
  client_.reset();
  server_.reset();
}

void Rig::create_engines() {
  EngineConfig config = options_.engine;
  config.shards = options_.shards;
  config.threading = Threading::workers;
  config.eal = EalOwner::application;
  config.shard_inbox = sizing_.shard_inbox;
  config.max_endpoints = sizing_.max_endpoints;
  config.mad_buffers = sizing_.mad_buffers;
  config.half_open_per_source = sizing_.half_open_per_source;
  config.half_open_per_listen = sizing_.half_open_per_listen;
  config.posted_calls = options_.posted_calls;
  if (!options_.pcap_path.empty()) {
    Fabric*& tapped = server_fabric_ != nullptr ? server_fabric_ : client_fabric_;
    tap_ = std::make_unique<pcap_tap::PcapTap>(
        *tapped, pcap_tap::PcapTapConfig{.path = options_.pcap_path, .max_bytes = options_.pcap_limit});
    tapped = tap_.get();
  }
  if (server_fabric_ != nullptr) {
    server_ = Engine::create(*server_fabric_, clock_, config);
    if (!server_) throw std::runtime_error("the server engine could not be created");
  }
  if (client_fabric_ != nullptr) {
    client_ = Engine::create(*client_fabric_, clock_, config);
    if (!client_) throw std::runtime_error("the client engine could not be created");
  }
}

EngineTotals Rig::totals(const Engine& engine, const Fabric& fabric, bool server) const {
  EngineTotals t;
  std::vector<PortCounters> ports(counter_slots(fabric));
  // The whole engine's counters: the shards' and the pollers' (a MAD they found no room for in a
  // shard's inbox is counted inbox_full per port, in no shard's counters).
  engine.counters(ports);
  for (std::size_t p = 1; p < ports.size(); ++p) {
    const PortCounters& c = ports[p];
    for (const MessageCounters& m : c.messages) {
      t.mads_sent += m.sent;
      t.retries += m.retried;
      t.duplicates += m.duplicate;
    }
    for (std::size_t r = 0; r < kDropReasons; ++r) t.drops[r] += c.drops[r];
  }
  t.reqs_per_shard.assign(options_.shards, 0);
  for (std::uint32_t s = 0; s < options_.shards; ++s) {
    engine.shard_counters(s, ports);
    for (std::size_t p = 1; p < ports.size(); ++p) {
      const MessageCounters& req = ports[p].of(CmMessageKind::req);
      t.reqs_per_shard[s] += server ? req.received : req.sent;
    }
  }
  EngineLevels levels;
  engine.levels(levels);
  for (const ShardLevels& shard : levels.shards) t.forwarded += shard.forwarded;
  return t;
}

bool Rig::drain_pcap() const { return !tap_ || tap_->drain(std::chrono::seconds(10)); }

RigCounters Rig::counters() const {
  RigCounters c;
  if (tap_) c.pcap = tap_->counters();
  if (server_) c.server = totals(*server_, *server_fabric_, true);
  if (client_) c.client = totals(*client_, *client_fabric_, false);
  for (std::uint16_t h = 0; h < config_.hcas.size(); ++h) {
    for (std::uint16_t p = 0; p < config_.hcas[h].ports.size(); ++p) {
      const loopback::PortCounters f = loopback_->counters(loopback::PortRef{h, p});
      c.fabric_lost += f.dropped_by_fault;
      c.fabric_duplicated += f.duplicated;
      c.fabric_delayed += f.delayed;
      c.fabric_queue_full += f.dropped_queue_full;
      if (h == 0) c.server_queue_full += f.dropped_queue_full;
      if (h == kFloodHca) c.flood_queue_full += f.dropped_queue_full;
    }
  }
  return c;
}

std::uint64_t Rig::client_dreps_received() const {
  std::vector<PortCounters> ports(counter_slots(*client_fabric_));
  client_->counters(ports);
  std::uint64_t n = 0;
  for (std::size_t p = 1; p < ports.size(); ++p) n += ports[p].of(CmMessageKind::drep).received;
  return n;
}

std::uint64_t Rig::fabric_drops() const {
  std::uint64_t n = 0;
  for (std::uint16_t h = 0; h < config_.hcas.size(); ++h) {
    for (std::uint16_t p = 0; p < config_.hcas[h].ports.size(); ++p) {
      const loopback::PortCounters f = loopback_->counters(loopback::PortRef{h, p});
      n += f.dropped_by_fault + f.dropped_queue_full;
    }
  }
  return n;
}

Status Rig::destroy(Engine& engine, Id id) {
  const auto handled = [](void* counter) {
    // Release: partner of drained()'s acquire load; the shard's work for the destroy (the DREQ
    // it keeps) happens-before a drain that counts it handled.
    static_cast<std::atomic<std::uint64_t>*>(counter)->fetch_add(1, std::memory_order_release);
  };
  // Counted before the call, whose handler may run before it returns: handled never passes issued.
  destroys_issued_.fetch_add(1, std::memory_order_relaxed);
  const Status s = engine.destroy(id, handled, &destroys_handled_);
  if (s != Status::ok) destroys_issued_.fetch_sub(1, std::memory_order_relaxed);
  return s;
}

bool Rig::drained() const {
  const std::uint64_t handled = destroys_handled_.load(std::memory_order_acquire);
  return handled == destroys_issued_.load(std::memory_order_relaxed) &&
         (!server_ || server_->mad_buffers_in_use() == 0) &&
         (!client_ || client_->mad_buffers_in_use() == 0) &&
         (!loopback_ || loopback_->total_pending() == 0);
}

bool Rig::wait_drained(std::chrono::steady_clock::duration limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool done = false;
  while (!(done = drained()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done;
}

std::chrono::steady_clock::duration Rig::timewait_bound() const noexcept {
  return loopback_ ? std::chrono::steady_clock::duration::zero()
                   : std::chrono::steady_clock::duration(kTimewaitBound);
}

}  // namespace fastcm::bench
