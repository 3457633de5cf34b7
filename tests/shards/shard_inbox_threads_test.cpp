// Many producers, one consumer that sleeps on the inbox's eventfd when idle: every item arrives
// exactly once, each producer's items in order, and the items' contents written before the
// enqueue are seen by the consumer (ThreadSanitizer checks that hand-off).
#include "shards/shard_inbox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <thread>
#include <vector>

namespace fastcm::shards {
namespace {

struct Record {
  std::uint32_t producer = 0;
  std::uint32_t seq = 0;
  std::uint64_t check = 0;  // derived from the two above, written by the producer
};

std::uint64_t check_of(std::uint32_t producer, std::uint32_t seq) {
  return (std::uint64_t{producer} << 32 | seq) * 0x9E3779B97F4A7C15ULL;
}

TEST(ShardInboxThreads, FourProducersOneSleepingConsumerEveryItemOnceInOrder) {
  constexpr std::uint32_t kProducers = 4;
  constexpr std::uint32_t kItems = 50'000;
  constexpr int kGuardMs = 20'000;  // a lost wake-up fails the test instead of hanging it
  ShardInbox inbox(64, 0);  // small, so producers also meet a full inbox
  std::vector<std::vector<Record>> records(kProducers, std::vector<Record>(kItems));
  std::array<std::uint64_t, kProducers> refused{};

  std::vector<std::thread> producers;
  for (std::uint32_t p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      std::array<void*, 8> burst{};
      std::uint32_t seq = 0;
      while (seq < kItems) {
        // Burst sizes 1..8, varying per producer and round.
        const std::uint32_t want = std::min<std::uint32_t>(1 + (seq + p) % 8, kItems - seq);
        for (std::uint32_t i = 0; i < want; ++i) {
          Record& r = records[p][seq + i];
          r = Record{p, seq + i, check_of(p, seq + i)};
          burst[i] = &r;
        }
        const std::size_t took = inbox.enqueue_burst({burst.data(), want});
        seq += static_cast<std::uint32_t>(took);
        if (took < want) {
          ++refused[p];
          std::this_thread::yield();  // this test's full-inbox policy: offer the rest again
        }
      }
    });
  }

  std::array<std::uint32_t, kProducers> next{};
  std::uint64_t received = 0;
  std::uint64_t timeouts = 0;
  std::array<void*, 32> out{};
  while (received < std::uint64_t{kProducers} * kItems && timeouts == 0) {
    const std::size_t got = inbox.wait_burst(out, 16, kGuardMs);
    if (got == 0) ++timeouts;
    for (std::size_t i = 0; i < got; ++i) {
      const auto* r = static_cast<const Record*>(out[i]);
      ASSERT_LT(r->producer, kProducers);
      ASSERT_EQ(r->seq, next[r->producer]) << "producer " << r->producer;
      ASSERT_EQ(r->check, check_of(r->producer, r->seq));
      ++next[r->producer];
      ++received;
    }
  }
  for (auto& t : producers) t.join();

  EXPECT_EQ(timeouts, 0u);
  EXPECT_EQ(received, std::uint64_t{kProducers} * kItems);
  for (std::uint32_t p = 0; p < kProducers; ++p) EXPECT_EQ(next[p], kItems);
  std::array<void*, 1> extra{};
  EXPECT_EQ(inbox.dequeue_burst(extra), 0u);  // nothing duplicated or left behind
}

// enqueue_all, which control items use, meets a full inbox and yields until the consumer, here
// another thread, makes room: every item arrives once, in order.
TEST(ShardInboxThreads, EnqueueAllWaitsForRoomAndKeepsTheOrder) {
  ShardInbox inbox(2, 0);
  std::array<void*, 64> items;
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = reinterpret_cast<void*>(i + 1);
  std::vector<void*> got;
  std::thread consumer([&] {
    std::array<void*, 4> out;
    while (got.size() < items.size()) {
      const std::size_t n = inbox.dequeue_burst(out);
      got.insert(got.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
    }
  });
  inbox.enqueue_all(items);
  consumer.join();
  EXPECT_EQ(got, std::vector<void*>(items.begin(), items.end()));
}

}  // namespace
}  // namespace fastcm::shards
