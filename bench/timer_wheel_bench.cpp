// Timer wheel speed on the shard's timer paths, on a simulated clock (no wall-clock reads):
// - ArmCancel: arm a CM timeout, then cancel it (a REQ timer cancelled by its REP), with 0 .. 1M
//   other timers pending; time per arm+cancel pair.
// - Rearm: move an armed timer to a new deadline (a retransmission or an MRA extension).
// - ArmExpire: arm a batch of timeouts, then advance the clock past them in poll-loop steps; time
//   per timer, including its cascades and its callback.
// - ExpireIdle: one expire() call with nothing due and 1M timers pending: the poll loop's cost.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/timer_wheel.h"

namespace {

using fastcm::engine::TimerNode;
using fastcm::engine::TimerWheel;

constexpr std::uint64_t kStartNs = 1'000'000'000;  // an arbitrary non-zero shard clock

// CM response timeouts 4.096 µs · 2^t for t in [t_min, t_max], pre-drawn so the loop measures the
// wheel, not the random generator.
std::vector<std::uint64_t> cm_timeouts(std::size_t n, unsigned t_min, unsigned t_max) {
  std::mt19937_64 rng(1);
  std::vector<std::uint64_t> out(n);
  for (auto& t : out) t = std::uint64_t{4096} << (t_min + rng() % (t_max - t_min + 1));
  return out;
}

// `count` timers with deadlines between 4.3 s and 2.4 h: never due during a run.
void arm_background(TimerWheel& wheel, std::vector<TimerNode>& nodes) {
  const auto timeouts = cm_timeouts(nodes.size(), 20, 31);
  for (std::size_t i = 0; i < nodes.size(); ++i) wheel.arm(nodes[i], kStartNs + timeouts[i]);
}

void BM_ArmCancel(benchmark::State& state) {
  std::vector<TimerNode> background(static_cast<std::size_t>(state.range(0)));
  std::vector<TimerNode> nodes(1024);
  TimerWheel wheel({.tick_shift = 10, .start_ns = kStartNs});
  arm_background(wheel, background);
  const auto timeouts = cm_timeouts(4096, 8, 22);  // 1 ms .. 17 s
  std::size_t i = 0;
  for (auto _ : state) {
    TimerNode& node = nodes[i % nodes.size()];
    wheel.arm(node, kStartNs + timeouts[i % timeouts.size()]);
    benchmark::DoNotOptimize(wheel.cancel(node));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ArmCancel)->Arg(0)->Arg(10'000)->Arg(1'000'000);

void BM_Rearm(benchmark::State& state) {
  std::vector<TimerNode> background(static_cast<std::size_t>(state.range(0)));
  std::vector<TimerNode> nodes(1024);
  TimerWheel wheel({.tick_shift = 10, .start_ns = kStartNs});
  arm_background(wheel, background);
  const auto timeouts = cm_timeouts(4096, 8, 22);
  for (std::size_t k = 0; k < nodes.size(); ++k) wheel.arm(nodes[k], kStartNs + timeouts[k]);
  std::size_t i = 0;
  for (auto _ : state) {
    wheel.rearm(nodes[i % nodes.size()], kStartNs + timeouts[(i + 7) % timeouts.size()]);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Rearm)->Arg(0)->Arg(1'000'000);

// Per iteration: arm `batch` timers with timeouts 4 µs .. 1 ms, then expire() every 64 ticks
// (65.5 µs) until all have fired.
void BM_ArmExpire(benchmark::State& state) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  std::vector<TimerNode> nodes(batch);
  TimerWheel wheel({.tick_shift = 10, .start_ns = kStartNs});
  const auto timeouts = cm_timeouts(batch, 0, 8);
  constexpr std::uint64_t kStepNs = 64 * 1024;
  std::uint64_t now = kStartNs;
  std::size_t fired = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < batch; ++k) wheel.arm(nodes[k], now + timeouts[k]);
    while (!wheel.empty()) {
      now += kStepNs;
      fired += wheel.expire(now, [](TimerNode& n) { benchmark::DoNotOptimize(&n); });
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(fired));
}
BENCHMARK(BM_ArmExpire)->Arg(64)->Arg(4096)->Arg(65'536);

// Long timeouts (4.3 s .. 2.4 h) fired by jumping the clock along next_deadline(): every timer
// cascades through several levels before it fires.
void BM_ArmExpireLong(benchmark::State& state) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  std::vector<TimerNode> nodes(batch);
  TimerWheel wheel({.tick_shift = 10, .start_ns = kStartNs});
  const auto timeouts = cm_timeouts(batch, 20, 31);
  std::uint64_t now = kStartNs;
  std::size_t fired = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < batch; ++k) wheel.arm(nodes[k], now + timeouts[k]);
    while (auto next = wheel.next_deadline()) {
      now = *next;
      fired += wheel.expire(now, [](TimerNode& n) { benchmark::DoNotOptimize(&n); });
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(fired));
}
BENCHMARK(BM_ArmExpireLong)->Arg(4096)->Arg(65'536);

void BM_ExpireIdle(benchmark::State& state) {
  std::vector<TimerNode> background(1'000'000);
  TimerWheel wheel({.tick_shift = 10, .start_ns = kStartNs});
  arm_background(wheel, background);
  std::uint64_t now = kStartNs;
  for (auto _ : state) {
    now += 100;  // a poll-loop iteration later; nothing is due for seconds
    benchmark::DoNotOptimize(wheel.expire(now, [](TimerNode&) {}));
  }
}
BENCHMARK(BM_ExpireIdle);

}  // namespace

BENCHMARK_MAIN();
