// The stress suite's world: one loopback fabric with two HCAs of four ports, a server engine on
// the first and a client engine on the second, both with real worker threads (Threading::workers)
// on the steady clock, and the sizes and timeouts that keep every handshake short and bounded.
//
// Thread contract: built and torn down by the test's thread; the engines and the fabric are then
// used from every thread as their own contracts allow.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <span>
#include <thread>

#include "fabric/loopback/fault_rule.h"
#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"

namespace fastcm::stress {

inline constexpr std::uint8_t kPorts = 4;

// Service IDs: the storm's listen, and the ones the churn thread makes appear and disappear.
inline constexpr std::uint64_t kMainService = 0x5757'0000'0000'0001;
inline constexpr std::uint64_t kChurnServiceBase = 0x5757'0000'0000'0100;
inline constexpr std::uint32_t kChurnServices = 2;
// The listens that count the listen slots at the end (quiescence.h); no REQ asks for them.
inline constexpr std::uint64_t kCapacityServiceBase = 0x5757'0000'0001'0000;

// Timeout exponents (4.096 us * 2^t): packet life time 8 (~1 ms) and CM response timeouts 12
// (~17 ms, room for a 2-core machine running ~25 busy threads) make a REQ or REP retry after
// ~19 ms; four retries bound a handshake to ~0.1 s, and time-wait to a few ms. The engine's own
// MRAs ask for 13 (~34 ms), not the default minutes.
inline constexpr std::uint8_t kPacketLifeTime = 8;
inline constexpr std::uint8_t kCmResponseTimeout = 12;
inline constexpr std::uint8_t kMaxCmRetries = 4;
inline constexpr std::uint8_t kMraServiceTimeout = 13;
// ~1 s (2^18) per try, for tests that need each of their handshakes to succeed, not a storm's
// share of them. Under ThreadSanitizer a shard can go ~0.1-0.3 s without handling its inbox: the
// first report matching a suppression (tsan.supp) is symbolized on the thread that raised it, and
// schedstat and perf showed that shard running libbacktrace's DWARF reader, not waiting. That
// outlasts the ~0.1 s a handshake has above.
inline constexpr std::uint8_t kPatientCmResponseTimeout = 18;
// The loopback ports' CA ACK delay (default 16, ~268 ms): it enters the local ACK timeout the
// passive side infers its packet life time from, hence its REP retries and time-wait.
inline constexpr std::uint8_t kCaAckDelay = 4;

// The guard every wait runs under: past it the test fails instead of hanging.
inline constexpr std::chrono::seconds kGuard{60};

// Work is scaled down under sanitizers (on this 2-core machine a storm runs ~20x slower under
// TSan, ~8x under ASan); FASTCM_STRESS_PERCENT (1..1000) sets the scale instead, e.g. for a long
// local soak.
[[nodiscard]] inline std::uint32_t scaled(std::uint32_t release_count) {
#if defined(__SANITIZE_THREAD__)
  std::uint32_t percent = 20;
#elif defined(__SANITIZE_ADDRESS__)
  std::uint32_t percent = 40;
#else
  std::uint32_t percent = 100;
#endif
  if (const char* env = std::getenv("FASTCM_STRESS_PERCENT")) {
    percent = std::clamp<std::uint32_t>(static_cast<std::uint32_t>(std::strtoul(env, nullptr, 10)),
                                        1, 1000);
  }
  return std::max<std::uint32_t>(
      1, static_cast<std::uint32_t>(std::uint64_t{release_count} * percent / 100));
}

// The fault seed: FASTCM_STRESS_SEED overrides the fixed default, so a failing run can be replayed
// (thread interleavings still differ from run to run).
[[nodiscard]] inline std::uint64_t fault_seed() {
  if (const char* env = std::getenv("FASTCM_STRESS_SEED")) return std::strtoull(env, nullptr, 0);
  return 0x5EED'57E5;
}

[[nodiscard]] inline loopback::LoopbackConfig fabric_config() {
  loopback::LoopbackConfig config = loopback::LoopbackConfig::two_hcas(kPorts);
  for (auto& hca : config.hcas) {
    for (PortAttr& port : hca.ports) port.ca.local_ca_ack_delay = kCaAckDelay;
  }
  config.fault_seed = fault_seed();
  return config;
}

[[nodiscard]] inline EngineConfig engine_config(std::uint32_t shards) {
  EngineConfig config;
  config.shards = shards;
  config.threading = Threading::workers;
  config.max_endpoints = 4096;
  config.max_listens = 64;
  config.mad_buffers = 8192;
  config.mra_service_timeout = kMraServiceTimeout;
  return config;
}

// A path from `from` to `to` as a path record gives it (tests/conformance/harness.h's make_path,
// with the stress suite's short packet life time).
[[nodiscard]] inline Path make_path(const PortAttr& from, const PortAttr& to) {
  Path p;
  p.local_lid = from.lid;
  p.remote_lid = to.lid;
  p.local_gid = from.gid_table[0];
  p.remote_gid = to.gid_table[0];
  p.mtu = std::min(from.active_mtu, to.active_mtu);
  p.rate = from.active_rate;
  p.packet_life_time = kPacketLifeTime;
  p.port = from.port_num;
  return p;
}

// A REQ to `service` along `path` from QP `qpn`, with the patient timeouts of tests that need each
// handshake to succeed.
[[nodiscard]] inline ReqParams patient_req(std::uint64_t service, const Path& path, Qpn qpn) {
  ReqParams req;
  req.service_id = service;
  req.primary = path;
  req.qpn = qpn;
  req.remote_cm_response_timeout = kPatientCmResponseTimeout;
  req.local_cm_response_timeout = kPatientCmResponseTimeout;
  req.max_cm_retries = kMaxCmRetries;
  return req;
}

// Fabric, clock and the two engines. Faults are installed before the engines start (set_fault
// must not race a sender). Members are destroyed in reverse: the engines (joining their threads)
// before the fabric and the clock they borrow. Tests end with stop_engines(), which fails instead
// of hanging when an engine does not stop.
class StressCluster {
 public:
  StressCluster(const EngineConfig& server, const EngineConfig& client,
                std::span<const loopback::FaultRule> faults = {})
      : world_(std::make_unique<World>()) {
    for (const loopback::FaultRule& rule : faults) world_->fabric.set_fault(rule);
    server_ = Engine::create(world_->fabric.hca(0), world_->clock, server);
    client_ = Engine::create(world_->fabric.hca(1), world_->clock, client);
  }
  ~StressCluster() {
    if ((server_ || client_) && !stop_engines(kGuard))
      ADD_FAILURE() << "an engine's destructor did not return";
    if (leaked_) static_cast<void>(world_.release());
  }
  StressCluster(const StressCluster&) = delete;
  StressCluster& operator=(const StressCluster&) = delete;

  [[nodiscard]] bool ready() const { return server_ != nullptr && client_ != nullptr; }
  [[nodiscard]] Engine& server() { return *server_; }
  [[nodiscard]] Engine& client() { return *client_; }
  [[nodiscard]] loopback::LoopbackFabric& fabric() { return world_->fabric; }
  [[nodiscard]] const PortAttr& server_port(std::size_t i) const {
    return world_->config.hcas[0].ports[i];
  }
  [[nodiscard]] const PortAttr& client_port(std::size_t i) const {
    return world_->config.hcas[1].ports[i];
  }
  [[nodiscard]] Path path(std::size_t client_port_index, std::size_t server_port_index) const {
    return make_path(client_port(client_port_index), server_port(server_port_index));
  }

  // Destroys both engines (joining their threads) on a helper thread, waiting up to `limit`.
  // False when a destructor did not return: the engines' threads are then left running and this
  // cluster leaks what they use (fabric, clock) instead of freeing it under them.
  bool stop_engines(std::chrono::seconds limit) {
    std::packaged_task<void()> task(
        [client = std::move(client_), server = std::move(server_)]() mutable {
          client.reset();
          server.reset();
        });
    std::future<void> done = task.get_future();
    std::thread(std::move(task)).detach();
    if (done.wait_for(limit) == std::future_status::ready) return true;
    leaked_ = true;
    return false;
  }

 private:
  struct World {
    SteadyClock clock;
    loopback::LoopbackConfig config = fabric_config();
    loopback::LoopbackFabric fabric{config, clock};
  };
  std::unique_ptr<World> world_;
  std::unique_ptr<Engine> server_;
  std::unique_ptr<Engine> client_;
  bool leaked_ = false;  // an engine outlived stop_engines: world_ must outlive its threads
};

// An event queue of `capacity` on each engine of `cluster`, and a listen on `service` whose events
// go to the server's; both null when an engine refused one of them.
struct ListeningQueues {
  EventQueue* server = nullptr;
  EventQueue* client = nullptr;
};
[[nodiscard]] inline ListeningQueues listening_queues(StressCluster& cluster, std::uint64_t service,
                                                      std::uint32_t capacity) {
  const ListeningQueues queues{.server = cluster.server().create_event_queue(capacity),
                               .client = cluster.client().create_event_queue(capacity)};
  if (queues.server == nullptr || queues.client == nullptr) return {};
  ListenParams listen;
  listen.service_id = service;
  listen.delivery = Delivery{.queue = queues.server};
  Id listen_id;
  if (cluster.server().listen(listen, listen_id) != Status::ok) return {};
  return queues;
}

}  // namespace fastcm::stress
