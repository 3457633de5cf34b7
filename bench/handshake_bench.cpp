// Connection handshakes per second through the sharded engine. Each iteration is a storm of
// kConnections handshakes from a client engine to one listen on a server engine, both on HCAs of
// one loopback fabric (wall clock: SteadyClock):
//   the client creates an endpoint and sends a REQ per connection (spread over the ports), the
//   server's callback answers with a REP inline, the client's callback answers the REP with an RTU,
//   and the storm ends when the server has seen every RTU.
// A handshake here is create_id + REQ + REP + RTU, as an application sees it.
//
// BM_HandshakeStorm runs both engines with Threading::workers (the client has as many shards as
// the server) and the benchmark thread connects all of them: each create_id and send_req is a
// call handed to a client shard and waited for, as from any application thread.
// BM_HandshakeWindow is the same storm with the benchmark thread connecting only the first
// kWindow; every later connect is made by a client callback (after its RTU, on its shard, inline),
// keeping kWindow handshakes in flight: the engines' rate without the application thread's waits.
// BM_HandshakeInline runs both engines with Threading::caller, one thread driving both through
// progress(): the protocol's cost without thread hand-offs.
//
// Timing: only the storm is timed (manual time; the CPU column is process CPU, paused outside the
// storm). Between storms the client destroys its endpoints (DREQ; the server destroys its own on
// the DREQ) and the benchmark waits, untimed, until both engines have released every MAD, so each
// storm starts from empty tables. Counters (beside the wall time, since the machine is shared):
//   handshakes_per_s      handshakes over storm wall time
//   cpu_us_per_handshake  process CPU time (every thread) over the handshakes
//   cpu_cores             process CPU time over storm wall time
//   issue_share           share of the storm's wall time until the benchmark thread's last
//                         connect returned (caller mode: that loop also drives the engines;
//                         BM_HandshakeWindow: its kWindow calls queue behind the storm's MADs)
//   retries, drops        engine retransmissions and dropped MADs (both engines, all ports) and
//                         fabric receive-queue drops over the run: nonzero means overload
// A storm with any failed handshake (REJ, a timeout, or an API call refused) stops the benchmark
// with an error, so a broken run is never reported as a fast one.
#include <benchmark/benchmark.h>
#include <time.h>

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

constexpr std::uint32_t kConnections = 4096;
constexpr std::uint32_t kInlineBatch = 32;  // REQs sent between two progress rounds (caller mode)
constexpr std::uint32_t kWindow = 256;      // BM_HandshakeWindow: handshakes in flight
constexpr auto kStormDeadline = std::chrono::seconds(60);
constexpr auto kDrainDeadline = std::chrono::seconds(60);

void on_client_event(const Event& e, void* ctx);

// One storm: what to send and its outcome, shared by the callbacks of both engines and the
// benchmark thread.
struct Storm {
  Engine* server = nullptr;
  Engine* client = nullptr;
  std::vector<ReqParams> reqs;  // connection i's REQ
  // Connection i's client endpoint, written by whoever connects i; read by the benchmark thread
  // after `finished` (ordered through the handshake's MADs and the settle chain below).
  std::vector<Id> client_ids;
  bool chained = false;  // client callbacks connect the next connection after each RTU
  std::atomic<std::uint32_t> next{0};  // the next connection to make; relaxed: only claims indexes
  // Handshakes settled either way, and how many of those failed. Written by shard threads with
  // acq_rel so the RMW chain carries every earlier `failed` increment to the last settler, whose
  // release() of `finished` is the acquire partner of the benchmark thread's try_acquire.
  std::atomic<std::uint32_t> settled{0};
  std::atomic<std::uint32_t> failed{0};
  std::binary_semaphore finished{0};

  void reset() {
    next.store(0, std::memory_order_relaxed);
    settled.store(0, std::memory_order_relaxed);
    failed.store(0, std::memory_order_relaxed);
  }
  void settle(bool ok) {
    if (!ok) failed.fetch_add(1, std::memory_order_relaxed);
    if (settled.fetch_add(1, std::memory_order_acq_rel) + 1 == kConnections) finished.release();
  }

  // Creates and connects the next endpoint, if any is left; a refused call counts it failed.
  void connect_next() {
    const std::uint32_t i = next.fetch_add(1, std::memory_order_relaxed);
    if (i >= kConnections) return;
    const Delivery delivery{.handler = &on_client_event, .handler_context = this};
    if (client->create_id(delivery, nullptr, client_ids[i]) != Status::ok ||
        client->send_req(client_ids[i], reqs[i]) != Status::ok) {
      settle(false);
    }
  }
};

// Server: accept every REQ at once, count RTUs; tear down on the client's DREQ.
void on_server_event(const Event& e, void* ctx) {
  auto& storm = *static_cast<Storm*>(ctx);
  switch (e.type) {
    case EventType::req_received: {
      const auto& req = std::get<ReqReceived>(e.params);
      const RepParams rep = accepting_rep(req);
      if (storm.server->send_rep(e.id, rep) != Status::ok) storm.settle(false);
      break;
    }
    case EventType::rtu_received: storm.settle(true); break;
    case EventType::rep_error:
    case EventType::rej_received: storm.settle(false); break;
    case EventType::dreq_received:
      // Destroying in dreq_rcvd answers the DREP and leaves through time-wait.
      static_cast<void>(storm.server->destroy(e.id));
      break;
    default: break;
  }
}

// Client: answer every REP with an RTU (and, chained, start the next connection).
void on_client_event(const Event& e, void* ctx) {
  auto& storm = *static_cast<Storm*>(ctx);
  switch (e.type) {
    case EventType::rep_received:
      if (storm.client->send_rtu(e.id, {}) != Status::ok) storm.settle(false);
      if (storm.chained) storm.connect_next();
      break;
    case EventType::req_error:
    case EventType::rej_received: storm.settle(false); break;
    default: break;
  }
}

// Sized so that nothing runs out: endpoints for a storm plus any still in time-wait, MADs for each
// endpoint's kept sent and received MAD plus full inboxes, inboxes that hold a storm twice over
// (at exactly kConnections, the teardown's burst of kConnections DREQs now and then overflowed
// the server's inbox by a few bursts, and each lost DREQ costs a 4 s retransmission).
EngineConfig engine_config(std::uint32_t shards, Threading threading) {
  EngineConfig config;
  config.shards = shards;
  config.threading = threading;
  config.shard_inbox = 2 * kConnections;
  config.max_endpoints = 2 * kConnections;
  config.mad_buffers = 4 * kConnections + shards * config.shard_inbox;
  return config;
}

// Two engines over one fabric, with the server listening. Members are destroyed in reverse order:
// the engines before the fabric and the clock they borrow.
struct Rig {
  Rig(std::uint32_t shards, std::uint8_t ports, Threading threading)
      : config(storm_fabric(ports, 2 * kConnections)), fabric(config, clock) {
    server = Engine::create(fabric.hca(0), clock, engine_config(shards, threading));
    client = Engine::create(fabric.hca(1), clock, engine_config(shards, threading));
    if (!server || !client) return;
    storm.server = server.get();
    storm.client = client.get();
    listening = server->listen(storm_listen(kConnections, &on_server_event, &storm), listen_id) == Status::ok;
    storm.reqs.resize(kConnections);
    for (std::uint32_t i = 0; i < kConnections; ++i) storm.reqs[i] = storm_req(config, i % ports, i);
    storm.client_ids.resize(kConnections);
  }

  [[nodiscard]] bool ready() const { return server && client && listening; }

  [[nodiscard]] bool drained() const {
    return server->mad_buffers_in_use() == 0 && client->mad_buffers_in_use() == 0 &&
           fabric.total_pending() == 0;
  }

  // Retransmissions and drops of both engines and the fabric so far.
  [[nodiscard]] std::uint64_t retries() const {
    return sum_engines([](const PortCounters& c) {
      std::uint64_t n = 0;
      for (const auto& m : c.messages) n += m.retried;
      return n;
    });
  }
  [[nodiscard]] std::uint64_t drops() const {
    std::uint64_t n = sum_engines([](const PortCounters& c) {
      std::uint64_t d = 0;
      for (const std::uint64_t x : c.drops) d += x;
      return d;
    });
    for (std::uint16_t h = 0; h < config.hcas.size(); ++h) {
      for (std::uint16_t p = 0; p < config.hcas[h].ports.size(); ++p) {
        n += fabric.counters(loopback::PortRef{h, p}).dropped_queue_full;
      }
    }
    return n;
  }

  template <typename F>
  [[nodiscard]] std::uint64_t sum_engines(F per_port) const {
    std::vector<PortCounters> ports(config.hcas[0].ports.size() + 1);
    std::uint64_t n = 0;
    for (const Engine* e : {server.get(), client.get()}) {
      e->counters(ports);
      for (std::size_t i = 1; i < ports.size(); ++i) n += per_port(ports[i]);
    }
    return n;
  }

  SteadyClock clock;
  loopback::LoopbackConfig config;
  loopback::LoopbackFabric fabric;
  std::unique_ptr<Engine> server;
  std::unique_ptr<Engine> client;
  Storm storm;
  Id listen_id;
  bool listening = false;
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

using WallClock = std::chrono::steady_clock;

double seconds_since(WallClock::time_point start) {
  return std::chrono::duration<double>(WallClock::now() - start).count();
}

// Workers: this thread makes `seed` connections; the shards and pollers do the rest. `issued` is
// set when its last connect returned.
bool storm_workers(Rig& rig, std::uint32_t seed, WallClock::time_point& issued) {
  for (std::uint32_t i = 0; i < seed; ++i) rig.storm.connect_next();
  issued = WallClock::now();
  return rig.storm.finished.try_acquire_for(kStormDeadline);
}

// Caller: this thread sends the REQs in batches and drives both engines between them.
bool storm_inline(Rig& rig, WallClock::time_point& issued) {
  const auto drive = [&rig] { return rig.server->progress() + rig.client->progress(); };
  for (std::uint32_t i = 0; i < kConnections; ++i) {
    rig.storm.connect_next();
    if ((i + 1) % kInlineBatch == 0) drive();
  }
  issued = WallClock::now();
  const auto deadline = WallClock::now() + kStormDeadline;
  while (rig.storm.settled.load(std::memory_order_acquire) < kConnections) {
    if (drive() == 0 && WallClock::now() > deadline) return false;
  }
  return rig.storm.finished.try_acquire();
}

// Destroys the client's endpoints and waits until both engines have released every MAD (every
// endpoint of the storm is through time-wait).
bool tear_down(Rig& rig, Threading threading) {
  for (const Id id : rig.storm.client_ids) static_cast<void>(rig.client->destroy(id));
  const auto deadline = WallClock::now() + kDrainDeadline;
  while (!rig.drained()) {
    if (WallClock::now() > deadline) return false;
    if (threading == Threading::caller) {
      rig.server->progress();
      rig.client->progress();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  return true;
}

// `seed`: the connections the benchmark thread makes in workers mode (the rest are chained).
void run_storms(benchmark::State& state, Threading threading, std::uint32_t seed) {
  const auto shards = static_cast<std::uint32_t>(state.range(0));
  const auto ports = static_cast<std::uint8_t>(state.range(1));
  Rig rig(shards, ports, threading);
  if (!rig.ready()) {
    state.SkipWithError("engine or listen setup failed");
    return;
  }
  rig.storm.chained = seed < kConnections;
  const std::uint64_t retries_before = rig.retries();
  const std::uint64_t drops_before = rig.drops();
  double wall = 0;
  double cpu = 0;
  double issue = 0;
  for (auto _ : state) {
    rig.storm.reset();
    const double cpu_start = process_cpu_seconds();
    const auto wall_start = WallClock::now();
    WallClock::time_point issued = wall_start;
    const bool finished = threading == Threading::workers ? storm_workers(rig, seed, issued)
                                                          : storm_inline(rig, issued);
    const double storm_wall = seconds_since(wall_start);
    cpu += process_cpu_seconds() - cpu_start;
    wall += storm_wall;
    issue += std::chrono::duration<double>(issued - wall_start).count();
    state.SetIterationTime(storm_wall);

    state.PauseTiming();
    if (!finished) {
      const std::string msg = "storm timed out: " +
                              std::to_string(rig.storm.settled.load(std::memory_order_acquire)) +
                              " of " + std::to_string(kConnections) + " handshakes settled";
      state.SkipWithError(msg.c_str());
      break;
    }
    if (const std::uint32_t failed = rig.storm.failed.load(std::memory_order_relaxed); failed != 0) {
      const std::string msg = std::to_string(failed) + " handshakes failed";
      state.SkipWithError(msg.c_str());
      break;
    }
    if (!tear_down(rig, threading)) {
      state.SkipWithError("teardown did not release every MAD");
      break;
    }
    state.ResumeTiming();
  }
  const double handshakes = static_cast<double>(state.iterations()) * kConnections;
  if (wall > 0) {
    state.counters["handshakes_per_s"] = handshakes / wall;
    state.counters["cpu_cores"] = cpu / wall;
    state.counters["issue_share"] = issue / wall;
  }
  if (handshakes > 0) state.counters["cpu_us_per_handshake"] = cpu * 1e6 / handshakes;
  state.counters["retries"] = static_cast<double>(rig.retries() - retries_before);
  state.counters["drops"] = static_cast<double>(rig.drops() - drops_before);
}

void BM_HandshakeStorm(benchmark::State& state) {
  run_storms(state, Threading::workers, kConnections);
}
void BM_HandshakeWindow(benchmark::State& state) { run_storms(state, Threading::workers, kWindow); }
void BM_HandshakeInline(benchmark::State& state) {
  run_storms(state, Threading::caller, kConnections);
}

void configure(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{1, 2}, {1, 2}})
      ->ArgNames({"shards", "ports"})
      ->UseManualTime()
      ->MeasureProcessCPUTime()
      ->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_HandshakeStorm)->Apply(configure);
BENCHMARK(BM_HandshakeWindow)->Apply(configure);
BENCHMARK(BM_HandshakeInline)->Apply(configure);

}  // namespace
