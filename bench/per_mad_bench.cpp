// Engine CPU time per MAD (issue 5: "per-MAD engine cost (decode, route, state, encode) ≤ 150 ns"),
// and how it changes with the shard count.
//
// Two engines in Threading::caller, one thread, and a wire between them that carries MADs only
// when the benchmark says so. Each iteration takes kConnections connections through their whole
// life in seven phases, each run by one engine alone until it is idle:
//   connect      client: create_id + send_req                       REQ out
//   answer_reqs  server: REQ in, callback send_rep                  REP out
//   answer_reps  client: REP in, callback send_rtu                  RTU out
//   take_rtus    server: RTU in (established)
//   disconnect   client: destroy (established: DREQ)               DREQ out
//   answer_dreqs server: DREQ in, callback destroy                  DREP out, time-wait
//   take_dreps   client: DREP in                                    time-wait
// then, untimed, the virtual clock is moved past time-wait and both engines run until every MAD
// is back in its pool, so the next iteration starts from empty tables. Only the phases of the
// measured side are timed (PauseTiming around the rest): `side` passive = the server's phases,
// active = the client's, both = all seven. A MAD on the wire is encoded by one engine and decoded,
// routed and handled by the other, so with side=both the CPU time per wire MAD (5 per connection)
// is the per-MAD engine cost; side=passive is the accepting server's share alone.
//
// The wire (`wire` argument):
//   shuttle   a one-port Fabric per engine that copies each MAD in on send and out on receive,
//             and nothing else: the engine's own cost plus the copy every fabric makes.
//             BM_ShuttleCopy measures that copy alone (one send + one receive per MAD), so
//             ns_per_mad − copy is the engine-only figure.
//   loopback  the default in-process fabric (switch, P_Key check, rte_ring queues), as the
//             handshake benchmark and fastcm-bench use it.
//
// Counters (per timed CPU second; the machine is shared, so CPU time, not wall time):
//   mads_per_s     wire MADs (5 per connection) per CPU second of the timed phases
//   ns_per_mad     the inverse: CPU time of the timed phases per wire MAD
//   <phase>_ns     CPU time of that phase per connection (= per MAD it handles), timed phases only
// Instruction counts: each phase is a function named phase_<name>, so callgrind can collect just
// them: valgrind --tool=callgrind --collect-atstart=no '--toggle-collect=*phase_*'
// fastcm_bench_per_mad --benchmark_filter=... --benchmark_min_time=0 runs one iteration of each
// selected instance; the calls of phase_connect (callgrind_annotate --tree=caller) count them.
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/storm_rig.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"

namespace {

using namespace fastcm;
using namespace fastcm::bench;

constexpr std::uint32_t kConnections = 1024;  // per iteration
constexpr std::uint32_t kWireMads = 5;        // REQ, REP, RTU, DREQ, DREP
constexpr std::uint64_t kTimeWaitStepNs = 1'000'000'000;  // clock step while settling
constexpr int kSettleRounds = 100;

// ---- the shuttle wire ---------------------------------------------------------------------------

// One HCA port as a Fabric that keeps what its engine sends until the benchmark carries it to the
// peer, and hands its engine what was carried to it. Preallocated; never allocates once built.
// Threads: one thread drives both engines (Threading::caller), so nothing here is shared.
class ShuttlePort final : public Fabric {
 public:
  ShuttlePort(const PortAttr& attr, std::size_t capacity) : attr_(attr), capacity_(capacity) {
    sent_.reserve(capacity);
    inbox_.reserve(capacity);
  }

  [[nodiscard]] std::span<const PortAttr> ports() const noexcept override { return {&attr_, 1}; }

  std::size_t send_burst(std::uint16_t port_index, std::span<const MadPacket* const> pkts) noexcept override {
    if (port_index != 0) return 0;
    const std::size_t n = std::min(pkts.size(), capacity_ - sent_.size());
    for (std::size_t i = 0; i < n; ++i) sent_.push_back(*pkts[i]);
    return n;
  }

  std::size_t recv_burst(std::uint16_t port_index, std::span<MadPacket* const> bufs) noexcept override {
    if (port_index != 0) return 0;
    const std::size_t n = std::min(bufs.size(), inbox_.size() - next_);
    for (std::size_t i = 0; i < n; ++i) *bufs[i] = inbox_[next_ + i];
    next_ += n;
    return n;
  }

  // Only ever driven through Engine::progress(), which never waits on the fd: there is no
  // wake-up, so the fd does not exist and a poller must never sleep.
  [[nodiscard]] int rx_event_fd(std::uint16_t) const noexcept override { return -1; }
  bool arm_rx_event(std::uint16_t) noexcept override { return false; }

  // Moves every MAD this port sent into `peer`'s receive queue, addressed as the peer receives it
  // (the sender's LID, QP1, the peer's index of the sender's P_Key). The shuttle joins two ports
  // of one subnet: a MAD with a GRH, to another LID or with a P_Key the peer lacks is not carried.
  // Returns false if any MAD was not carried (the benchmark then stops with an error).
  bool carry_to(ShuttlePort& peer) {
    if (peer.next_ == peer.inbox_.size()) {
      peer.inbox_.clear();
      peer.next_ = 0;
    }
    bool all = true;
    for (MadPacket& pkt : sent_) {
      const auto pkeys = attr_.pkeys();
      const auto peer_pkeys = peer.attr_.pkeys();
      const auto match = pkt.addr.pkey_index < pkeys.size()
                             ? std::find(peer_pkeys.begin(), peer_pkeys.end(), pkeys[pkt.addr.pkey_index])
                             : peer_pkeys.end();
      if (pkt.addr.grh.present || pkt.addr.remote_lid != peer.attr_.lid || match == peer_pkeys.end() ||
          peer.inbox_.size() == peer.capacity_) {
        all = false;
        continue;
      }
      pkt.addr = MadAddress{.port_index = 0,
                            .remote_lid = attr_.lid,
                            .remote_qpn = kGsiQpn,
                            .remote_qkey = kGsiQKey,
                            .pkey_index = static_cast<std::uint16_t>(match - peer_pkeys.begin()),
                            .sl = pkt.addr.sl,
                            .grh = {}};
      peer.inbox_.push_back(pkt);
    }
    sent_.clear();
    return all;
  }

  [[nodiscard]] bool idle() const noexcept { return sent_.empty() && next_ == inbox_.size(); }

 private:
  PortAttr attr_;
  std::size_t capacity_;
  std::vector<MadPacket> sent_;   // sent by the engine, not yet carried
  std::vector<MadPacket> inbox_;  // carried to the engine; [next_, size) not yet received
  std::size_t next_ = 0;
};

// The link between the two engines' fabrics.
class Wire {
 public:
  Wire() = default;
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;
  virtual ~Wire() = default;
  virtual Fabric& server() = 0;
  virtual Fabric& client() = 0;
  // Hands every MAD sent so far to its receiver; false when one was lost.
  virtual bool carry() = 0;
  [[nodiscard]] virtual bool idle() const = 0;
};

class ShuttleWire final : public Wire {
 public:
  explicit ShuttleWire(const loopback::LoopbackConfig& config)
      : server_(config.hcas[0].ports[0], kConnections), client_(config.hcas[1].ports[0], kConnections) {}
  Fabric& server() override { return server_; }
  Fabric& client() override { return client_; }
  bool carry() override {
    const bool to_client = server_.carry_to(client_);
    return client_.carry_to(server_) && to_client;
  }
  [[nodiscard]] bool idle() const override { return server_.idle() && client_.idle(); }

 private:
  ShuttlePort server_;
  ShuttlePort client_;
};

// The loopback fabric delivers at send time; carry() only checks that nothing was dropped.
class LoopbackWire final : public Wire {
 public:
  LoopbackWire(const loopback::LoopbackConfig& config, const Clock& clock) : fabric_(config, clock) {}
  Fabric& server() override { return fabric_.hca(0); }
  Fabric& client() override { return fabric_.hca(1); }
  bool carry() override {
    for (std::uint16_t h = 0; h < 2; ++h) {
      if (fabric_.counters(loopback::PortRef{h, 0}).dropped_queue_full != 0) return false;
    }
    return true;
  }
  [[nodiscard]] bool idle() const override { return fabric_.total_pending() == 0; }

 private:
  loopback::LoopbackFabric fabric_;
};

// ---- the life cycle -----------------------------------------------------------------------------

enum class Side : std::int64_t { passive, active, both };
enum class WireKind : std::int64_t { shuttle, loopback };

// What the callbacks saw in one iteration.
struct Tally {
  Engine* server = nullptr;
  Engine* client = nullptr;
  std::uint32_t rtus = 0;      // server: established
  std::uint32_t dreqs = 0;     // server: disconnect requests
  std::uint32_t reps = 0;      // client: replies answered
  std::uint32_t failures = 0;  // refused calls, REJs, timeouts
};

void on_server_event(const Event& e, void* ctx) {
  auto& t = *static_cast<Tally*>(ctx);
  switch (e.type) {
    case EventType::req_received:
      if (t.server->send_rep(e.id, accepting_rep(std::get<ReqReceived>(e.params))) != Status::ok) ++t.failures;
      break;
    case EventType::rtu_received: ++t.rtus; break;
    case EventType::dreq_received:
      ++t.dreqs;
      if (t.server->destroy(e.id) != Status::ok) ++t.failures;  // answers the DREP
      break;
    case EventType::rep_error:
    case EventType::rej_received: ++t.failures; break;
    default: break;
  }
}

void on_client_event(const Event& e, void* ctx) {
  auto& t = *static_cast<Tally*>(ctx);
  switch (e.type) {
    case EventType::rep_received:
      ++t.reps;
      if (t.client->send_rtu(e.id, {}) != Status::ok) ++t.failures;
      break;
    case EventType::req_error:
    case EventType::dreq_error:
    case EventType::rej_received: ++t.failures; break;
    default: break;
  }
}

// Room for one iteration's endpoints twice over and every MAD they can hold, with the same MAD
// pool at every shard count: without an lcore cache (caller mode) rte_mempool hands buffers out in
// ring order, so the whole pool is the working set, and a pool grown with the shards (4 shards'
// 12288 buffers against 6144) cost ~30 % more CPU per MAD at one shard too: that is pool size, not
// sharding. progress() posts at most one poller burst (32 MADs) to a shard per round.
EngineConfig caller_config(std::uint32_t shards) {
  EngineConfig config;
  config.shards = shards;
  config.threading = Threading::caller;
  config.shard_inbox = kConnections / 4;
  config.max_endpoints = 2 * kConnections;
  config.mad_buffers = 5 * kConnections;
  return config;
}

// Runs the engine until a progress() round finds nothing to do.
void drain(Engine& engine) {
  while (engine.progress() != 0) {
  }
}

// Two caller-driven engines over a Wire, the server listening. Members are destroyed in reverse
// order: the engines before the wire and the clock they borrow.
struct Lifecycle {
  Lifecycle(std::uint32_t shards, WireKind kind)
      : config(storm_fabric(1, 4 * kConnections)),
        wire(kind == WireKind::shuttle ? std::unique_ptr<Wire>(std::make_unique<ShuttleWire>(config))
                                       : std::make_unique<LoopbackWire>(config, clock)) {
    server = Engine::create(wire->server(), clock, caller_config(shards));
    client = Engine::create(wire->client(), clock, caller_config(shards));
    if (!server || !client) return;
    tally.server = server.get();
    tally.client = client.get();
    listening = server->listen(storm_listen(kConnections, &on_server_event, &tally), listen_id) == Status::ok;
    reqs.resize(kConnections);
    for (std::uint32_t i = 0; i < kConnections; ++i) reqs[i] = storm_req(config, 0, i);
    ids.resize(kConnections);
  }

  [[nodiscard]] bool ready() const { return server && client && listening; }

  // The seven phases (see the top of the file). Not inlined, so callgrind can name them.
  [[gnu::noinline]] void phase_connect() {
    const Delivery delivery{.handler = &on_client_event, .handler_context = &tally};
    for (std::uint32_t i = 0; i < kConnections; ++i) {
      if (client->create_id(delivery, nullptr, ids[i]) != Status::ok ||
          client->send_req(ids[i], reqs[i]) != Status::ok) {
        ++tally.failures;
      }
    }
    drain(*client);
  }
  [[gnu::noinline]] void phase_answer_reqs() { drain(*server); }
  [[gnu::noinline]] void phase_answer_reps() { drain(*client); }
  [[gnu::noinline]] void phase_take_rtus() { drain(*server); }
  [[gnu::noinline]] void phase_disconnect() {
    for (const Id id : ids) {
      if (client->destroy(id) != Status::ok) ++tally.failures;
    }
    drain(*client);
  }
  [[gnu::noinline]] void phase_answer_dreqs() { drain(*server); }
  [[gnu::noinline]] void phase_take_dreps() { drain(*client); }

  // Moves the clock past time-wait until both engines hold no MAD. Untimed.
  bool settle() {
    for (int round = 0; round < kSettleRounds; ++round) {
      if (server->mad_buffers_in_use() == 0 && client->mad_buffers_in_use() == 0 && wire->idle()) return true;
      clock.advance(kTimeWaitStepNs);
      server->progress();
      client->progress();
      if (!wire->carry()) return false;
    }
    return false;
  }

  // An empty string when the iteration went as planned, else what went wrong.
  [[nodiscard]] std::string verdict() const {
    if (tally.failures != 0) return std::to_string(tally.failures) + " calls or handshakes failed";
    if (tally.reps != kConnections || tally.rtus != kConnections || tally.dreqs != kConnections) {
      return "incomplete iteration: " + std::to_string(tally.reps) + " REPs, " + std::to_string(tally.rtus) +
             " RTUs, " + std::to_string(tally.dreqs) + " DREQs of " + std::to_string(kConnections);
    }
    return {};
  }

  VirtualClock clock;
  loopback::LoopbackConfig config;
  std::unique_ptr<Wire> wire;
  std::unique_ptr<Engine> server;
  std::unique_ptr<Engine> client;
  Tally tally;
  Id listen_id;
  bool listening = false;
  std::vector<ReqParams> reqs;
  std::vector<Id> ids;
};

std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct Phase {
  const char* name;
  void (Lifecycle::*run)();
  bool server;  // run by the server engine (passive side)
};
constexpr std::array<Phase, 7> kPhases{{
    {"connect_ns", &Lifecycle::phase_connect, false},
    {"answer_reqs_ns", &Lifecycle::phase_answer_reqs, true},
    {"answer_reps_ns", &Lifecycle::phase_answer_reps, false},
    {"take_rtus_ns", &Lifecycle::phase_take_rtus, true},
    {"disconnect_ns", &Lifecycle::phase_disconnect, false},
    {"answer_dreqs_ns", &Lifecycle::phase_answer_dreqs, true},
    {"take_dreps_ns", &Lifecycle::phase_take_dreps, false},
}};

void BM_EngineMad(benchmark::State& state) {
  const auto shards = static_cast<std::uint32_t>(state.range(0));
  const auto side = static_cast<Side>(state.range(1));
  const auto wire = static_cast<WireKind>(state.range(2));
  Lifecycle life(shards, wire);
  if (!life.ready()) {
    state.SkipWithError("engine or listen setup failed");
    return;
  }
  const auto timed = [side](const Phase& p) { return side == Side::both || p.server == (side == Side::passive); };
  std::array<std::uint64_t, kPhases.size()> phase_ns{};
  for (auto _ : state) {
    state.PauseTiming();
    life.tally = Tally{.server = life.server.get(), .client = life.client.get()};
    bool carried = true;
    for (std::size_t i = 0; i < kPhases.size(); ++i) {
      if (timed(kPhases[i])) {
        state.ResumeTiming();
        const std::uint64_t start = thread_cpu_ns();
        (life.*kPhases[i].run)();
        phase_ns[i] += thread_cpu_ns() - start;
        state.PauseTiming();
      } else {
        (life.*kPhases[i].run)();
      }
      carried = life.wire->carry() && carried;
    }
    std::string error = carried ? life.verdict() : "the wire lost a MAD";
    if (error.empty() && !life.settle()) error = "time-wait did not release every MAD";
    if (!error.empty()) {
      state.SkipWithError(error.c_str());
      break;
    }
    state.ResumeTiming();
  }
  const double connections = static_cast<double>(state.iterations()) * kConnections;
  if (connections == 0) return;
  for (std::size_t i = 0; i < kPhases.size(); ++i) {
    if (timed(kPhases[i])) state.counters[kPhases[i].name] = static_cast<double>(phase_ns[i]) / connections;
  }
  std::uint64_t timed_ns = 0;
  for (const std::uint64_t ns : phase_ns) timed_ns += ns;
  state.counters["mads_per_s"] =
      benchmark::Counter(static_cast<double>(kConnections * kWireMads), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns_per_mad"] = static_cast<double>(timed_ns) / (connections * kWireMads);
}

// The shuttle's own cost per MAD: one send_burst copy in and one recv_burst copy out, in bursts
// of 32 as the engine's poller receives them. Carrying the sent MADs to the receiver (untimed in
// BM_EngineMad too) happens once per kConnections MADs, with the timer paused.
void BM_ShuttleCopy(benchmark::State& state) {
  constexpr std::size_t kBurst = 32;
  const auto config = storm_fabric(1, kBurst);
  ShuttlePort a(config.hcas[0].ports[0], kConnections);
  ShuttlePort b(config.hcas[1].ports[0], kConnections);
  std::vector<MadPacket> sending(kBurst);
  std::vector<MadPacket> receiving(kBurst);
  for (auto& p : sending) p.addr.remote_lid = config.hcas[1].ports[0].lid;
  std::array<const MadPacket*, kBurst> out{};
  std::array<MadPacket*, kBurst> in{};
  for (std::size_t i = 0; i < kBurst; ++i) {
    out[i] = &sending[i];
    in[i] = &receiving[i];
  }
  for (std::size_t i = 0; i < kConnections / kBurst; ++i) static_cast<void>(a.send_burst(0, out));
  std::size_t queued = 0;  // MADs in b's receive queue; a holds kConnections when it reaches 0
  for (auto _ : state) {
    if (queued < kBurst) {
      state.PauseTiming();
      const bool carried = a.carry_to(b);
      state.ResumeTiming();
      queued = kConnections;
      if (!carried) {
        state.SkipWithError("the shuttle lost a MAD");
        break;
      }
    }
    const std::size_t received = b.recv_burst(0, in);
    const std::size_t sent = a.send_burst(0, out);
    queued -= received;
    if (sent != kBurst || received != kBurst) {
      state.SkipWithError("the shuttle lost a MAD");
      break;
    }
    benchmark::DoNotOptimize(receiving.data());
  }
  state.counters["mads_per_s"] =
      benchmark::Counter(static_cast<double>(kBurst), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_EngineMad)
    ->ArgNames({"shards", "side", "wire"})
    ->ArgsProduct({{1, 2, 4},
                   {static_cast<std::int64_t>(Side::passive), static_cast<std::int64_t>(Side::both)},
                   {static_cast<std::int64_t>(WireKind::shuttle)}})
    ->Args({1, static_cast<std::int64_t>(Side::active), static_cast<std::int64_t>(WireKind::shuttle)})
    ->ArgsProduct({{1, 2, 4},
                   {static_cast<std::int64_t>(Side::both)},
                   {static_cast<std::int64_t>(WireKind::loopback)}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ShuttleCopy);

}  // namespace
