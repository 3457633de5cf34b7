// RecentSlots against its contract (shards/recent_slots.h): a thread recalls the slot it
// remembered for an Id of one engine, and nothing for another engine's Id, for an Id a later entry
// overwrote, or for what another thread remembered.
#include "shards/recent_slots.h"

#include <gtest/gtest.h>

#include <optional>
#include <thread>

namespace fastcm::shards {
namespace {

TEST(RecentSlots, RecallsTheSlotRememberedForAnIdOfOneEngineOnly) {
  const std::uint32_t engine = RecentSlots::new_engine_serial();
  const std::uint32_t other = RecentSlots::new_engine_serial();
  ASSERT_NE(engine, 0u);
  ASSERT_NE(engine, other);
  const Id id = Id::make(0x1234'5601, 3);
  EXPECT_EQ(RecentSlots::recall(engine, id), std::nullopt) << "nothing remembered yet";
  RecentSlots::remember(engine, id, 77);
  EXPECT_EQ(RecentSlots::recall(engine, id), 77u);
  EXPECT_EQ(RecentSlots::recall(other, id), std::nullopt) << "the same Id in another engine";
  EXPECT_EQ(RecentSlots::recall(engine, Id::make(0x1234'5601, 4)), std::nullopt) << "another generation";
}

TEST(RecentSlots, ALaterIdAtTheSameIndexReplacesTheEarlierOne) {
  const std::uint32_t engine = RecentSlots::new_engine_serial();
  const Id first = Id::make(0x40, 1);
  const Id colliding = Id::make(0x40 + RecentSlots::kEntries, 1);
  const Id elsewhere = Id::make(0x41, 1);
  RecentSlots::remember(engine, first, 1);
  RecentSlots::remember(engine, elsewhere, 2);
  RecentSlots::remember(engine, colliding, 3);
  EXPECT_EQ(RecentSlots::recall(engine, first), std::nullopt);
  EXPECT_EQ(RecentSlots::recall(engine, colliding), 3u);
  EXPECT_EQ(RecentSlots::recall(engine, elsewhere), 2u);
}

TEST(RecentSlots, AThreadRecallsOnlyWhatItRemembered) {
  const std::uint32_t engine = RecentSlots::new_engine_serial();
  const Id id = Id::make(0x99, 1);
  RecentSlots::remember(engine, id, 5);
  std::optional<std::uint32_t> seen_elsewhere = 0;
  std::thread([&] { seen_elsewhere = RecentSlots::recall(engine, id); }).join();
  EXPECT_EQ(seen_elsewhere, std::nullopt);
  EXPECT_EQ(RecentSlots::recall(engine, id), 5u);
}

}  // namespace
}  // namespace fastcm::shards
