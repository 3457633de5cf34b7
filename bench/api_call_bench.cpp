// Latency of the endpoint calls an application thread makes (not a callback): create_id, send_req
// and destroy, each timed alone, against an engine that is busy with other connections meanwhile.
// What an embedding application pays per call on top of the protocol: in worker threading a call
// on an endpoint is a hand-off to the endpoint's shard (fastcm/engine.h), unless the engine posts
// calls (EngineConfig::posted_calls, the benchmark's argument: 0 waits, 4096 posts, and create_id
// takes a shard's spare endpoint).
//
// Rig: a client and a server engine (Threading::workers, kShards shards each) over one loopback
// fabric; the server accepts every REQ and destroys its endpoint on the client's DREQ or REJ. A
// loader thread keeps the client busy: it opens connections through the same client engine and
// destroys each one kLoadWindow connections later, without pause, for the whole run.
// Measured, per iteration: the benchmark thread creates an endpoint, sends its REQ and destroys it
// (a REJ then goes to the server); each call is timed with steady_clock into a preallocated array.
//
// Time column: the three calls of one iteration (manual time). Counters:
//   create_id_p50_us, create_id_p99_us, send_req_p50_us, ..., destroy_p99_us   per call
//   load_connects    connections the loader opened while the benchmark ran (shows the load)
// A refused call stops the benchmark with an error; so does an engine that does not release every
// MAD after the run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "bench/storm_rig.h"
#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"

namespace {

using namespace fastcm;
using namespace fastcm::bench;
using WallClock = std::chrono::steady_clock;

constexpr std::uint32_t kShards = 2;
constexpr std::uint32_t kLoadWindow = 256;
constexpr std::uint32_t kCallsPerRun = 20'000;
constexpr std::uint32_t kQpnSpan = 1u << 22;  // connection numbers wrap here (QPNs stay 24-bit)
constexpr auto kDrainDeadline = std::chrono::seconds(30);

void on_server_event(const Event& e, void* ctx);
void on_client_event(const Event& e, void* ctx);

struct Rig {
  explicit Rig(std::uint32_t posted_calls) : config(storm_fabric(1, 1u << 14)), fabric(config, clock) {
    server = Engine::create(fabric.hca(0), clock, engine_config(posted_calls));
    client = Engine::create(fabric.hca(1), clock, engine_config(posted_calls));
    if (!server || !client) return;
    listening = server->listen(storm_listen(1u << 12, &on_server_event, this), listen_id) == Status::ok;
  }

  static EngineConfig engine_config(std::uint32_t posted_calls) {
    EngineConfig c;
    c.shards = kShards;
    c.max_endpoints = 1u << 15;
    c.posted_calls = posted_calls;
    return c;
  }

  [[nodiscard]] bool ready() const { return server && client && listening; }

  // The next connection's REQ: a QPN no live or time-wait connection of this rig holds.
  [[nodiscard]] ReqParams next_req() {
    // Relaxed: a counter shared by two threads for unique numbers; nothing is published with it.
    const std::uint32_t n = next_connection.fetch_add(1, std::memory_order_relaxed) % kQpnSpan;
    return storm_req(config, 0, n);
  }

  SteadyClock clock;
  loopback::LoopbackConfig config;
  loopback::LoopbackFabric fabric;
  std::unique_ptr<Engine> server;
  std::unique_ptr<Engine> client;
  Id listen_id;
  bool listening = false;
  std::atomic<std::uint32_t> next_connection{0};
  const Delivery client_delivery{.handler = &on_client_event, .handler_context = this};
};

void on_server_event(const Event& e, void* ctx) {
  auto& rig = *static_cast<Rig*>(ctx);
  switch (e.type) {
    case EventType::req_received:
      static_cast<void>(rig.server->send_rep(e.id, accepting_rep(std::get<ReqReceived>(e.params))));
      break;
    case EventType::dreq_received:  // destroying answers the DREP and leaves through time-wait
    case EventType::rej_received:
    case EventType::rep_error: static_cast<void>(rig.server->destroy(e.id)); break;
    default: break;
  }
}

void on_client_event(const Event& e, void* ctx) {
  auto& rig = *static_cast<Rig*>(ctx);
  if (e.type == EventType::rep_received) static_cast<void>(rig.client->send_rtu(e.id, {}));
}

// The load: connections opened and destroyed through the client engine until `stop`.
class Loader {
 public:
  explicit Loader(Rig& rig) : rig_(rig), thread_([this] { run(); }) {}
  ~Loader() {
    // Release: pairs with run()'s acquire load, so the loader sees the stop and leaves.
    stop_.store(true, std::memory_order_release);
    thread_.join();
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Relaxed: a statistic, read while the loader runs.
  [[nodiscard]] std::uint64_t connects() const { return connects_.load(std::memory_order_relaxed); }

 private:
  void run() {
    std::array<Id, kLoadWindow> window{};
    std::uint32_t next = 0;
    while (!stop_.load(std::memory_order_acquire)) {
      Id& slot = window[next++ % kLoadWindow];
      if (!slot.empty()) static_cast<void>(rig_.client->destroy(slot));
      slot = Id{};
      if (rig_.client->create_id(rig_.client_delivery, nullptr, slot) == Status::ok &&
          rig_.client->send_req(slot, rig_.next_req()) == Status::ok) {
        connects_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    for (const Id id : window) {
      if (!id.empty()) static_cast<void>(rig_.client->destroy(id));
    }
  }

  Rig& rig_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> connects_{0};
  std::thread thread_;  // last: started once the members above exist
};

double time_ns(WallClock::time_point start) {
  return std::chrono::duration<double, std::nano>(WallClock::now() - start).count();
}

bool drained(const Rig& rig) {
  const auto deadline = WallClock::now() + kDrainDeadline;
  while (rig.server->mad_buffers_in_use() != 0 || rig.client->mad_buffers_in_use() != 0 ||
         rig.fabric.total_pending() != 0) {
    if (WallClock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void BM_ApiCallsFromAnApplicationThread(benchmark::State& state) {
  Rig rig(static_cast<std::uint32_t>(state.range(0)));
  if (!rig.ready()) {
    state.SkipWithError("engine or listen setup failed");
    return;
  }
  std::vector<double> create_ns;
  std::vector<double> send_ns;
  std::vector<double> destroy_ns;
  for (auto* v : {&create_ns, &send_ns, &destroy_ns}) v->reserve(kCallsPerRun);
  std::uint64_t load_connects = 0;
  {
    const Loader loader(rig);
    for (auto _ : state) {
      Id id;
      auto start = WallClock::now();
      const Status created = rig.client->create_id(rig.client_delivery, nullptr, id);
      create_ns.push_back(time_ns(start));
      const ReqParams req = rig.next_req();
      start = WallClock::now();
      const Status sent = created == Status::ok ? rig.client->send_req(id, req) : created;
      send_ns.push_back(time_ns(start));
      start = WallClock::now();
      const Status destroyed = created == Status::ok ? rig.client->destroy(id) : created;
      destroy_ns.push_back(time_ns(start));
      if (created != Status::ok || sent != Status::ok || destroyed != Status::ok) {
        state.SkipWithError("an endpoint call was refused");
        break;
      }
      state.SetIterationTime((create_ns.back() + send_ns.back() + destroy_ns.back()) * 1e-9);
    }
    load_connects = loader.connects();
  }
  if (!drained(rig)) {
    state.SkipWithError("the engines did not release every MAD after the run");
    return;
  }
  if (destroy_ns.empty()) return;
  state.counters["load_connects"] = static_cast<double>(load_connects);
  state.counters["create_id_p50_us"] = percentile_us(create_ns, 0.50);
  state.counters["create_id_p99_us"] = percentile_us(create_ns, 0.99);
  state.counters["send_req_p50_us"] = percentile_us(send_ns, 0.50);
  state.counters["send_req_p99_us"] = percentile_us(send_ns, 0.99);
  state.counters["destroy_p50_us"] = percentile_us(destroy_ns, 0.50);
  state.counters["destroy_p99_us"] = percentile_us(destroy_ns, 0.99);
}

BENCHMARK(BM_ApiCallsFromAnApplicationThread)
    ->ArgName("posted_calls")
    ->Arg(0)
    ->Arg(4096)
    ->Iterations(kCallsPerRun)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
