// Heap allocations per MAD in steady state (target: 0). Two engines (Threading::caller, one thread
// drives both through progress(), so the run is deterministic) on one loopback fabric run
// handshake storms: kConnections connections (create_id + REQ + REP + RTU), then the client
// destroys them all (DREQ + DREP, then time-wait) until both engines have released every MAD.
// kWarmupStorms storms run first, uncounted, so every lazily grown structure has reached its size;
// then each iteration is one storm and its teardown with every heap allocation of the process
// counted (counting_allocator.cpp replaces operator new and interposes malloc and friends).
//
// Counters:
//   mallocs_per_mad   allocations over MADs handled in the counted windows
//   mallocs_total     allocations in the counted windows
//   mads              MADs handled: sent + received of both engines over all ports
// The first kTraces allocations of the counted windows print a backtrace to stderr, so a nonzero
// result names its sources (frames inside this executable print as offsets: resolve them with
// `addr2line -Cfe fastcm_bench_mallocs 0x<offset>`). A failed handshake or a teardown that does not drain stops the
// benchmark with an error.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/counting_allocator.h"
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
constexpr std::uint32_t kWarmupStorms = 2;
constexpr std::uint32_t kTraces = 4;
constexpr std::uint32_t kBatch = 32;  // REQs sent between two progress rounds
constexpr auto kDeadline = std::chrono::seconds(60);

// Everything one thread touches: no atomics needed (caller mode, one driving thread).
struct Rig {
  Rig() : config(storm_fabric(1, 2 * kConnections)), fabric(config, clock) {
    server = Engine::create(fabric.hca(0), clock, engine_config());
    client = Engine::create(fabric.hca(1), clock, engine_config());
    if (!server || !client) return;
    listening = server->listen(storm_listen(kConnections, &on_server_event, this), listen_id) == Status::ok;
    for (std::uint32_t i = 0; i < kConnections; ++i) reqs[i] = storm_req(config, 0, i);
  }

  static EngineConfig engine_config() {
    EngineConfig c;
    c.shards = 1;
    c.threading = Threading::caller;
    c.shard_inbox = 2 * kConnections;
    c.max_endpoints = 2 * kConnections;
    c.mad_buffers = 4 * kConnections + c.shard_inbox;
    return c;
  }

  static void on_server_event(const Event& e, void* ctx) {
    auto& rig = *static_cast<Rig*>(ctx);
    switch (e.type) {
      case EventType::req_received: {
        const auto& req = std::get<ReqReceived>(e.params);
        const RepParams rep = accepting_rep(req);
        if (rig.server->send_rep(e.id, rep) != Status::ok) rig.settle(false);
        break;
      }
      case EventType::rtu_received: rig.settle(true); break;
      case EventType::rep_error:
      case EventType::rej_received: rig.settle(false); break;
      case EventType::dreq_received: static_cast<void>(rig.server->destroy(e.id)); break;
      default: break;
    }
  }

  static void on_client_event(const Event& e, void* ctx) {
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

  void settle(bool ok) {
    ++settled;
    if (!ok) ++failed;
  }

  std::size_t drive() { return server->progress() + client->progress(); }

  // One storm and its teardown; the reason in `error` on failure.
  bool storm(std::string& error) {
    settled = 0;
    failed = 0;
    const Delivery delivery{.handler = &on_client_event, .handler_context = this};
    for (std::uint32_t i = 0; i < kConnections; ++i) {
      if (client->create_id(delivery, nullptr, client_ids[i]) != Status::ok ||
          client->send_req(client_ids[i], reqs[i]) != Status::ok) {
        settle(false);
      }
      if ((i + 1) % kBatch == 0) drive();
    }
    const auto deadline = WallClock::now() + kDeadline;
    while (settled < kConnections) {
      if (drive() == 0 && WallClock::now() > deadline) {
        error = "storm timed out";
        return false;
      }
    }
    if (failed != 0) {
      error = std::to_string(failed) + " handshakes failed";
      return false;
    }
    for (const Id id : client_ids) static_cast<void>(client->destroy(id));
    while (server->mad_buffers_in_use() != 0 || client->mad_buffers_in_use() != 0 ||
           fabric.total_pending() != 0) {
      if (drive() == 0 && WallClock::now() > deadline) {
        error = "teardown did not release every MAD";
        return false;
      }
    }
    return true;
  }

  // Sent plus received MADs of both engines, all ports. Allocates (the counters vector): call
  // outside the counting window.
  [[nodiscard]] std::uint64_t mads() const {
    std::vector<PortCounters> ports(config.hcas[0].ports.size() + 1);
    std::uint64_t n = 0;
    for (const Engine* e : {server.get(), client.get()}) {
      e->counters(ports);
      for (std::size_t p = 1; p < ports.size(); ++p) {
        for (const MessageCounters& m : ports[p].messages) n += m.sent + m.received;
      }
    }
    return n;
  }

  [[nodiscard]] bool ready() const { return server && client && listening; }

  SteadyClock clock;
  loopback::LoopbackConfig config;
  loopback::LoopbackFabric fabric;
  std::unique_ptr<Engine> server;
  std::unique_ptr<Engine> client;
  Id listen_id;
  bool listening = false;
  std::vector<ReqParams> reqs = std::vector<ReqParams>(kConnections);
  std::vector<Id> client_ids = std::vector<Id>(kConnections);
  std::uint32_t settled = 0;
  std::uint32_t failed = 0;
};

// Whether the counting allocator is in effect: one operator new and one malloc (through the PLT,
// as libraries call it) must count two.
bool counter_works() {
  bench::start_counting(0);
  auto* object = new std::uint64_t(1);
  benchmark::DoNotOptimize(object);
  void* block = std::malloc(16);
  benchmark::DoNotOptimize(block);
  const std::uint64_t counted = bench::stop_counting();
  delete object;
  std::free(block);
  return counted == 2;
}

void BM_MallocsPerMad(benchmark::State& state) {
  if (!counter_works()) {
    state.SkipWithError("the counting allocator does not see allocations");
    return;
  }
  Rig rig;
  if (!rig.ready()) {
    state.SkipWithError("engine or listen setup failed");
    return;
  }
  std::string error;
  for (std::uint32_t i = 0; i < kWarmupStorms; ++i) {
    if (!rig.storm(error)) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
  error.reserve(64);  // so a failure message does not allocate inside the window
  std::uint64_t mallocs = 0;
  std::uint64_t mads = 0;
  std::uint32_t traces = kTraces;
  for (auto _ : state) {
    const std::uint64_t mads_before = rig.mads();
    bench::start_counting(traces);
    const bool ok = rig.storm(error);
    const std::uint64_t counted = bench::stop_counting();
    mallocs += counted;
    traces = counted >= traces ? 0 : traces - static_cast<std::uint32_t>(counted);
    mads += rig.mads() - mads_before;
    if (!ok) {
      state.SkipWithError(error.c_str());
      break;
    }
  }
  state.counters["mallocs_total"] = static_cast<double>(mallocs);
  state.counters["mads"] = static_cast<double>(mads);
  if (mads != 0) {
    state.counters["mallocs_per_mad"] = static_cast<double>(mallocs) / static_cast<double>(mads);
  }
}

BENCHMARK(BM_MallocsPerMad)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace
