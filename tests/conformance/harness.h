// The conformance harness: a server and a client engine, a virtual clock that jumps straight to
// the next timer or delivery, and every event recorded. The engines sit on two HCAs of one
// loopback fabric, or (FASTCM_TEST_FABRIC=udp) on two udp fabrics over real sockets, 127.0.0.1
// for the server and 127.0.0.2 for the client, so a scenario runs unchanged over either.
//
// Tests observe the protocol only through what the engines expose (events, counters, Ids, QP
// attributes) and what crosses the fabric, never through engine internals.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fabric/roce_udp/udp_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"
#include "tests/udp/udp_test_support.h"

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

// The fabric the suite runs over: FASTCM_TEST_FABRIC=udp (ctest registers the suite a second time
// with it) or the loopback fabric (unset or "loopback").
enum class TestFabric : std::uint8_t { loopback, udp };
inline TestFabric suite_fabric() {
  const char* name = std::getenv("FASTCM_TEST_FABRIC");
  return name != nullptr && std::string_view(name) == "udp" ? TestFabric::udp : TestFabric::loopback;
}

// Skips a scenario that needs what only the loopback fabric has (fault injection, topologies of
// more HCAs or ports, LID routing, MADs injected from a tool HCA), naming what it needs.
#define FASTCM_LOOPBACK_ONLY(what)                                          \
  if (::fastcm::test::suite_fabric() != ::fastcm::test::TestFabric::loopback) \
  GTEST_SKIP() << "needs the loopback fabric: " << (what)

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

// The fabrics under a Cluster. Over udp, a scenario built for another loopback topology than the
// default two HCAs of one port each (or that uses loopback-only features) is skipped; the loopback
// fabric is still built then, so the fixture around it stays valid until the skip takes effect.
class ClusterFabrics {
 public:
  ClusterFabrics(const loopback::LoopbackConfig& config, const Clock& clock) {
    if (suite_fabric() == TestFabric::udp) {
      if (!is_default_topology(config)) {
        skip_test("needs the loopback fabric: a topology or port attributes of its own (not two HCAs of one default port each)");
      } else {
        std::string error;
        udp_ = roce::test::open_udp_fabrics({"127.0.0.1", "127.0.0.2"}, error);
        if (udp_.size() == 2) {
          server_ = udp_[0].get();
          client_ = udp_[1].get();
          return;
        }
        ADD_FAILURE() << "cannot open the udp fabrics: " << error;
      }
    }
    loopback_.emplace(config, clock);
    server_ = &loopback_->hca(0);
    client_ = &loopback_->hca(1);
  }

  [[nodiscard]] bool over_udp() const { return !udp_.empty(); }
  [[nodiscard]] Fabric& server() { return *server_; }
  [[nodiscard]] Fabric& client() { return *client_; }
  [[nodiscard]] const Fabric& server() const { return *server_; }
  [[nodiscard]] const Fabric& client() const { return *client_; }

  // The loopback fabric. Over udp there is none: a test that reaches for it lacks its
  // FASTCM_LOOPBACK_ONLY, and fails with this exception.
  [[nodiscard]] loopback::LoopbackFabric& loopback() {
    if (!loopback_) throw std::logic_error("a loopback-only feature used over udp: mark the test FASTCM_LOOPBACK_ONLY");
    return *loopback_;
  }

  // Over udp, the datagrams sent by either fabric (to the other: a scenario addresses no one else)
  // and not yet read by the other. Exact once the senders are idle.
  [[nodiscard]] std::uint64_t in_flight() const {
    std::uint64_t sent = 0;
    std::uint64_t received = 0;
    for (const auto& fabric : udp_) {
      const auto c = roce::udp_port_counters(*fabric, 0);
      sent += c->datagrams_sent;
      received += c->datagrams_received;
    }
    return sent > received ? sent - received : 0;
  }

  // Over udp, waits (bounded) until a datagram in flight can be read: the kernel may still hold it
  // between the sender's socket and the receiver's. False when none arrived in time.
  [[nodiscard]] bool wait_for_datagram() {
    std::array<pollfd, 2> fds{};
    for (std::size_t i = 0; i < fds.size(); ++i) {
      fds[i] = pollfd{.fd = udp_[i]->rx_event_fd(0), .events = POLLIN, .revents = 0};
    }
    constexpr int kTimeoutMs = 5000;
    return ::poll(fds.data(), fds.size(), kTimeoutMs) > 0;
  }

 private:
  // Records a skip of the running test, which then does not run its body (a constructor cannot
  // hold GTEST_SKIP itself: the macro returns a value).
  static void skip_test(const char* why) { GTEST_SKIP() << why; }

  static bool is_default_topology(const loopback::LoopbackConfig& config) {
    const loopback::LoopbackConfig standard = loopback::LoopbackConfig::two_hcas(1);
    return config.hcas.size() == standard.hcas.size() && config.hcas[0].ports == standard.hcas[0].ports &&
           config.hcas[1].ports == standard.hcas[1].ports && config.rx_queue_depth == standard.rx_queue_depth;
  }

  std::optional<loopback::LoopbackFabric> loopback_;
  std::vector<std::unique_ptr<Fabric>> udp_;
  Fabric* server_ = nullptr;  // HCA 0 or 127.0.0.1
  Fabric* client_ = nullptr;  // HCA 1 or 127.0.0.2
};

class Cluster {
 public:
  static constexpr std::uint64_t kSecond = 1'000'000'000;

  explicit Cluster(loopback::LoopbackConfig fabric_config = loopback::LoopbackConfig::two_hcas(1),
                   EngineConfig config = kTestEngine)
      : fabrics_(fabric_config, clock_),
        server_(fabrics_.server(), clock_, config),
        client_(fabrics_.client(), clock_, config),
        config_(std::move(fabric_config)) {}

  [[nodiscard]] VirtualClock& clock() { return clock_; }
  // The loopback fabric, for loopback-only scenarios (see FASTCM_LOOPBACK_ONLY).
  [[nodiscard]] loopback::LoopbackFabric& fabric() { return fabrics_.loopback(); }
  [[nodiscard]] Peer& server() { return server_; }
  [[nodiscard]] Peer& client() { return client_; }
  [[nodiscard]] const PortAttr& server_port(std::size_t i = 0) const { return fabrics_.server().ports()[i]; }
  [[nodiscard]] const PortAttr& client_port(std::size_t i = 0) const { return fabrics_.client().ports()[i]; }

  // Handles everything deliverable at the current time, without moving the clock.
  void settle() {
    for (int round = 0; round < 1'000'000; ++round) {
      const std::size_t work = server_.engine().progress() + client_.engine().progress();
      if (work != 0) continue;
      if (!fabrics_.over_udp()) {
        if (!delivery_due()) return;
      } else if (fabrics_.in_flight() == 0) {
        return;
      } else if (!fabrics_.wait_for_datagram()) {
        FAIL() << fabrics_.in_flight() << " datagrams sent between the engines never arrived";
      }
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
  // Over udp a datagram is deliverable as soon as it arrives: settle() waits for it.
  [[nodiscard]] std::optional<std::uint64_t> next_delivery() {
    if (fabrics_.over_udp()) {
      return fabrics_.in_flight() != 0 ? std::optional<std::uint64_t>(clock_.now_ns()) : std::nullopt;
    }
    std::optional<std::uint64_t> best;
    for (std::uint16_t h = 0; h < config_.hcas.size(); ++h) {
      for (std::uint16_t p = 0; p < config_.hcas[h].ports.size(); ++p) {
        const auto t = fabrics_.loopback().next_delivery_ns(loopback::PortRef{h, p});
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
  ClusterFabrics fabrics_;
  Peer server_;
  Peer client_;
  loopback::LoopbackConfig config_;
};

}  // namespace fastcm::test
