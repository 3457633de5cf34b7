// The conformance harness: a server and a client engine on two HCAs of one loopback fabric, a
// virtual clock that jumps straight to the next timer or delivery, and every event recorded.
//
// Tests observe the protocol only through what the engines expose (events, counters, Ids, QP
// attributes) and what crosses the fabric, never through engine internals.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"

namespace fastcm::test {

// The engine size the scenarios run with: a few connections need no more, and the default tables
// (64 Ki endpoints) cost ~0.5 s of setup per test under TSan.
inline constexpr EngineConfig kTestEngine{.max_endpoints = 256, .mad_buffers = 1024};

// The suite runs unchanged over every shard count: FASTCM_TEST_SHARDS picks it (ctest registers the
// suite at 1, 2 and 4 shards), and the test's thread drives the engine so the virtual clock rules.
inline EngineConfig suite_config(EngineConfig config) {
  config.threading = Threading::caller;
  if (const char* shards = std::getenv("FASTCM_TEST_SHARDS")) {
    config.shards = static_cast<std::uint32_t>(std::strtoul(shards, nullptr, 10));
  }
  return config;
}

inline std::unique_ptr<Engine> make_engine(Fabric& fabric, const Clock& clock, const EngineConfig& config) {
  auto engine = Engine::create(fabric, clock, suite_config(config));
  EXPECT_NE(engine, nullptr) << "Engine::create refused the configuration";
  return engine;
}

// An event with everything it borrowed copied out, so tests can look at it after the callback.
struct RecordedEvent {
  EventType type = EventType::req_received;
  Id id;
  void* context = nullptr;
  std::vector<std::uint8_t> private_data;
  std::vector<std::uint8_t> info;  // REJ ARI, APR or SIDR_REP additional information
  EventParams params;
  bool had_mad = false;
};

inline RecordedEvent record(const Event& e) {
  RecordedEvent r;
  r.type = e.type;
  r.id = e.id;
  r.context = e.context;
  r.private_data.assign(e.private_data.begin(), e.private_data.end());
  r.params = e.params;
  r.had_mad = e.mad != nullptr;
  std::visit(
      [&r](auto& p) {
        if constexpr (requires { p.ari; }) {
          r.info.assign(p.ari.begin(), p.ari.end());
          p.ari = {};
        } else if constexpr (requires { p.info; }) {
          r.info.assign(p.info.begin(), p.info.end());
          p.info = {};
        }
      },
      r.params);
  return r;
}

// One engine and what it saw. `react` runs inside the callback, after the event was recorded.
class Peer {
 public:
  Peer(Fabric& fabric, const Clock& clock, const EngineConfig& config)
      : engine_(make_engine(fabric, clock, config)) {}

  [[nodiscard]] Engine& engine() { return *engine_; }
  [[nodiscard]] const std::vector<RecordedEvent>& events() const { return events_; }
  [[nodiscard]] Delivery delivery() { return Delivery{.handler = &Peer::on_event, .handler_context = this}; }

  // The events of one type, in arrival order.
  [[nodiscard]] std::vector<RecordedEvent> of(EventType type) const {
    std::vector<RecordedEvent> out;
    std::copy_if(events_.begin(), events_.end(), std::back_inserter(out),
                 [type](const RecordedEvent& e) { return e.type == type; });
    return out;
  }
  [[nodiscard]] std::size_t count(EventType type) const { return of(type).size(); }

  [[nodiscard]] PortCounters port_counters(std::uint8_t port_num = 1) const {
    std::vector<PortCounters> all(port_num + 1u);
    engine_->counters(all);
    return all[port_num];
  }

  std::function<void(const Event&)> react;

 private:
  static void on_event(const Event& e, void* self_ptr) {
    auto* self = static_cast<Peer*>(self_ptr);
    self->events_.push_back(record(e));
    if (self->react) self->react(e);
  }

  std::unique_ptr<Engine> engine_;
  std::vector<RecordedEvent> events_;
};

class Cluster {
 public:
  static constexpr std::uint64_t kSecond = 1'000'000'000;

  explicit Cluster(loopback::LoopbackConfig fabric_config = loopback::LoopbackConfig::two_hcas(1),
                   EngineConfig config = kTestEngine)
      : fabric_(fabric_config, clock_),
        server_(fabric_.hca(0), clock_, config),
        client_(fabric_.hca(1), clock_, config),
        config_(std::move(fabric_config)) {}

  [[nodiscard]] VirtualClock& clock() { return clock_; }
  [[nodiscard]] loopback::LoopbackFabric& fabric() { return fabric_; }
  [[nodiscard]] Peer& server() { return server_; }
  [[nodiscard]] Peer& client() { return client_; }
  [[nodiscard]] const PortAttr& server_port(std::size_t i = 0) const { return config_.hcas[0].ports[i]; }
  [[nodiscard]] const PortAttr& client_port(std::size_t i = 0) const { return config_.hcas[1].ports[i]; }

  // Handles everything deliverable at the current time, without moving the clock.
  void settle() {
    for (int round = 0; round < 1'000'000; ++round) {
      const std::size_t work = server_.engine().progress() + client_.engine().progress();
      if (work == 0 && !delivery_due()) return;
    }
    FAIL() << "the engines never went idle";
  }

  // Runs for `ns` of virtual time, jumping from one timer or delivery to the next.
  void run_for(std::uint64_t ns) {
    const std::uint64_t end = clock_.now_ns() + ns;
    for (;;) {
      settle();
      const std::optional<std::uint64_t> next = next_event();
      if (!next || *next > end) break;
      clock_.set(std::max(*next, clock_.now_ns() + 1));
    }
    clock_.set(end);
    settle();
  }

  // A path from the client's port to the server's port (or the reverse), as a path record gives it.
  [[nodiscard]] Path path_to_server(std::size_t client_port_index = 0, std::size_t server_port_index = 0) const {
    return make_path(client_port(client_port_index), server_port(server_port_index));
  }
  [[nodiscard]] static Path make_path(const PortAttr& from, const PortAttr& to) {
    return loopback::path_record(from, to, 14);  // 67 ms
  }

 private:
  [[nodiscard]] bool delivery_due() {
    const std::optional<std::uint64_t> next = next_delivery();
    return next && *next <= clock_.now_ns();
  }
  [[nodiscard]] std::optional<std::uint64_t> next_delivery() {
    std::optional<std::uint64_t> best;
    for (std::uint16_t h = 0; h < config_.hcas.size(); ++h) {
      for (std::uint16_t p = 0; p < config_.hcas[h].ports.size(); ++p) {
        const auto t = fabric_.next_delivery_ns(loopback::PortRef{h, p});
        if (t && (!best || *t < *best)) best = t;
      }
    }
    return best;
  }
  [[nodiscard]] std::optional<std::uint64_t> next_event() {
    std::optional<std::uint64_t> best = next_delivery();
    for (Peer* peer : {&server_, &client_}) {
      const auto t = peer->engine().next_timer_ns();
      if (t && (!best || *t < *best)) best = t;
    }
    return best;
  }

  VirtualClock clock_;
  loopback::LoopbackFabric fabric_;
  Peer server_;
  Peer client_;
  loopback::LoopbackConfig config_;
};

}  // namespace fastcm::test
