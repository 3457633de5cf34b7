// Latency of Engine::destroy() called from an application thread while the endpoints' callbacks
// are busy. destroy() promises to return at once (no callback starts afterwards, one in flight is
// not waited for), so its latency must stay far below a callback's run time even when the
// endpoint it destroys is inside its callback at that moment.
//
// Setup (untimed, per iteration): kConnections handshakes from a client engine to a server engine
// (both Threading::workers, 2 shards, one loopback fabric); every server callback spins
// kCallbackSpin, so the server's shards are always busy. Measured part, two ways (argument
// `inside`):
//   inside=0  the server's DREQ callbacks wait at a gate, so while the client sends a DREQ for
//             every connection the first ones hold both server shards and the rest queue; then
//             the gate opens and the benchmark thread destroys the server's endpoints in order as
//             fast as it can while the shards work through the queued callbacks: destroys race
//             queued and running callbacks;
//   inside=1  for each connection the client sends its DREQ and the server's DREQ callback holds
//             until its endpoint is destroyed; the benchmark thread waits until that callback
//             runs, then destroys the endpoint: every destroy is made while the endpoint's own
//             callback runs, so a destroy() that waited for it would never return (the hold gives
//             up after kHoldLimit, counted in hold_timeouts).
// (A 5 us callback alone is too short a window to hit from outside on two shared cores: the
// benchmark thread is often descheduled across it.)
// Each destroy() call is timed alone with steady_clock into a preallocated array. Teardown
// (untimed): the client destroys its endpoints and the benchmark waits until both engines have
// released every MAD.
//
// Time column: the sum of one iteration's kConnections destroy() calls (manual time). Counters:
//   p50_us, p99_us, max_us     destroy() latency over every call of the run
//   running_share              share of destroys made while some server callback was running
//   self_running_share         share made while the destroyed endpoint's own callback was running
//   self_running_max_us        the slowest of those: must stay far below kCallbackSpin
//   hold_timeouts              DREQ callbacks that gave up waiting (gate or destroy): must be 0
// A failed handshake, a refused destroy, a callback that never shows up (inside=1) or a teardown
// that does not drain stops the benchmark with an error.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "bench/storm_rig.h"
#include "fastcm/engine.h"

namespace {

using namespace fastcm;
using namespace fastcm::bench;
using WallClock = std::chrono::steady_clock;

constexpr std::uint32_t kConnections = 1024;
constexpr std::uint32_t kIterations = 4;
constexpr std::uint32_t kShards = 2;
constexpr auto kCallbackSpin = std::chrono::microseconds(5);
constexpr auto kDeadline = std::chrono::seconds(60);
constexpr auto kHoldLimit = std::chrono::seconds(1);

void spin(std::chrono::nanoseconds d) {
  const auto until = WallClock::now() + d;
  while (WallClock::now() < until) {
  }
}

// One connection as the server's callbacks and the benchmark thread see it.
struct Conn {
  Id client_id;
  Id server_id;  // written by the server's req_received callback, read after `established`
  // Set while a server callback of this connection runs (release at entry and exit); the
  // benchmark thread samples it (relaxed: a statistic, nothing is published through it).
  std::atomic<bool> in_callback{false};
  // Set by the benchmark thread after destroying server_id (release); its partner is the acquire
  // load in hold(), the DREQ callback waiting for it (inside=1).
  std::atomic<bool> destroyed{false};
};

struct Rig;
void on_server_event(const Event& e, void* ctx);
void on_client_event(const Event& e, void* ctx);

struct Rig {
  Rig() : config(storm_fabric(1, 2 * kConnections)), fabric(config, clock) {
    server = Engine::create(fabric.hca(0), clock, engine_config());
    client = Engine::create(fabric.hca(1), clock, engine_config());
    if (!server || !client) return;
    listening = server->listen(storm_listen(kConnections, &on_server_event, this), listen_id) == Status::ok;
  }

  static EngineConfig engine_config() {
    EngineConfig c;
    c.shards = kShards;
    c.shard_inbox = 2 * kConnections;
    c.max_endpoints = 2 * kConnections;
    c.mad_buffers = 4 * kConnections + kShards * c.shard_inbox;
    return c;
  }

  [[nodiscard]] bool ready() const { return server && client && listening; }
  [[nodiscard]] bool drained() const {
    return server->mad_buffers_in_use() == 0 && client->mad_buffers_in_use() == 0 &&
           fabric.total_pending() == 0;
  }

  void settle(bool ok) {
    if (!ok) failed.fetch_add(1, std::memory_order_relaxed);
    // acq_rel chain: the last settler's release() carries every connection's server_id write to
    // the benchmark thread's try_acquire_for.
    if (settled.fetch_add(1, std::memory_order_acq_rel) + 1 == kConnections) established.release();
  }

  SteadyClock clock;
  loopback::LoopbackConfig config;
  loopback::LoopbackFabric fabric;
  std::unique_ptr<Engine> server;
  std::unique_ptr<Engine> client;
  Id listen_id;
  bool listening = false;
  std::vector<Conn> conns = std::vector<Conn>(kConnections);
  std::atomic<std::uint32_t> settled{0};
  std::atomic<std::uint32_t> failed{0};
  // Server callbacks running now; relaxed (sampled as a statistic).
  std::atomic<std::uint32_t> busy{0};
  // inside=0: DREQ callbacks wait until the benchmark thread opens the gate (release store; the
  // acquire partner is hold()'s load). inside=1: they wait for their endpoint's `destroyed`.
  bool inside = false;  // written before the first DREQ is sent (ordered by its hand-off)
  std::atomic<bool> gate_open{true};
  std::atomic<std::uint32_t> hold_timeouts{0};  // relaxed: a count read after teardown
  std::binary_semaphore established{0};
};

// Marks the connection's callback as running for its duration and spins.
struct BusyCallback {
  BusyCallback(Rig& r, Conn* c) : rig(r), conn(c) {
    rig.busy.fetch_add(1, std::memory_order_relaxed);
    if (conn != nullptr) conn->in_callback.store(true, std::memory_order_release);
    spin(kCallbackSpin);
  }
  ~BusyCallback() {
    if (conn != nullptr) conn->in_callback.store(false, std::memory_order_release);
    rig.busy.fetch_sub(1, std::memory_order_relaxed);
  }
  BusyCallback(const BusyCallback&) = delete;
  BusyCallback& operator=(const BusyCallback&) = delete;
  Rig& rig;
  Conn* conn;
};

// A DREQ callback's wait (see the top of the file), yielding so the client's threads can run.
void hold(Rig& rig, const Conn* conn) {
  const std::atomic<bool>& until =
      rig.inside && conn != nullptr ? conn->destroyed : rig.gate_open;
  const auto deadline = WallClock::now() + kHoldLimit;
  while (!until.load(std::memory_order_acquire)) {
    if (WallClock::now() > deadline) {
      rig.hold_timeouts.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::this_thread::yield();
  }
}

void on_server_event(const Event& e, void* ctx) {
  auto& rig = *static_cast<Rig*>(ctx);
  auto* conn = static_cast<Conn*>(e.context);
  switch (e.type) {
    case EventType::req_received: {
      const auto& req = std::get<ReqReceived>(e.params);
      conn = &rig.conns[req.remote_qpn - kClientQpnBase];
      const BusyCallback busy(rig, conn);
      conn->server_id = e.id;
      const RepParams rep = accepting_rep(req);
      if (rig.server->set_context(e.id, conn) != Status::ok ||
          rig.server->send_rep(e.id, rep) != Status::ok) {
        rig.settle(false);
      }
      break;
    }
    case EventType::rtu_received: {
      const BusyCallback busy(rig, conn);
      rig.settle(true);
      break;
    }
    case EventType::rep_error:
    case EventType::rej_received: rig.settle(false); break;
    case EventType::dreq_received: {
      const BusyCallback busy(rig, conn);
      hold(rig, conn);
      break;
    }
    default: {
      const BusyCallback busy(rig, conn);
      break;
    }
  }
}

void on_client_event(const Event& e, void* ctx) {
  auto& rig = *static_cast<Rig*>(ctx);
  switch (e.type) {
    case EventType::rep_received:
      if (rig.client->send_rtu(e.id, {}) != Status::ok) rig.settle(false);
      break;
    case EventType::req_error:
    case EventType::rej_received: rig.settle(false); break;
    default: break;
  }
}

// Establishes every connection; false (with the reason) on any failure.
bool establish_all(Rig& rig, std::string& error) {
  rig.settled.store(0, std::memory_order_relaxed);
  rig.failed.store(0, std::memory_order_relaxed);
  const Delivery delivery{.handler = &on_client_event, .handler_context = &rig};
  for (std::uint32_t i = 0; i < kConnections; ++i) {
    const ReqParams p = storm_req(rig.config, 0, i);
    Conn& conn = rig.conns[i];
    if (rig.client->create_id(delivery, nullptr, conn.client_id) != Status::ok ||
        rig.client->send_req(conn.client_id, p) != Status::ok) {
      rig.settle(false);
    }
  }
  if (!rig.established.try_acquire_for(kDeadline)) {
    error = "handshakes timed out";
    return false;
  }
  if (rig.failed.load(std::memory_order_relaxed) != 0) {
    error = std::to_string(rig.failed.load(std::memory_order_relaxed)) + " handshakes failed";
    return false;
  }
  return true;
}

bool tear_down(Rig& rig) {
  for (const Conn& conn : rig.conns) static_cast<void>(rig.client->destroy(conn.client_id));
  const auto deadline = WallClock::now() + kDeadline;
  while (!rig.drained()) {
    if (WallClock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// Waits (bounded) until a server callback of `conn` is running, yielding so the client's and the
// server's threads can get the DREQ there.
bool callback_started(const Conn& conn) {
  const auto deadline = WallClock::now() + kDeadline;
  while (!conn.in_callback.load(std::memory_order_acquire)) {
    if (WallClock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

void BM_DestroyWhileCallbacksBusy(benchmark::State& state) {
  const bool inside = state.range(0) != 0;
  Rig rig;
  rig.inside = inside;
  if (!rig.ready()) {
    state.SkipWithError("engine or listen setup failed");
    return;
  }
  std::vector<double> latency_ns;
  latency_ns.reserve(std::size_t{kConnections} * kIterations);
  std::uint64_t running = 0;
  std::uint64_t self_running = 0;
  double self_running_max_ns = 0;
  for (auto _ : state) {
    std::string error;
    if (!establish_all(rig, error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    for (Conn& conn : rig.conns) conn.destroyed.store(false, std::memory_order_relaxed);
    if (!inside) {
      rig.gate_open.store(false, std::memory_order_relaxed);
      for (const Conn& conn : rig.conns) static_cast<void>(rig.client->send_dreq(conn.client_id, {}));
      rig.gate_open.store(true, std::memory_order_release);
    }
    double iteration_ns = 0;
    bool refused = false;
    for (std::uint32_t i = 0; i < kConnections && !refused; ++i) {
      Conn& conn = rig.conns[i];
      if (inside && (rig.client->send_dreq(conn.client_id, {}) != Status::ok ||
                     !callback_started(conn))) {
        error = "no DREQ callback for connection " + std::to_string(i);
        break;
      }
      const bool any = rig.busy.load(std::memory_order_relaxed) != 0;
      const bool self = conn.in_callback.load(std::memory_order_relaxed);
      const auto start = WallClock::now();
      const Status status = rig.server->destroy(conn.server_id);
      const double ns = std::chrono::duration<double, std::nano>(WallClock::now() - start).count();
      refused = status != Status::ok;
      conn.destroyed.store(true, std::memory_order_release);
      latency_ns.push_back(ns);
      iteration_ns += ns;
      running += any ? 1 : 0;
      if (self) {
        ++self_running;
        self_running_max_ns = std::max(self_running_max_ns, ns);
      }
    }
    if (refused) error = "a destroy() was refused";
    if (!error.empty()) {
      state.SkipWithError(error.c_str());
      break;
    }
    state.SetIterationTime(iteration_ns * 1e-9);
    if (!tear_down(rig)) {
      state.SkipWithError("teardown did not release every MAD");
      break;
    }
  }
  if (latency_ns.empty()) return;
  const auto calls = static_cast<double>(latency_ns.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(latency_ns.size()));
  state.counters["hold_timeouts"] =
      static_cast<double>(rig.hold_timeouts.load(std::memory_order_relaxed));
  state.counters["running_share"] = static_cast<double>(running) / calls;
  state.counters["self_running_share"] = static_cast<double>(self_running) / calls;
  state.counters["self_running_max_us"] = self_running_max_ns * 1e-3;
  state.counters["max_us"] = *std::max_element(latency_ns.begin(), latency_ns.end()) * 1e-3;
  state.counters["p99_us"] = percentile_us(latency_ns, 0.99);
  state.counters["p50_us"] = percentile_us(latency_ns, 0.50);
}

BENCHMARK(BM_DestroyWhileCallbacksBusy)
    ->ArgName("inside")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(kIterations)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
