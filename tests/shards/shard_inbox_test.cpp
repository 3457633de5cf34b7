// Single-thread behaviour of the shard inbox: FIFO, bursts, full, wrap-around, and the eventfd
// wake-up protocol (checked with a zero-timeout poll, never a sleep).
#include "shards/shard_inbox.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "tests/shards/eventfd_probe.h"

namespace fastcm::shards {
namespace {

void* item(std::uintptr_t v) { return reinterpret_cast<void*>(v); }

using test::readable;

TEST(ShardInbox, RejectsCapacityOutOfRange) {
  EXPECT_THROW(ShardInbox(0, 0), std::invalid_argument);
  EXPECT_THROW(ShardInbox(ShardInbox::kMaxCapacity + 1, 0), std::invalid_argument);
}

TEST(ShardInbox, SingleItemsComeOutInOrder) {
  ShardInbox inbox(8, 0);
  EXPECT_EQ(inbox.capacity(), 8u);
  for (std::uintptr_t v = 1; v <= 5; ++v) ASSERT_TRUE(inbox.enqueue(item(v)));
  std::array<void*, 16> out{};
  ASSERT_EQ(inbox.dequeue_burst(out), 5u);
  for (std::uintptr_t v = 1; v <= 5; ++v) EXPECT_EQ(out[v - 1], item(v));
  EXPECT_EQ(inbox.dequeue_burst(out), 0u);
}

TEST(ShardInbox, HoldsExactlyCapacityAndRefusesMoreWithoutBlocking) {
  // 5 is not a power of two: the inbox still takes exactly 5.
  ShardInbox inbox(5, 0);
  const std::array<void*, 7> in{item(1), item(2), item(3), item(4), item(5), item(6), item(7)};
  EXPECT_EQ(inbox.enqueue_burst(in), 5u);  // the prefix that fits; 6 and 7 stay the caller's
  EXPECT_FALSE(inbox.enqueue(item(8)));
  EXPECT_EQ(inbox.enqueue_burst(in), 0u);
  std::array<void*, 2> out{};
  ASSERT_EQ(inbox.dequeue_burst(out), 2u);  // a burst no larger than the span
  EXPECT_EQ(out[0], item(1));
  EXPECT_EQ(out[1], item(2));
  EXPECT_EQ(inbox.enqueue_burst({in.data() + 5, 2}), 2u);  // room for two again
  std::array<void*, 8> rest{};
  ASSERT_EQ(inbox.dequeue_burst(rest), 5u);
  const std::array<void*, 5> expected{item(3), item(4), item(5), item(6), item(7)};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(rest[i], expected[i]);
}

TEST(ShardInbox, WrapsAroundManyTimesInOrder) {
  ShardInbox inbox(7, 0);
  std::uintptr_t next_in = 1;
  std::uintptr_t next_out = 1;
  std::array<void*, 5> in{};
  std::array<void*, 3> out{};
  // Bursts of 5 in, 3 out (then drain) walk the ring indexes far past its size.
  for (int round = 0; round < 1000; ++round) {
    for (auto& p : in) p = item(next_in++);
    const std::size_t took = inbox.enqueue_burst(in);
    next_in -= in.size() - took;  // the refused tail is offered again next round
    std::size_t got = 0;
    while ((got = inbox.dequeue_burst(out)) != 0) {
      for (std::size_t i = 0; i < got; ++i) ASSERT_EQ(out[i], item(next_out++));
      if (round % 2 == 0) break;  // leave some behind on even rounds
    }
  }
  while (const std::size_t got = inbox.dequeue_burst(out)) {
    for (std::size_t i = 0; i < got; ++i) ASSERT_EQ(out[i], item(next_out++));
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_GT(next_in, 1000u);
}

TEST(ShardInbox, UnarmedConsumerIsNotSignalled) {
  ShardInbox inbox(8, 0);
  ASSERT_TRUE(inbox.enqueue(item(1)));
  const std::array<void*, 3> burst{item(2), item(3), item(4)};
  ASSERT_EQ(inbox.enqueue_burst(burst), 3u);
  EXPECT_FALSE(readable(inbox.event_fd()));
}

TEST(ShardInbox, ArmedConsumerIsSignalledOnceByTheFirstEnqueue) {
  ShardInbox inbox(8, 0);
  std::array<void*, 4> spare{};
  ASSERT_EQ(inbox.arm(spare), 0u);
  EXPECT_FALSE(readable(inbox.event_fd()));  // nothing arrived yet
  ASSERT_TRUE(inbox.enqueue(item(1)));
  EXPECT_TRUE(readable(inbox.event_fd()));
  ASSERT_TRUE(inbox.enqueue(item(2)));  // already signalled: no second write
  eventfd_t writes = 0;
  ASSERT_EQ(eventfd_read(inbox.event_fd(), &writes), 0);
  EXPECT_EQ(writes, 1u);
  inbox.disarm();
  std::array<void*, 4> out{};
  EXPECT_EQ(inbox.dequeue_burst(out), 2u);
  ASSERT_EQ(inbox.arm(spare), 0u);
  EXPECT_FALSE(readable(inbox.event_fd()));
  inbox.disarm();
  ASSERT_TRUE(inbox.enqueue(item(3)));  // disarmed: no signal
  EXPECT_FALSE(readable(inbox.event_fd()));
}

TEST(ShardInbox, ArmHandsOutQueuedItemsInsteadOfArming) {
  ShardInbox inbox(8, 0);
  std::array<void*, 4> spare{};
  ASSERT_TRUE(inbox.enqueue(item(1)));
  ASSERT_EQ(inbox.arm(spare), 1u);  // the re-check hands the queued item out
  EXPECT_EQ(spare[0], item(1));
  ASSERT_TRUE(inbox.enqueue(item(2)));  // the failed arm left the consumer unarmed
  EXPECT_FALSE(readable(inbox.event_fd()));
}

TEST(ShardInbox, ArmClearsAWakeUpLeftFromBefore) {
  ShardInbox inbox(8, 0);
  std::array<void*, 4> spare{};
  ASSERT_EQ(inbox.arm(spare), 0u);
  ASSERT_TRUE(inbox.enqueue(item(1)));  // signals; the consumer then never reads the eventfd
  ASSERT_TRUE(readable(inbox.event_fd()));
  inbox.disarm();
  std::array<void*, 4> out{};
  ASSERT_EQ(inbox.dequeue_burst(out), 1u);
  ASSERT_EQ(inbox.arm(spare), 0u);  // empty again: armed, and the stale wake-up is gone
  EXPECT_FALSE(readable(inbox.event_fd()));
  ASSERT_TRUE(inbox.enqueue(item(2)));
  EXPECT_TRUE(readable(inbox.event_fd()));
}

TEST(ShardInbox, WaitBurstReturnsQueuedItemsWithoutSleeping) {
  ShardInbox inbox(8, 0);
  ASSERT_TRUE(inbox.enqueue(item(9)));
  std::array<void*, 4> out{};
  // timeout_ms -1 would hang the test if wait_burst slept with an item queued.
  ASSERT_EQ(inbox.wait_burst(out, 0, -1), 1u);
  EXPECT_EQ(out[0], item(9));
}

TEST(ShardInbox, WaitBurstTimesOutEmptyAndLeavesTheConsumerUnarmed) {
  ShardInbox inbox(8, 0);
  std::array<void*, 4> out{};
  EXPECT_EQ(inbox.wait_burst(out, 3, 0), 0u);
  ASSERT_TRUE(inbox.enqueue(item(1)));
  EXPECT_FALSE(readable(inbox.event_fd()));
}

}  // namespace
}  // namespace fastcm::shards
