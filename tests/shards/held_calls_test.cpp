// HeldCalls against its contract (shards/held_calls.h): a thread holds items only inside its open
// batch of the engine named, releases them at the outermost close, or when the batch is full, or
// when asked to (before any other item it queues), and each inbox gets its items in the order held.
#include "shards/held_calls.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <thread>
#include <vector>

#include "shards/shard_inbox.h"

namespace fastcm::shards {
namespace {

void* item(std::uintptr_t v) { return reinterpret_cast<void*>(v); }

// Everything queued in `inbox`, in queue order.
std::vector<std::uintptr_t> drain(ShardInbox& inbox) {
  std::array<void*, 256> out;
  std::vector<std::uintptr_t> got;
  while (const std::size_t n = inbox.dequeue_burst(out)) {
    for (std::size_t i = 0; i < n; ++i) got.push_back(reinterpret_cast<std::uintptr_t>(out[i]));
  }
  return got;
}

// Any address names an engine; distinct values keep the two objects apart.
const int kEngine = 1;
const int kOtherEngine = 2;

TEST(HeldCalls, HoldsOnlyInsideTheOpenBatchOfItsOwnEngine) {
  ShardInbox inbox(16, 0);
  EXPECT_FALSE(HeldCalls::hold(&kEngine, inbox, item(1))) << "no batch open";
  ASSERT_TRUE(HeldCalls::open(&kEngine));
  EXPECT_FALSE(HeldCalls::open(&kOtherEngine)) << "one engine's batch at a time";
  EXPECT_FALSE(HeldCalls::hold(&kOtherEngine, inbox, item(2)));
  HeldCalls::close(&kOtherEngine);  // closes nothing: its open did nothing
  EXPECT_TRUE(HeldCalls::hold(&kEngine, inbox, item(3)));
  EXPECT_TRUE(drain(inbox).empty()) << "held, not queued";
  HeldCalls::close(&kEngine);
  EXPECT_EQ(drain(inbox), (std::vector<std::uintptr_t>{3}));
  EXPECT_FALSE(HeldCalls::hold(&kEngine, inbox, item(4))) << "closed";
}

TEST(HeldCalls, TheOutermostCloseReleasesEachInboxsItemsInTheOrderHeld) {
  ShardInbox first(16, 0);
  ShardInbox second(16, 1);
  ASSERT_TRUE(HeldCalls::open(&kEngine));
  ASSERT_TRUE(HeldCalls::open(&kEngine));
  for (std::uintptr_t v = 1; v <= 6; ++v) ASSERT_TRUE(HeldCalls::hold(&kEngine, v % 2 == 0 ? second : first, item(v)));
  HeldCalls::close(&kEngine);
  EXPECT_TRUE(drain(first).empty()) << "an inner close releases nothing";
  EXPECT_TRUE(drain(second).empty());
  HeldCalls::close(&kEngine);
  EXPECT_EQ(drain(first), (std::vector<std::uintptr_t>{1, 3, 5}));
  EXPECT_EQ(drain(second), (std::vector<std::uintptr_t>{2, 4, 6}));
}

TEST(HeldCalls, AFullBatchReleasesWhatItHoldsBeforeHoldingMore) {
  ShardInbox inbox(256, 0);
  ASSERT_TRUE(HeldCalls::open(&kEngine));
  for (std::uintptr_t v = 1; v <= HeldCalls::kCapacity; ++v) ASSERT_TRUE(HeldCalls::hold(&kEngine, inbox, item(v)));
  EXPECT_TRUE(drain(inbox).empty());
  ASSERT_TRUE(HeldCalls::hold(&kEngine, inbox, item(HeldCalls::kCapacity + 1)));
  std::vector<std::uintptr_t> expected;
  for (std::uintptr_t v = 1; v <= HeldCalls::kCapacity; ++v) expected.push_back(v);
  EXPECT_EQ(drain(inbox), expected);
  HeldCalls::close(&kEngine);
  EXPECT_EQ(drain(inbox), (std::vector<std::uintptr_t>{HeldCalls::kCapacity + 1}));
}

TEST(HeldCalls, AReleaseQueuesWhatIsHeldAheadOfWhatTheThreadQueuesNext) {
  ShardInbox inbox(16, 0);
  ASSERT_TRUE(HeldCalls::open(&kEngine));
  ASSERT_TRUE(HeldCalls::hold(&kEngine, inbox, item(1)));
  HeldCalls::release();  // what Shard::post_control does before a destroy, say
  void* const later = item(2);
  inbox.enqueue_all({&later, 1});
  ASSERT_TRUE(HeldCalls::hold(&kEngine, inbox, item(3)));
  HeldCalls::close(&kEngine);
  EXPECT_EQ(drain(inbox), (std::vector<std::uintptr_t>{1, 2, 3}));
}

TEST(HeldCalls, AThreadHoldsOnlyItsOwnItems) {
  ShardInbox inbox(16, 0);
  ASSERT_TRUE(HeldCalls::open(&kEngine));
  ASSERT_TRUE(HeldCalls::hold(&kEngine, inbox, item(1)));
  bool held_elsewhere = true;
  std::thread other([&] {
    held_elsewhere = HeldCalls::hold(&kEngine, inbox, item(2));
    HeldCalls::release();  // releases nothing of this thread's batch
  });
  other.join();
  EXPECT_FALSE(held_elsewhere) << "the batch is this thread's";
  EXPECT_TRUE(drain(inbox).empty());
  HeldCalls::close(&kEngine);
  EXPECT_EQ(drain(inbox), (std::vector<std::uintptr_t>{1}));
}

}  // namespace
}  // namespace fastcm::shards
