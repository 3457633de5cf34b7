// Seeded fault injection: loss, duplication, reordering and delay, their rates and determinism,
// rule matching (direction, attribute, specificity) and rule errors. Time is a VirtualClock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "loopback_test_support.h"

namespace fastcm::loopback::test {
namespace {

constexpr PortRef kClient0{.hca = 0, .port = 0};
constexpr PortRef kClient1{.hca = 0, .port = 1};
constexpr PortRef kServer0{.hca = 1, .port = 0};

LoopbackConfig deep_queues(std::uint64_t seed = 1) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(2);
  cfg.rx_queue_depth = 1U << 14;  // room for 10k MADs and their duplicates
  cfg.fault_seed = seed;
  return cfg;
}

std::size_t inversions(const std::vector<std::uint32_t>& seq) {
  std::size_t n = 0;
  for (std::size_t i = 1; i < seq.size(); ++i) if (seq[i] < seq[i - 1]) ++n;
  return n;
}

TEST(LoopbackFaults, FullLossDropsOneDirectionOnly) {
  Harness h;
  h.fabric.set_fault(FaultRule{.from = kClient0, .to = kServer0, .loss_pct = 100});
  send_tagged(h.client(), 0, to_lid(17), 0, 10);
  send_tagged(h.client(), 1, to_lid(17), 10, 2);  // another source port
  send_tagged(h.server(), 0, to_lid(1), 20, 3);   // the reverse direction
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{10, 11}));
  EXPECT_EQ(drain(h.client(), 0).size(), 3u);
  EXPECT_EQ(h.fabric.counters(kClient0).dropped_by_fault, 10u);
  EXPECT_EQ(h.fabric.counters(kClient0).sent, 10u);
}

TEST(LoopbackFaults, LossRateIsNearTheRuleOver10kMads) {
  Harness h(deep_queues());
  h.fabric.set_fault(FaultRule{.loss_pct = 10});
  send_tagged(h.client(), 0, to_lid(17), 0, 10'000);
  const std::size_t got = drain(h.server(), 0).size();
  const PortCounters c = h.fabric.counters(kClient0);
  EXPECT_EQ(got + c.dropped_by_fault, 10'000u);
  EXPECT_GT(c.dropped_by_fault, 850u);  // expected 1000, sigma 30
  EXPECT_LT(c.dropped_by_fault, 1150u);
}

TEST(LoopbackFaults, DuplicatesArriveTwiceAndAreCounted) {
  Harness h(deep_queues());
  h.fabric.set_fault(FaultRule{.dup_pct = 5});
  send_tagged(h.client(), 0, to_lid(17), 0, 10'000);
  std::map<std::uint32_t, int> seen;
  for (std::uint32_t t : tags(drain(h.server(), 0))) ++seen[t];
  ASSERT_EQ(seen.size(), 10'000u);
  const auto twice = static_cast<std::uint64_t>(
      std::count_if(seen.begin(), seen.end(), [](const auto& kv) { return kv.second == 2; }));
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](const auto& kv) { return kv.second <= 2; }));
  EXPECT_EQ(h.fabric.counters(kClient0).duplicated, twice);
  EXPECT_EQ(h.fabric.counters(kServer0).delivered, 10'000u + twice);
  EXPECT_GT(twice, 380u);  // expected 500, sigma 22
  EXPECT_LT(twice, 620u);
}

TEST(LoopbackFaults, ReorderedMadsAreOvertakenAndArriveWithinTheWindow) {
  Harness h(deep_queues());
  h.fabric.set_fault(FaultRule{.reorder_pct = 20, .reorder_window_ns = 1000});
  send_tagged(h.client(), 0, to_lid(17), 0, 10'000);
  const std::uint64_t held = h.fabric.counters(kClient0).delayed;
  EXPECT_GT(held, 1800u);  // expected 2000, sigma 40
  EXPECT_LT(held, 2200u);
  std::vector<std::uint32_t> order = tags(drain(h.server(), 0));
  EXPECT_EQ(order.size(), 10'000u - held);
  EXPECT_EQ(inversions(order), 0u) << "nothing overtaken before the window";
  h.clock.advance(1000);
  const auto late = tags(drain(h.server(), 0));
  EXPECT_EQ(late.size(), held);
  order.insert(order.end(), late.begin(), late.end());
  EXPECT_GT(inversions(late), 0u) << "held MADs leave in deliver-at order, not send order";
  std::sort(order.begin(), order.end());
  for (std::uint32_t i = 0; i < order.size(); ++i) ASSERT_EQ(order[i], i);
}

TEST(LoopbackFaults, ReorderingInterleavesWithLaterTraffic) {
  Harness h(deep_queues(3));
  h.fabric.set_fault(FaultRule{.reorder_pct = 50, .reorder_window_ns = 100});
  std::vector<std::uint32_t> order;
  for (std::uint32_t t = 0; t < 1000; ++t) {
    send_one(h.client(), 0, make_mad(to_lid(17), t));
    h.clock.advance(10);
    for (std::uint32_t got : tags(drain(h.server(), 0))) order.push_back(got);
  }
  h.clock.advance(100);
  for (std::uint32_t got : tags(drain(h.server(), 0))) order.push_back(got);
  EXPECT_EQ(order.size(), 1000u);
  EXPECT_GT(inversions(order), 100u);
  EXPECT_EQ(h.fabric.total_pending(), 0u);
}

TEST(LoopbackFaults, DelayHoldsMadsUntilTheClockPassesTheirTime) {
  Harness h;
  h.clock.set(1'000);
  h.fabric.set_fault(FaultRule{.to = kServer0, .delay_ns = 5'000});
  send_tagged(h.client(), 0, to_lid(17), 0, 3);
  send_one(h.client(), 0, make_mad(to_lid(18), 9));  // not to server port 0: not delayed
  EXPECT_EQ(tags(drain(h.server(), 1)), std::vector<std::uint32_t>{9});
  EXPECT_EQ(h.fabric.counters(kClient0).delayed, 3u);
  EXPECT_EQ(h.fabric.pending(kServer0), 3u);
  EXPECT_TRUE(drain(h.server(), 0).empty());
  EXPECT_EQ(h.fabric.next_delivery_ns(kServer0), 6'000u);
  h.clock.set(5'999);
  EXPECT_TRUE(drain(h.server(), 0).empty());
  EXPECT_EQ(h.fabric.pending(kServer0), 3u);
  h.clock.set(6'000);
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(h.fabric.pending(kServer0), 0u);
  EXPECT_EQ(h.fabric.next_delivery_ns(kServer0), std::nullopt);
}

TEST(LoopbackFaults, HeldMadsComeOutInDeliverAtOrderBeforeLaterArrivals) {
  Harness h;
  h.fabric.set_fault(FaultRule{.attr_id = kAttrReq, .delay_ns = 300});
  send_one(h.client(), 0, make_mad(to_lid(17), 1));  // due at 300
  h.clock.set(100);
  send_one(h.client(), 0, make_mad(to_lid(17), 2));  // due at 400
  h.clock.set(200);
  h.fabric.set_fault(FaultRule{.attr_id = kAttrReq, .delay_ns = 50});
  send_one(h.client(), 0, make_mad(to_lid(17), 3));  // due at 250: overtakes 1 and 2
  EXPECT_TRUE(drain(h.server(), 0).empty());
  EXPECT_EQ(h.fabric.next_delivery_ns(kServer0), 250u);
  h.clock.set(500);
  send_one(h.client(), 0, make_mad(to_lid(17), 4, kAttrRep));  // no rule: due at once
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{3, 1, 2, 4}));
}

TEST(LoopbackFaults, AQueueFullOfHeldMadsDropsNewArrivals) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(1);
  cfg.rx_queue_depth = 2;
  Harness h(cfg);
  h.fabric.set_fault(FaultRule{.delay_ns = 10});
  send_tagged(h.client(), 0, to_lid(17), 0, 3);
  EXPECT_EQ(h.fabric.counters(kServer0).dropped_queue_full, 1u);
  EXPECT_TRUE(drain(h.server(), 0).empty());
  h.clock.advance(10);
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{0, 1}));
}

// Every outcome of a mixed-fault run: arrival order after the clock passes every delay, and counters.
struct RunResult {
  std::vector<std::uint32_t> order;
  PortCounters sender;
  friend bool operator==(const RunResult&, const RunResult&) = default;
};

RunResult mixed_fault_run(std::uint64_t seed) {
  Harness h(deep_queues(seed));
  h.fabric.set_fault(FaultRule{.loss_pct = 30, .dup_pct = 20, .reorder_pct = 30,
                               .reorder_window_ns = 500});
  RunResult r;
  for (std::uint32_t t = 0; t < 2000; ++t) {
    send_one(h.client(), 0, make_mad(to_lid(17), t));
    if (t % 8 == 0) h.clock.advance(25);
    for (std::uint32_t got : tags(drain(h.server(), 0))) r.order.push_back(got);
  }
  h.clock.advance(500);
  for (std::uint32_t got : tags(drain(h.server(), 0))) r.order.push_back(got);
  r.sender = h.fabric.counters(kClient0);
  return r;
}

TEST(LoopbackFaults, TheSameSeedAndSendOrderGiveTheSameOutcome) {
  const RunResult a = mixed_fault_run(7);
  const RunResult b = mixed_fault_run(7);
  EXPECT_EQ(a, b);
  EXPECT_GT(a.sender.dropped_by_fault, 0u);
  EXPECT_GT(a.sender.duplicated, 0u);
  EXPECT_GT(a.sender.delayed, 0u);
  EXPECT_NE(mixed_fault_run(8).order, a.order);
}

// Pins the decision function: a seed recorded from a failing run must replay the same faults in
// later builds. Seed 1, 50 % loss, the first 16 MADs from HCA 0 port 1 to HCA 1 port 1 (the
// expected list was also computed by an independent model of splitmix64).
TEST(LoopbackFaults, ARecordedSeedReplaysTheSameLosses) {
  Harness h;
  h.fabric.set_fault(FaultRule{.loss_pct = 50});
  send_tagged(h.client(), 0, to_lid(17), 0, 16);
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{0, 1, 3, 6, 8, 9, 11, 12, 13}));
}

TEST(LoopbackFaults, AttributeRulesTouchOnlyTheirAttribute) {
  Harness h;
  h.fabric.set_fault(FaultRule{.attr_id = kAttrReq, .loss_pct = 100});
  send_one(h.client(), 0, make_mad(to_lid(17), 1, kAttrReq));
  send_one(h.client(), 0, make_mad(to_lid(17), 2, kAttrRep));
  EXPECT_EQ(tags(drain(h.server(), 0)), std::vector<std::uint32_t>{2});
}

TEST(LoopbackFaults, TheMostSpecificRuleWins) {
  Harness h;
  h.fabric.set_fault(FaultRule{.loss_pct = 100});                              // everything
  h.fabric.set_fault(FaultRule{.from = kClient1, .loss_pct = 0});             // but client port 2
  h.fabric.set_fault(FaultRule{.to = kServer0, .attr_id = kAttrRep});          // and REPs to port 1
  h.fabric.set_fault(FaultRule{.from = kClient1, .to = kServer0, .dup_pct = 100});
  send_one(h.client(), 0, make_mad(to_lid(17), 1, kAttrReq));  // any rule: lost
  send_one(h.client(), 0, make_mad(to_lid(17), 2, kAttrRep));  // attribute rule beats from/to
  send_one(h.client(), 1, make_mad(to_lid(18), 3, kAttrReq));  // from rule
  send_one(h.client(), 1, make_mad(to_lid(17), 4, kAttrReq));  // from+to rule: duplicated
  send_one(h.client(), 1, make_mad(to_lid(17), 5, kAttrRep));  // attribute rule beats from+to
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{2, 4, 4, 5}));
  EXPECT_EQ(tags(drain(h.server(), 1)), std::vector<std::uint32_t>{3});
}

TEST(LoopbackFaults, SettingTheSameKeyReplacesAndClearingRemovesAll) {
  Harness h;
  h.fabric.set_fault(FaultRule{.to = kServer0, .loss_pct = 100});
  h.fabric.set_fault(FaultRule{.to = kServer0, .loss_pct = 0});
  send_one(h.client(), 0, make_mad(to_lid(17), 1));
  EXPECT_EQ(drain(h.server(), 0).size(), 1u);
  h.fabric.set_fault(FaultRule{.to = kServer0, .loss_pct = 100});
  send_one(h.client(), 0, make_mad(to_lid(17), 2));
  EXPECT_TRUE(drain(h.server(), 0).empty());
  h.fabric.clear_faults();
  send_one(h.client(), 0, make_mad(to_lid(17), 3));
  EXPECT_EQ(tags(drain(h.server(), 0)), std::vector<std::uint32_t>{3});
}

TEST(LoopbackFaults, RuleErrorsChangeNothing) {
  Harness h;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(h.fabric.set_fault(FaultRule{.loss_pct = 100.5}), std::invalid_argument);
  EXPECT_THROW(h.fabric.set_fault(FaultRule{.dup_pct = -1}), std::invalid_argument);
  EXPECT_THROW(h.fabric.set_fault(FaultRule{.reorder_pct = nan}), std::invalid_argument);
  EXPECT_THROW(h.fabric.set_fault(FaultRule{.reorder_pct = 1, .reorder_window_ns = 0}),
               std::invalid_argument);
  EXPECT_THROW(h.fabric.set_fault(FaultRule{.from = PortRef{.hca = 2, .port = 0}, .loss_pct = 100}),
               std::out_of_range);
  EXPECT_THROW(h.fabric.set_fault(FaultRule{.to = PortRef{.hca = 0, .port = 2}, .loss_pct = 100}),
               std::out_of_range);
  for (std::uint16_t attr = 0; attr < 64; ++attr) {
    h.fabric.set_fault(FaultRule{.attr_id = static_cast<std::uint16_t>(0x100 + attr)});
  }
  EXPECT_THROW(h.fabric.set_fault(FaultRule{.loss_pct = 100}), std::length_error);
  EXPECT_NO_THROW(h.fabric.set_fault(FaultRule{.attr_id = 0x100, .loss_pct = 100}));  // replaces
  send_one(h.client(), 0, make_mad(to_lid(17), 1));
  send_one(h.client(), 0, make_mad(to_lid(17), 2, 0x100));
  EXPECT_EQ(tags(drain(h.server(), 0)), std::vector<std::uint32_t>{1});
}

}  // namespace
}  // namespace fastcm::loopback::test
