// Behaviour of TimerWheel on hand-picked cases: firing time, cancel and rearm (also from inside the
// callback), deferral of past deadlines, cascading of long timeouts, next_deadline(), deferred arms.
#include "engine/timer_wheel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace fastcm::engine {
namespace {

constexpr std::uint64_t kTick = 1024;  // the default tick_shift = 10

struct Tagged : TimerNode {
  int id = 0;
};

int id_of(TimerNode& n) { return static_cast<Tagged&>(n).id; }

// Collects the ids fired by one expire() call.
std::vector<int> expire_ids(TimerWheel& wheel, std::uint64_t now) {
  std::vector<int> ids;
  wheel.expire(now, [&](TimerNode& n) { ids.push_back(id_of(n)); });
  return ids;
}

TEST(TimerWheel, FiresAtDeadlineRoundedUpToTickNeverEarly) {
  TimerWheel wheel;
  Tagged t;
  t.id = 1;
  ASSERT_TRUE(wheel.arm(t, 5000));  // 4.88 ticks: fires at tick 5 = 5120 ns
  EXPECT_TRUE(t.armed());
  EXPECT_EQ(t.deadline_ns(), 5000U);
  EXPECT_TRUE(expire_ids(wheel, 4999).empty());
  EXPECT_TRUE(expire_ids(wheel, 5000).empty());
  EXPECT_TRUE(expire_ids(wheel, 5 * kTick - 1).empty());
  EXPECT_EQ(expire_ids(wheel, 5 * kTick), std::vector<int>{1});
  EXPECT_FALSE(t.armed());
  EXPECT_TRUE(wheel.empty());
}

TEST(TimerWheel, DeadlineOnATickBoundaryFiresExactlyThere) {
  TimerWheel wheel;
  Tagged t;
  ASSERT_TRUE(wheel.arm(t, 7 * kTick));
  EXPECT_TRUE(expire_ids(wheel, 7 * kTick - 1).empty());
  EXPECT_EQ(expire_ids(wheel, 7 * kTick).size(), 1U);
}

TEST(TimerWheel, NanosecondTickIsExact) {
  TimerWheel wheel({.tick_shift = 0, .start_ns = 100});
  Tagged t;
  ASSERT_TRUE(wheel.arm(t, 12345));
  EXPECT_TRUE(expire_ids(wheel, 12344).empty());
  EXPECT_EQ(expire_ids(wheel, 12345).size(), 1U);
}

TEST(TimerWheel, StartTimeIsTheCallersClock) {
  const std::uint64_t start = 1'000'000'000'000;  // 1000 s
  TimerWheel wheel({.tick_shift = 10, .start_ns = start});
  EXPECT_EQ(wheel.now_ns(), start / kTick * kTick);
  Tagged t;
  ASSERT_TRUE(wheel.arm(t, start + 4096));
  EXPECT_TRUE(expire_ids(wheel, start + 4095).empty());
  EXPECT_EQ(expire_ids(wheel, start + 4096 + kTick).size(), 1U);
}

TEST(TimerWheel, RejectsTickShiftAbove30) {
  EXPECT_THROW(TimerWheel({.tick_shift = 31, .start_ns = 0}), std::invalid_argument);
  EXPECT_NO_THROW(TimerWheel({.tick_shift = 30, .start_ns = 0}));
}

TEST(TimerWheel, PastDeadlineFiresAtTheNextExpireCall) {
  TimerWheel wheel({.tick_shift = 10, .start_ns = 100 * kTick});
  Tagged t;
  t.id = 3;
  ASSERT_TRUE(wheel.arm(t, 5));
  ASSERT_TRUE(wheel.next_deadline().has_value());
  EXPECT_LE(*wheel.next_deadline(), 100 * kTick);
  EXPECT_EQ(expire_ids(wheel, 100 * kTick), std::vector<int>{3});  // same time: still fires
}

TEST(TimerWheel, ArmTwiceIsRejectedAndKeepsTheFirstDeadline) {
  TimerWheel wheel;
  Tagged t;
  ASSERT_TRUE(wheel.arm(t, 10 * kTick));
  EXPECT_FALSE(wheel.arm(t, 2 * kTick));
  EXPECT_EQ(t.deadline_ns(), 10 * kTick);
  EXPECT_EQ(wheel.size(), 1U);
  EXPECT_TRUE(expire_ids(wheel, 9 * kTick).empty());
  EXPECT_EQ(expire_ids(wheel, 10 * kTick).size(), 1U);
}

TEST(TimerWheel, CancelBeforeFire) {
  TimerWheel wheel;
  Tagged a;
  Tagged b;
  a.id = 1;
  b.id = 2;
  ASSERT_TRUE(wheel.arm(a, 10 * kTick));
  ASSERT_TRUE(wheel.arm(b, 10 * kTick));
  EXPECT_TRUE(wheel.cancel(a));
  EXPECT_FALSE(a.armed());
  EXPECT_FALSE(wheel.cancel(a));
  EXPECT_EQ(wheel.size(), 1U);
  EXPECT_EQ(expire_ids(wheel, 1'000'000 * kTick), std::vector<int>{2});
  EXPECT_FALSE(wheel.cancel(b));  // already fired
}

TEST(TimerWheel, CancelOfTheLastTimerEmptiesNextDeadline) {
  TimerWheel wheel;
  Tagged near;
  Tagged far;
  ASSERT_TRUE(wheel.arm(near, 10 * kTick));
  ASSERT_TRUE(wheel.arm(far, 5'000'000 * kTick));
  EXPECT_EQ(wheel.next_deadline(), 10 * kTick);
  EXPECT_TRUE(wheel.cancel(near));
  ASSERT_TRUE(wheel.next_deadline().has_value());
  EXPECT_GT(*wheel.next_deadline(), 10 * kTick);
  EXPECT_LE(*wheel.next_deadline(), 5'000'000 * kTick);
  EXPECT_TRUE(wheel.cancel(far));
  EXPECT_EQ(wheel.next_deadline(), std::nullopt);
  EXPECT_EQ(expire_ids(wheel, 10'000'000 * kTick).size(), 0U);
}

TEST(TimerWheel, RearmMovesTheDeadlineBothWays) {
  TimerWheel wheel;
  Tagged t;
  wheel.rearm(t, 100 * kTick);  // rearm of an idle node arms it
  wheel.rearm(t, 20 * kTick);
  EXPECT_EQ(wheel.size(), 1U);
  EXPECT_TRUE(expire_ids(wheel, 19 * kTick).empty());
  EXPECT_EQ(expire_ids(wheel, 20 * kTick).size(), 1U);
  wheel.rearm(t, 30 * kTick);
  wheel.rearm(t, 500 * kTick);
  EXPECT_TRUE(expire_ids(wheel, 499 * kTick).empty());
  EXPECT_EQ(expire_ids(wheel, 500 * kTick).size(), 1U);
}

TEST(TimerWheel, CancelSelfInsideCallbackIsANoOp) {
  TimerWheel wheel;
  Tagged t;
  ASSERT_TRUE(wheel.arm(t, kTick));
  bool cancelled = true;
  const auto fired = wheel.expire(kTick, [&](TimerNode& n) {
    EXPECT_FALSE(n.armed());
    cancelled = wheel.cancel(n);
  });
  EXPECT_EQ(fired, 1U);
  EXPECT_FALSE(cancelled);
  EXPECT_TRUE(wheel.empty());
}

TEST(TimerWheel, CallbackCancelsOthersInTheSameBucket) {
  TimerWheel wheel;
  std::vector<Tagged> same(4);
  for (int i = 0; i < 4; ++i) {
    same[static_cast<std::size_t>(i)].id = i;
    ASSERT_TRUE(wheel.arm(same[static_cast<std::size_t>(i)], 8 * kTick));
  }
  Tagged later;  // fires later within the same expire() call
  later.id = 9;
  ASSERT_TRUE(wheel.arm(later, 9000 * kTick));
  std::vector<int> fired;
  wheel.expire(10'000 * kTick, [&](TimerNode& n) {
    fired.push_back(id_of(n));
    for (auto& other : same) wheel.cancel(other);
    wheel.cancel(later);
  });
  ASSERT_EQ(fired.size(), 1U);
  EXPECT_TRUE(wheel.empty());
  for (const auto& t : same) EXPECT_FALSE(t.armed());
  EXPECT_FALSE(later.armed());
}

TEST(TimerWheel, CallbackRearmsItselfPeriodicallyWithinOneCall) {
  TimerWheel wheel;
  Tagged t;
  ASSERT_TRUE(wheel.arm(t, 100 * kTick));
  std::vector<std::uint64_t> deadlines;
  const auto fired = wheel.expire(1000 * kTick, [&](TimerNode& n) {
    deadlines.push_back(n.deadline_ns());
    wheel.rearm(n, n.deadline_ns() + 100 * kTick);
  });
  EXPECT_EQ(fired, 10U);  // 100, 200, ..., 1000 ticks
  ASSERT_EQ(deadlines.size(), 10U);
  for (std::size_t i = 0; i < deadlines.size(); ++i) EXPECT_EQ(deadlines[i], (i + 1) * 100 * kTick);
  EXPECT_EQ(t.deadline_ns(), 1100 * kTick);
  EXPECT_TRUE(wheel.cancel(t));
}

TEST(TimerWheel, CallbackArmingInThePastDefersToTheNextCall) {
  TimerWheel wheel;
  Tagged t;
  ASSERT_TRUE(wheel.arm(t, 50 * kTick));
  int runs = 0;
  auto rearm_in_past = [&](TimerNode& n) {
    ++runs;
    wheel.rearm(n, 0);
  };
  EXPECT_EQ(wheel.expire(60 * kTick, rearm_in_past), 1U);  // terminates: no re-fire in this call
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(t.armed());
  EXPECT_EQ(wheel.expire(60 * kTick, rearm_in_past), 1U);  // the next call fires it
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(wheel.cancel(t));
}

TEST(TimerWheel, CallbackArmsAnotherTimerDueLaterInTheSameCall) {
  TimerWheel wheel;
  Tagged first;
  Tagged second;
  first.id = 1;
  second.id = 2;
  ASSERT_TRUE(wheel.arm(first, 10 * kTick));
  std::vector<int> order;
  wheel.expire(5000 * kTick, [&](TimerNode& n) {
    order.push_back(id_of(n));
    if (id_of(n) == 1) {
      EXPECT_TRUE(wheel.arm(second, 4000 * kTick));
    }
  });
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(TimerWheel, FiresInTickOrderAcrossLevelsInOneCall) {
  TimerWheel wheel;
  // Armed in scrambled order, spread over several levels.
  const std::vector<std::uint64_t> ticks = {70'000, 3, 64, 4096, 262'144, 63, 65, 5'000'000, 4095};
  std::vector<Tagged> timers(ticks.size());
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    timers[i].id = static_cast<int>(i);
    ASSERT_TRUE(wheel.arm(timers[i], ticks[i] * kTick));
  }
  std::vector<std::uint64_t> fired_ticks;
  wheel.expire(10'000'000 * kTick,
               [&](TimerNode& n) { fired_ticks.push_back(n.deadline_ns() / kTick); });
  EXPECT_EQ(fired_ticks,
            (std::vector<std::uint64_t>{3, 63, 64, 65, 4095, 4096, 70'000, 262'144, 5'000'000}));
}

// Every CM timeout 4.096 µs · 2^t (t = 0..31) times 1..16 retries, armed at an odd start time,
// driven only by next_deadline(): each fires exactly at its rounded-up fire time, and the wakes
// beyond one per timer stay within one per level crossed.
TEST(TimerWheel, LongCmTimeoutsCascadeAndFireOnTime) {
  const std::uint64_t start = 123'456'789;
  TimerWheel wheel({.tick_shift = 10, .start_ns = start});
  std::vector<Tagged> timers(32 * 4);
  std::size_t k = 0;
  for (std::uint64_t t = 0; t < 32; ++t) {
    for (const std::uint64_t retries : {1U, 3U, 7U, 16U}) {
      timers[k].id = static_cast<int>(k);
      ASSERT_TRUE(wheel.arm(timers[k], start + (std::uint64_t{4096} << t) * retries));
      ++k;
    }
  }
  std::uint64_t now = start;
  std::size_t fired = 0;
  std::size_t wakes = 0;
  while (auto next = wheel.next_deadline()) {
    ASSERT_GE(*next, now);
    now = *next;
    ++wakes;
    fired += wheel.expire(now, [&](TimerNode& n) {
      EXPECT_LE(n.deadline_ns(), now);
      EXPECT_EQ(now, (n.deadline_ns() + kTick - 1) / kTick * kTick);  // exactly on time
    });
    ASSERT_LE(wakes, timers.size() * 11);
  }
  EXPECT_EQ(fired, timers.size());
  EXPECT_EQ(now, ((start + (std::uint64_t{4096} << 31) * 16) + kTick - 1) / kTick * kTick);
  EXPECT_GT(now, std::uint64_t{1} << 47);  // the 2^31 · 4.096 µs · 16 range was covered
}

TEST(TimerWheel, NextDeadlineIsExactNearAndALowerBoundFar) {
  Tagged far;  // the nodes outlive the wheel, which disarms them
  Tagged near;
  TimerWheel wheel;
  EXPECT_EQ(wheel.next_deadline(), std::nullopt);
  ASSERT_TRUE(wheel.arm(far, 1'000'000 * kTick + 17));
  const auto bound = wheel.next_deadline();
  ASSERT_TRUE(bound.has_value());
  EXPECT_GT(*bound, 0U);
  EXPECT_LE(*bound, 1'000'001 * kTick);
  EXPECT_EQ(wheel.expire(*bound, [](TimerNode&) {}), 0U);  // cascades, fires nothing
  ASSERT_TRUE(wheel.arm(near, wheel.now_ns() + 5 * kTick - 3));
  EXPECT_EQ(wheel.next_deadline(), wheel.now_ns() + 5 * kTick);  // level 0: exact
}

TEST(TimerWheel, HugeJumpFiresEverythingDue) {
  TimerWheel wheel;
  std::vector<Tagged> timers(100);
  for (std::size_t i = 0; i < timers.size(); ++i) {
    ASSERT_TRUE(wheel.arm(timers[i], std::uint64_t{1} << (10 + i % 53)));
  }
  EXPECT_EQ(wheel.expire(std::uint64_t{1} << 62, [](TimerNode&) {}), timers.size());
  EXPECT_EQ(wheel.next_deadline(), std::nullopt);
}

TEST(TimerWheel, DeadlinesNearTheEndOfTimeDoNotOverflow) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  {
    TimerWheel wheel;  // kMax rounds up past 2^64 - 1 ns: never fires
    Tagged t;
    ASSERT_TRUE(wheel.arm(t, kMax));
    EXPECT_EQ(wheel.next_deadline(), kMax);
    EXPECT_EQ(wheel.expire(kMax, [](TimerNode&) {}), 0U);
    EXPECT_TRUE(wheel.cancel(t));
  }
  {
    TimerWheel wheel({.tick_shift = 0, .start_ns = 0});
    Tagged t;
    ASSERT_TRUE(wheel.arm(t, kMax));
    EXPECT_EQ(wheel.expire(kMax - 1, [](TimerNode&) {}), 0U);
    EXPECT_EQ(wheel.expire(kMax, [](TimerNode&) {}), 1U);
  }
}

TEST(TimerWheel, EarlierNowThanBeforeDoesNotRewind) {
  TimerWheel wheel;
  Tagged t;
  EXPECT_EQ(wheel.expire(100 * kTick, [](TimerNode&) {}), 0U);
  ASSERT_TRUE(wheel.arm(t, 150 * kTick));
  EXPECT_EQ(wheel.expire(20 * kTick, [](TimerNode&) {}), 0U);
  EXPECT_EQ(wheel.now_ns(), 100 * kTick);
  EXPECT_EQ(wheel.expire(150 * kTick, [](TimerNode&) {}), 1U);
}

TEST(TimerWheel, ThrowingCallbackLeavesTheRestArmedForTheNextCall) {
  TimerWheel wheel;
  std::vector<Tagged> timers(3);
  for (auto& t : timers) ASSERT_TRUE(wheel.arm(t, 5 * kTick));
  int runs = 0;
  EXPECT_THROW(wheel.expire(5 * kTick,
                            [&](TimerNode&) {
                              ++runs;
                              throw std::runtime_error("callback failed");
                            }),
               std::runtime_error);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(wheel.size(), 2U);
  EXPECT_EQ(wheel.next_deadline(), 5 * kTick);
  EXPECT_EQ(wheel.expire(5 * kTick, [](TimerNode&) {}), 2U);
  for (const auto& t : timers) EXPECT_FALSE(t.armed());
}

TEST(TimerWheel, DestroyingTheWheelDisarmsItsNodes) {
  std::vector<Tagged> timers(5);
  {
    TimerWheel wheel;
    ASSERT_TRUE(wheel.arm(timers[0], 0));  // due
    ASSERT_TRUE(wheel.arm(timers[1], 3 * kTick));
    ASSERT_TRUE(wheel.arm(timers[2], 3 * kTick));
    ASSERT_TRUE(wheel.arm(timers[3], 100'000 * kTick));
    ASSERT_TRUE(wheel.arm(timers[4], std::uint64_t{1} << 60));
  }
  for (const auto& t : timers) EXPECT_FALSE(t.armed());
}

// ---- deferred arms: the delay counts from the time the next expire() is given -------------------

TEST(TimerWheel, DeferredArmCountsItsDelayFromTheNextExpire) {
  TimerWheel wheel;
  Tagged t;
  t.id = 1;
  wheel.defer(t, 10 * kTick);
  EXPECT_TRUE(t.armed());
  EXPECT_EQ(wheel.size(), 1U);
  EXPECT_EQ(wheel.next_deadline(), std::optional<std::uint64_t>(0));  // "call expire() now"
  EXPECT_TRUE(expire_ids(wheel, 5 * kTick).empty());                  // placed at 15 ticks
  EXPECT_EQ(t.deadline_ns(), 15 * kTick);
  EXPECT_EQ(wheel.next_deadline(), std::optional<std::uint64_t>(15 * kTick));
  EXPECT_TRUE(expire_ids(wheel, 15 * kTick - 1).empty());
  EXPECT_EQ(expire_ids(wheel, 15 * kTick), std::vector<int>{1});
  EXPECT_TRUE(wheel.empty());
}

TEST(TimerWheel, ADeferredArmReplacedOrCancelledBeforeTheExpireFiresAsTheLastCallSays) {
  TimerWheel wheel;
  Tagged cancelled, redeferred, rearmed;
  cancelled.id = 1;
  redeferred.id = 2;
  rearmed.id = 3;
  wheel.defer(cancelled, kTick);
  EXPECT_TRUE(wheel.cancel(cancelled));
  EXPECT_FALSE(cancelled.armed());
  wheel.defer(redeferred, kTick);
  wheel.defer(redeferred, 3 * kTick);
  wheel.defer(rearmed, kTick);
  wheel.rearm(rearmed, 2 * kTick);
  EXPECT_EQ(wheel.size(), 2U);
  EXPECT_TRUE(expire_ids(wheel, 0).empty());
  EXPECT_EQ(expire_ids(wheel, 2 * kTick), std::vector<int>{3});
  EXPECT_EQ(expire_ids(wheel, 3 * kTick), std::vector<int>{2});
  EXPECT_TRUE(expire_ids(wheel, 100 * kTick).empty());
  EXPECT_TRUE(wheel.empty());
}

TEST(TimerWheel, DeferringAnArmedTimerMovesIt) {
  TimerWheel wheel;
  Tagged t;
  t.id = 7;
  ASSERT_TRUE(wheel.arm(t, 2 * kTick));
  wheel.defer(t, 5 * kTick);
  EXPECT_EQ(wheel.size(), 1U);
  EXPECT_TRUE(expire_ids(wheel, kTick).empty());  // placed at 6 ticks
  EXPECT_TRUE(expire_ids(wheel, 5 * kTick).empty());
  EXPECT_EQ(expire_ids(wheel, 6 * kTick), std::vector<int>{7});
}

TEST(TimerWheel, ADeferredArmWithoutDelayFiresInThatExpire) {
  TimerWheel wheel({.start_ns = 40 * kTick});
  Tagged t;
  t.id = 4;
  wheel.defer(t, 0);
  EXPECT_EQ(expire_ids(wheel, 40 * kTick), std::vector<int>{4});
}

TEST(TimerWheel, DeferringFromInsideTheCallbackWaitsForTheNextCall) {
  TimerWheel wheel;
  Tagged first, second;
  first.id = 1;
  second.id = 2;
  ASSERT_TRUE(wheel.arm(first, kTick));
  std::vector<int> fired;
  wheel.expire(kTick, [&](TimerNode& n) {
    fired.push_back(id_of(n));
    if (&n == &first) wheel.defer(second, 0);
  });
  EXPECT_EQ(fired, std::vector<int>{1});
  EXPECT_TRUE(second.armed());
  EXPECT_EQ(expire_ids(wheel, kTick), std::vector<int>{2});
}

TEST(TimerWheel, ADelayPastTheEndOfTimeNeverFires) {
  TimerWheel wheel({.start_ns = 8 * kTick});
  Tagged t;
  wheel.defer(t, std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(expire_ids(wheel, 8 * kTick).empty());
  EXPECT_EQ(t.deadline_ns(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(expire_ids(wheel, std::numeric_limits<std::uint64_t>::max() - kTick).empty());
  EXPECT_TRUE(wheel.cancel(t));
}

TEST(TimerWheel, DestroyingTheWheelDisarmsDeferredTimersForReuse) {
  Tagged t;
  t.id = 9;
  auto first = std::make_unique<TimerWheel>();
  first->defer(t, kTick);
  first.reset();
  EXPECT_FALSE(t.armed());
  TimerWheel second;
  ASSERT_TRUE(second.arm(t, 3 * kTick));
  EXPECT_EQ(expire_ids(second, 3 * kTick), std::vector<int>{9});
}

}  // namespace
}  // namespace fastcm::engine
