// SpareEndpoints against its contract (shards/spare_endpoints.h): top_up fills to the target and
// refills only below the low mark, a spent budget leaves it short, every Id made is taken exactly
// once with its slot, and takers on several threads while the shard refills each get what the
// shard set up for their Id, slot included (under ThreadSanitizer this checks the cell's
// release/acquire publication).
#include "shards/spare_endpoints.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace fastcm::shards {
namespace {

constexpr std::uint32_t kTarget = SpareEndpoints::kTarget;
constexpr std::uint32_t kLow = SpareEndpoints::kLow;

// Makes Ids 1, 2, 3... (as comm IDs, generation 1), each at slot 7 times its comm ID, until
// `budget` of them are made.
struct Maker {
  std::uint32_t budget = UINT32_MAX;
  std::uint32_t made = 0;
  Status operator()(SpareEndpoints::Spare& spare) noexcept {
    if (made == budget) return Status::no_resources;
    ++made;
    spare = {.id = Id::make(made, 1), .slot = made * 7};
    return Status::ok;
  }
};

std::vector<Id> take_all(SpareEndpoints& spares) {
  std::vector<Id> taken;
  while (const std::optional<SpareEndpoints::Spare> spare = spares.take()) taken.push_back(spare->id);
  return taken;
}

TEST(SpareEndpoints, TopUpFillsToTheTargetAndRefillsOnlyBelowTheLowMark) {
  SpareEndpoints spares;
  Maker make;
  EXPECT_EQ(spares.top_up(make), kTarget);
  EXPECT_EQ(spares.count(), kTarget);

  for (std::uint32_t i = 0; i < kTarget - kLow; ++i) ASSERT_TRUE(spares.take());
  EXPECT_EQ(spares.count(), kLow);
  EXPECT_EQ(spares.top_up(make), 0u) << "at the low mark: no refill yet";

  ASSERT_TRUE(spares.take());
  EXPECT_EQ(spares.top_up(make), kTarget - kLow + 1) << "below it: back to the target";
  EXPECT_EQ(spares.count(), kTarget);
  EXPECT_EQ(make.made, kTarget + kTarget - kLow + 1);
}

TEST(SpareEndpoints, EveryIdMadeIsTakenOnceThenNone) {
  SpareEndpoints spares;
  Maker make;
  EXPECT_FALSE(spares.take()) << "nothing made yet";
  std::set<Id> taken;
  // Rounds of refill and partial takes, so cells are refilled where others were emptied.
  for (int round = 0; round < 10; ++round) {
    spares.top_up(make);
    for (std::uint32_t i = 0; i < kTarget / 3 + 7; ++i) {
      const std::optional<SpareEndpoints::Spare> spare = spares.take();
      ASSERT_TRUE(spare);
      EXPECT_TRUE(taken.insert(spare->id).second) << "taken twice: " << spare->id.comm_id();
      EXPECT_EQ(spare->slot, spare->id.comm_id() * 7) << "another spare's slot";
    }
  }
  for (const Id id : take_all(spares)) EXPECT_TRUE(taken.insert(id).second) << "taken twice: " << id.comm_id();
  EXPECT_EQ(taken.size(), make.made);
  EXPECT_EQ(spares.count(), 0u);
  EXPECT_FALSE(spares.take());
}

TEST(SpareEndpoints, ASpentBudgetLeavesItShortAndItsSparesStillServe) {
  SpareEndpoints spares;
  Maker make{.budget = 10};
  EXPECT_EQ(spares.top_up(make), 10u);
  EXPECT_EQ(spares.count(), 10u);
  EXPECT_EQ(spares.top_up(make), 0u) << "the budget is spent";
  EXPECT_EQ(take_all(spares).size(), 10u);

  make.budget = 10 + kTarget + 5;  // endpoints given back: room for a full set again
  EXPECT_EQ(spares.top_up(make), kTarget);
}

// Three takers while the shard's thread keeps refilling: each Id reaches exactly one taker, and
// the taker sees what the shard wrote for it before publishing it (a plain array: without the
// cell's release/acquire pair ThreadSanitizer reports the read as a race).
TEST(SpareEndpoints, TakersOnOtherThreadsGetEachIdOnceWithWhatTheShardSetUp) {
  constexpr std::uint32_t kIds = 30'000;
  SpareEndpoints spares;
  std::vector<std::uint32_t> setup(kIds + 1, 0);  // by comm ID, written by the shard's thread only
  std::atomic<bool> shard_done{false};

  std::thread shard([&] {
    std::uint32_t made = 0;
    const auto make = [&](SpareEndpoints::Spare& spare) noexcept {
      if (made == kIds) return Status::no_resources;
      ++made;
      setup[made] = made * 3 + 1;
      spare = {.id = Id::make(made, 1), .slot = made * 5};
      return Status::ok;
    };
    while (made < kIds) {
      spares.top_up(make);
      std::this_thread::yield();
    }
    shard_done.store(true, std::memory_order_release);
  });

  constexpr std::size_t kTakers = 3;
  std::vector<std::vector<Id>> taken(kTakers);
  std::vector<std::uint32_t> wrong_setup(kTakers, 0);
  std::vector<std::thread> takers;
  for (std::size_t t = 0; t < kTakers; ++t) {
    takers.emplace_back([&, t] {
      for (;;) {
        const bool done = shard_done.load(std::memory_order_acquire);
        const std::optional<SpareEndpoints::Spare> spare = spares.take();
        if (!spare) {
          if (done) return;  // the shard made its last before `done`, and none is left
          std::this_thread::yield();
          continue;
        }
        const std::uint32_t comm_id = spare->id.comm_id();
        if (setup[comm_id] != comm_id * 3 + 1 || spare->slot != comm_id * 5) ++wrong_setup[t];
        taken[t].push_back(spare->id);
      }
    });
  }
  shard.join();
  for (std::thread& t : takers) t.join();

  std::vector<Id> all;
  for (std::size_t t = 0; t < kTakers; ++t) {
    EXPECT_EQ(wrong_setup[t], 0u) << "taker " << t;
    all.insert(all.end(), taken[t].begin(), taken[t].end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an Id reached two takers";
  EXPECT_EQ(all.size(), kIds) << "every Id made was taken";
  EXPECT_EQ(spares.count(), 0u);
}

}  // namespace
}  // namespace fastcm::shards
