// EventBursts (shards/event_bursts.h): a burst's events wait, held, until its flush queues them
// and wakes each queue once; a burst takes no more than the room it found; events another producer
// left no room for by the flush go to the refusal handler with their reference and port.
#include "shards/event_bursts.h"

#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <vector>

#include "tests/shards/eventfd_probe.h"

namespace fastcm::shards {
namespace {

using test::readable;
using test::writes_waiting;
using Hold = MpscEventQueue::MadHold;

QueuedEvent event_of(std::uint32_t n) {
  QueuedEvent q;
  q.event.type = EventType::rtu_received;
  q.event.id = Id::make(n, 1);
  q.slot = n;
  return q;
}

struct Refusal {
  engine::MadBuf* mad;
  std::uint16_t port;
};

void record(void* refusals, engine::MadBuf* mad, std::uint16_t port) noexcept {
  static_cast<std::vector<Refusal>*>(refusals)->push_back(Refusal{mad, port});
}

// The slots of the events `queue` holds, oldest first.
std::vector<std::uint32_t> drain(MpscEventQueue& queue) {
  std::array<QueuedEvent, 64> out{};
  std::vector<std::uint32_t> slots;
  while (const std::size_t n = queue.pop(out)) {
    for (std::size_t i = 0; i < n; ++i) slots.push_back(out[i].slot);
  }
  return slots;
}

TEST(EventBursts, ABurstsEventsWaitForTheFlushWhichWakesEachQueueOnce) {
  MpscEventQueue a(16);
  MpscEventQueue b(16);
  std::vector<Refusal> refused;
  EventBursts bursts(&record, &refused);
  for (std::uint32_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(bursts.push(a, event_of(i), nullptr, Hold::share, 0));
    ASSERT_TRUE(bursts.push(b, event_of(10 + i), nullptr, Hold::share, 0));
  }
  EXPECT_EQ(a.size(), 0U) << "held until the flush";
  EXPECT_FALSE(readable(a.event_fd()));
  bursts.flush();
  EXPECT_EQ(writes_waiting(a.event_fd()), 1U);
  EXPECT_EQ(writes_waiting(b.event_fd()), 1U);
  bursts.flush();  // nothing pushed since: no second write
  EXPECT_EQ(writes_waiting(a.event_fd()), 1U);
  EXPECT_EQ(drain(a), (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(drain(b), (std::vector<std::uint32_t>{10, 11, 12, 13, 14}));
  EXPECT_TRUE(refused.empty());
}

TEST(EventBursts, QueuesBeyondThoseItHoldsForArePushedAndWokenAtOnce) {
  std::deque<MpscEventQueue> queues;
  for (std::size_t i = 0; i <= EventBursts::kMaxQueues; ++i) queues.emplace_back(4);
  std::vector<Refusal> refused;
  EventBursts bursts(&record, &refused);
  for (auto& q : queues) ASSERT_TRUE(bursts.push(q, event_of(1), nullptr, Hold::share, 0));
  for (std::size_t i = 0; i < EventBursts::kMaxQueues; ++i) EXPECT_EQ(queues[i].size(), 0U) << i;
  EXPECT_EQ(queues.back().size(), 1U);
  EXPECT_TRUE(readable(queues.back().event_fd()));
  bursts.flush();
  for (auto& q : queues) EXPECT_EQ(writes_waiting(q.event_fd()), 1U);
}

TEST(EventBursts, ABurstTakesNoMoreThanTheRoomItFound) {
  MpscEventQueue queue(2);
  std::vector<Refusal> refused;
  EventBursts bursts(&record, &refused);
  EXPECT_FALSE(bursts.full(queue));
  ASSERT_TRUE(bursts.push(queue, event_of(1), nullptr, Hold::share, 0));
  ASSERT_TRUE(bursts.push(queue, event_of(2), nullptr, Hold::share, 0));
  EXPECT_TRUE(bursts.full(queue)) << "counting the held events";
  engine::MadBuf mad;
  mad.refs.store(1);
  EXPECT_FALSE(bursts.push(queue, event_of(3), &mad, Hold::share, 0));
  EXPECT_EQ(mad.refs.load(), 1U) << "a refused push takes no reference";
  bursts.flush();
  EXPECT_EQ(drain(queue), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_TRUE(refused.empty());
}

TEST(EventBursts, EventsAnotherProducerLeftNoRoomForGoToTheRefusalHandler) {
  MpscEventQueue queue(3);
  std::vector<Refusal> refused;
  EventBursts bursts(&record, &refused);
  std::array<engine::MadBuf, 2> mads;
  for (auto& m : mads) m.refs.store(1);
  ASSERT_TRUE(bursts.push(queue, event_of(1), &mads[0], Hold::share, 4));
  ASSERT_TRUE(bursts.push(queue, event_of(2), &mads[1], Hold::hand_over, 7));
  EXPECT_EQ(mads[0].refs.load(), 2U) << "a shared hold takes its reference when held";
  EXPECT_EQ(mads[1].refs.load(), 1U) << "a handed-over one is the caller's";
  ASSERT_TRUE(queue.push(event_of(100), nullptr));  // another shard, meanwhile
  ASSERT_TRUE(queue.push(event_of(101), nullptr));
  bursts.flush();
  EXPECT_EQ(drain(queue), (std::vector<std::uint32_t>{100, 101, 1}));
  ASSERT_EQ(refused.size(), 1U);
  EXPECT_EQ(refused[0].mad, &mads[1]);
  EXPECT_EQ(refused[0].port, 7U);
}

TEST(EventBursts, AQueuesEventsBeyondOneBurstGoOutUnsignalledUntilTheFlush) {
  MpscEventQueue queue(64);
  std::vector<Refusal> refused;
  EventBursts bursts(&record, &refused);
  for (std::uint32_t i = 0; i <= EventBursts::kPerQueue; ++i) {
    ASSERT_TRUE(bursts.push(queue, event_of(i), nullptr, Hold::share, 0));
  }
  EXPECT_EQ(queue.size(), EventBursts::kPerQueue);
  EXPECT_FALSE(readable(queue.event_fd()));
  bursts.flush();
  EXPECT_EQ(writes_waiting(queue.event_fd()), 1U);
  EXPECT_EQ(queue.size(), EventBursts::kPerQueue + 1);
}

}  // namespace
}  // namespace fastcm::shards
