// TimerWheel against a reference model (std::multimap ordered by fire tick) on seeded random
// sequences of arm, rearm, cancel and expire, with cancels and rearms also made from inside the
// callback. Checks exact equality of what fires, firing order, no early fire, size() and
// next_deadline() after every step.
#include "engine/timer_wheel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace fastcm::engine {
namespace {

struct Tagged : TimerNode {
  std::size_t id = 0;
};

// What the header comment promises, written the slow and obvious way.
class ReferenceWheel {
 public:
  ReferenceWheel(unsigned shift, std::uint64_t start, std::size_t n)
      : shift_(shift), tick_(start >> shift), where_(n), tick_of_(n) {}

  [[nodiscard]] std::uint64_t fire_tick(std::uint64_t deadline) const {
    const std::uint64_t mask = (std::uint64_t{1} << shift_) - 1;
    return (deadline >> shift_) + ((deadline & mask) != 0 ? 1 : 0);
  }

  [[nodiscard]] bool armed(std::size_t id) const { return where_[id] != Where::idle; }
  [[nodiscard]] std::size_t size() const { return by_tick_.size() + overdue_.size() + firing_overdue_.size(); }

  // `current` is the tick the wheel is processing (its now_tick_ at the time of the call).
  void arm(std::size_t id, std::uint64_t deadline, std::uint64_t current) {
    const std::uint64_t ft = fire_tick(deadline);
    if (ft <= current) {
      overdue_.insert(id);
      where_[id] = Where::overdue;
    } else {
      by_tick_.emplace(ft, id);
      where_[id] = Where::slots;
    }
    tick_of_[id] = ft;
  }

  bool cancel(std::size_t id) {
    switch (where_[id]) {
      case Where::idle: return false;
      case Where::overdue: overdue_.erase(id); break;
      case Where::firing_overdue: firing_overdue_.erase(id); break;
      case Where::slots: erase_slot_entry(id); break;
    }
    where_[id] = Where::idle;
    return true;
  }

  // Start of an expire(now) call: returns its target tick.
  std::uint64_t begin_expire(std::uint64_t now) {
    target_ = std::max(tick_, now >> shift_);
    firing_overdue_ = std::move(overdue_);
    overdue_.clear();
    for (const std::size_t id : firing_overdue_) where_[id] = Where::firing_overdue;
    return target_;
  }

  // The wheel fired `id`: checks it was next in line, updates the model and returns the tick the
  // wheel is processing during the callback.
  std::uint64_t on_fired(std::size_t id) {
    if (!firing_overdue_.empty()) {  // overdue timers go first, in any order
      EXPECT_EQ(where_[id], Where::firing_overdue) << "id " << id;
      firing_overdue_.erase(id);
      where_[id] = Where::idle;
      return tick_;
    }
    EXPECT_EQ(where_[id], Where::slots) << "id " << id;
    EXPECT_FALSE(by_tick_.empty());
    if (by_tick_.empty()) return tick_;
    EXPECT_EQ(tick_of_[id], by_tick_.begin()->first) << "id " << id << " fired out of tick order";
    EXPECT_LE(tick_of_[id], target_) << "id " << id << " fired early";
    erase_slot_entry(id);
    where_[id] = Where::idle;
    tick_ = std::max(tick_, tick_of_[id]);
    return tick_;
  }

  void end_expire() {
    EXPECT_TRUE(firing_overdue_.empty());
    if (!by_tick_.empty()) {
      EXPECT_GT(by_tick_.begin()->first, target_) << "a due timer did not fire";
    }
    tick_ = target_;
  }

  [[nodiscard]] bool has_overdue() const { return !overdue_.empty(); }
  [[nodiscard]] std::optional<std::uint64_t> earliest_tick() const {
    if (by_tick_.empty()) return std::nullopt;
    return by_tick_.begin()->first;
  }
  [[nodiscard]] std::uint64_t tick() const { return tick_; }

 private:
  enum class Where : std::uint8_t { idle, overdue, firing_overdue, slots };

  void erase_slot_entry(std::size_t id) {
    auto [first, last] = by_tick_.equal_range(tick_of_[id]);
    for (auto it = first; it != last; ++it) {
      if (it->second == id) {
        by_tick_.erase(it);
        return;
      }
    }
    ADD_FAILURE() << "model lost id " << id;
  }

  unsigned shift_;
  std::uint64_t tick_;
  std::uint64_t target_ = 0;
  std::multimap<std::uint64_t, std::size_t> by_tick_;
  std::set<std::size_t> overdue_;          // armed already due: fire first in the next call
  std::set<std::size_t> firing_overdue_;   // overdue_ being fired by the running call
  std::vector<Where> where_;
  std::vector<std::uint64_t> tick_of_;  // fire tick of the last arm, per id
};

// A span whose magnitude is spread evenly over 0..2^max_bits, so every level is exercised.
std::uint64_t random_span(std::mt19937_64& rng, unsigned max_bits) {
  const auto bits = static_cast<unsigned>(rng() % (max_bits + 1));
  return bits == 0 ? 0 : rng() >> (64 - bits);
}

class TimerWheelModel : public ::testing::TestWithParam<std::tuple<unsigned, std::uint64_t>> {};

TEST_P(TimerWheelModel, RandomSequenceMatchesReference) {
  const auto [shift, seed] = GetParam();
  constexpr std::size_t kTimers = 400;  // few enough that arm/cancel often hit armed nodes
  constexpr int kSteps = 40'000;
  std::mt19937_64 rng(seed);
  const std::uint64_t start = rng() >> 20;
  std::vector<Tagged> timers(kTimers);  // outlives the wheel, which disarms them
  for (std::size_t i = 0; i < kTimers; ++i) timers[i].id = i;
  TimerWheel wheel({.tick_shift = shift, .start_ns = start});
  ReferenceWheel model(shift, start, kTimers);
  std::uint64_t now = start;
  std::size_t total_fired = 0;

  auto pick = [&] { return static_cast<std::size_t>(rng() % kTimers); };
  // Mostly future deadlines at every scale up to 2^48 ns; some already past.
  auto deadline = [&] {
    return rng() % 16 == 0 ? now - std::min(now, random_span(rng, 30)) : now + random_span(rng, 48);
  };

  for (int step = 0; step < kSteps; ++step) {
    const auto op = rng() % 100;
    if (op < 45) {
      const std::size_t id = pick();
      const std::uint64_t d = deadline();
      const bool was_armed = model.armed(id);
      if (rng() % 2 == 0) {
        EXPECT_EQ(wheel.arm(timers[id], d), !was_armed);
        if (!was_armed) model.arm(id, d, model.tick());
      } else {
        wheel.rearm(timers[id], d);
        model.cancel(id);
        model.arm(id, d, model.tick());
      }
    } else if (op < 75) {
      const std::size_t id = pick();
      EXPECT_EQ(wheel.cancel(timers[id]), model.cancel(id));
    } else {
      now += rng() % 8 == 0 ? 0 : random_span(rng, rng() % 64 == 0 ? 44 : 20);  // rare long jumps
      const std::uint64_t target = model.begin_expire(now);
      std::size_t fired = 0;
      const std::size_t n = wheel.expire(now, [&](TimerNode& node) {
        const std::size_t id = static_cast<Tagged&>(node).id;
        EXPECT_FALSE(node.armed());
        EXPECT_LE(node.deadline_ns(), now) << "fired before its deadline";
        const std::uint64_t current = model.on_fired(id);
        ++fired;
        const auto action = rng() % 8;
        if (action == 0) {  // cancel another, possibly one queued in this same call
          const std::size_t other = pick();
          EXPECT_EQ(wheel.cancel(timers[other]), model.cancel(other));
        } else if (action == 1) {  // rearm self: retransmission, maybe still due in this call
          const std::uint64_t d = node.deadline_ns() + 1 + random_span(rng, 30);
          wheel.rearm(node, d);
          model.arm(id, d, current);
        } else if (action == 2) {  // rearm another, at any time including the past
          const std::size_t other = pick();
          const std::uint64_t d = deadline();
          wheel.rearm(timers[other], d);
          model.cancel(other);
          model.arm(other, d, current);
        }
      });
      model.end_expire();
      EXPECT_EQ(n, fired);
      EXPECT_EQ(wheel.now_ns() >> shift, target);
      total_fired += n;
    }
    ASSERT_EQ(wheel.size(), model.size()) << "step " << step;
    const auto next = wheel.next_deadline();
    if (model.has_overdue()) {
      ASSERT_TRUE(next.has_value());
      EXPECT_LE(*next, now);
    } else if (const auto earliest = model.earliest_tick()) {
      ASSERT_TRUE(next.has_value());
      const std::uint64_t fire_ns = *earliest << shift;
      EXPECT_LE(*next, fire_ns) << "next_deadline past the earliest timer, step " << step;
      EXPECT_GT(*next, wheel.now_ns());
      if ((*earliest >> 6) == (model.tick() >> 6)) {
        EXPECT_EQ(*next, fire_ns);  // in level 0: exact
      }
    } else {
      EXPECT_EQ(next, std::nullopt);
    }
    if (::testing::Test::HasFailure()) FAIL() << "stopping at step " << step << ", seed " << seed;
  }
  EXPECT_GT(total_fired, std::size_t{kSteps} / 20);  // the sequence really fired timers
}

INSTANTIATE_TEST_SUITE_P(Seeds, TimerWheelModel,
                         ::testing::Combine(::testing::Values(0U, 10U, 20U),
                                            ::testing::Values(std::uint64_t{1}, std::uint64_t{42},
                                                              std::uint64_t{0xC0FFEE})));

}  // namespace
}  // namespace fastcm::engine
