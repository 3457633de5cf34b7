// QueueWakeups (shards/queue_wakeups.h): a burst's events wait unsignalled until its flush, which
// wakes each queue once; a burst reaching more queues than it tracks wakes the extra ones at once.
#include "shards/queue_wakeups.h"

#include <gtest/gtest.h>

#include <array>
#include <deque>

#include "tests/shards/eventfd_probe.h"

namespace fastcm::shards {
namespace {

using test::readable;
using test::writes_waiting;

QueuedEvent event_of(std::uint32_t n) {
  QueuedEvent q;
  q.event.type = EventType::rtu_received;
  q.event.id = Id::make(n, 1);
  q.slot = n;
  return q;
}

TEST(QueueWakeups, ABurstsEventsWakeTheirQueuesOnceAtTheFlush) {
  MpscEventQueue a(16);
  MpscEventQueue b(16);
  QueueWakeups wakeups;
  for (std::uint32_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(wakeups.push(a, event_of(i), nullptr));
    ASSERT_TRUE(wakeups.push(b, event_of(i), nullptr));
  }
  EXPECT_EQ(a.size(), 5U);
  EXPECT_FALSE(readable(a.event_fd()));  // in the queue, not yet signalled
  EXPECT_FALSE(readable(b.event_fd()));
  wakeups.flush();
  EXPECT_EQ(writes_waiting(a.event_fd()), 1U);
  EXPECT_EQ(writes_waiting(b.event_fd()), 1U);
  wakeups.flush();  // nothing pushed since: no second write
  EXPECT_EQ(writes_waiting(a.event_fd()), 1U);
}

TEST(QueueWakeups, QueuesBeyondThoseItTracksAreWokenAtOnce) {
  std::deque<MpscEventQueue> queues;
  for (std::size_t i = 0; i <= QueueWakeups::kMaxPending; ++i) queues.emplace_back(4);
  QueueWakeups wakeups;
  for (auto& q : queues) ASSERT_TRUE(wakeups.push(q, event_of(1), nullptr));
  for (std::size_t i = 0; i < QueueWakeups::kMaxPending; ++i) EXPECT_FALSE(readable(queues[i].event_fd())) << i;
  EXPECT_TRUE(readable(queues.back().event_fd()));  // no room to defer it
  wakeups.flush();
  for (auto& q : queues) EXPECT_EQ(writes_waiting(q.event_fd()), 1U);
}

TEST(QueueWakeups, AFullQueueRefusesAsAPushDoes) {
  MpscEventQueue queue(1);
  QueueWakeups wakeups;
  ASSERT_TRUE(wakeups.push(queue, event_of(1), nullptr));
  EXPECT_FALSE(wakeups.push(queue, event_of(2), nullptr));
  wakeups.flush();
  std::array<QueuedEvent, 2> out{};
  ASSERT_EQ(queue.pop(out), 1U);
  EXPECT_EQ(out[0].event.id, event_of(1).event.id);
  EXPECT_EQ(out[0].slot, 1U);
  EXPECT_FALSE(readable(queue.event_fd()));
}

}  // namespace
}  // namespace fastcm::shards
