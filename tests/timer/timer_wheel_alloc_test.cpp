// One million timers through TimerWheel: arm, cancel half, rearm, expire all, with the global
// operator new counted to show the wheel never allocates.
#include "engine/timer_wheel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <vector>

namespace {
// Single-threaded test binary: a plain counter is enough.
std::size_t g_allocations = 0;
}  // namespace

// Counting replacements of the global allocation functions (the array and nothrow forms forward
// to these in libstdc++). They stay out of line: inlined into a caller, g++ 12 pairs malloc() or
// free() with the caller's delete or new and raises a false -Wmismatched-new-delete.
[[gnu::noinline]] void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace fastcm::engine {
namespace {

TEST(TimerWheelScale, MillionTimersWithoutAllocation) {
  constexpr std::size_t kTimers = 1'000'000;
  const std::size_t at_start = g_allocations;
  std::vector<TimerNode> timers(kTimers);
  auto wheel = std::make_unique<TimerWheel>();
  std::mt19937_64 rng(7);
  // CM-like deadlines: 4.096 µs · 2^t for t in 0..23, times 1..4 retries.
  std::vector<std::uint64_t> deadlines(kTimers);
  for (auto& d : deadlines) d = (std::uint64_t{4096} << (rng() % 24)) * (1 + rng() % 4);

  const std::size_t before = g_allocations;
  ASSERT_GT(before, at_start);  // the counter sees the set-up's allocations
  std::size_t armed_ok = 0;
  for (std::size_t i = 0; i < kTimers; ++i) armed_ok += wheel->arm(timers[i], deadlines[i]) ? 1U : 0U;
  const std::size_t size_after_arm = wheel->size();
  std::size_t cancelled = 0;
  for (std::size_t i = 0; i < kTimers; i += 2) cancelled += wheel->cancel(timers[i]) ? 1U : 0U;
  for (std::size_t i = 1; i < kTimers; i += 4) wheel->rearm(timers[i], deadlines[i] / 2 + 1);
  std::size_t fired = 0;
  std::size_t early = 0;
  std::uint64_t now = 0;
  while (auto next = wheel->next_deadline()) {
    now = *next;
    fired += wheel->expire(now, [&](TimerNode& n) { early += n.deadline_ns() > now ? 1U : 0U; });
  }
  const std::size_t after = g_allocations;

  EXPECT_EQ(after, before);
  EXPECT_EQ(armed_ok, kTimers);
  EXPECT_EQ(size_after_arm, kTimers);
  EXPECT_EQ(cancelled, kTimers / 2);
  EXPECT_EQ(fired, kTimers / 2);
  EXPECT_EQ(early, 0U);
  EXPECT_TRUE(wheel->empty());
  for (const auto& t : timers) ASSERT_FALSE(t.armed());
}

}  // namespace
}  // namespace fastcm::engine
