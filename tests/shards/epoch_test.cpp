// Epoch and DeferQueue: when a deferred function may run (quiescent points, offline readers), the
// queue bound, the destructor, and concurrent writers swapping a shared object under readers.
// Neither needs EAL: this executable never starts it.
#include "shards/epoch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace fastcm::shards {
namespace {

// A deferred function's record: how many times it ran and in which position.
struct Probe {
  int runs = 0;
  int position = -1;
  int* next_position = nullptr;
};

void run_probe(void* ctx) {
  auto* probe = static_cast<Probe*>(ctx);
  ++probe->runs;
  if (probe->next_position != nullptr) probe->position = (*probe->next_position)++;
}

TEST(Epoch, RejectsReaderCountOutOfRange) {
  EXPECT_THROW(Epoch(0), std::invalid_argument);
  EXPECT_THROW(Epoch(Epoch::kMaxReaders + 1), std::invalid_argument);
  const Epoch epoch(3);
  EXPECT_EQ(epoch.readers(), 3U);
}

TEST(DeferQueue, RejectsCapacityAndNameOutOfRange) {
  Epoch epoch(1);
  EXPECT_THROW(DeferQueue(epoch, 0, "dq_cap0"), std::invalid_argument);
  EXPECT_THROW(DeferQueue(epoch, DeferQueue::kMaxCapacity + 1, "dq_cap_big"),
               std::invalid_argument);
  EXPECT_THROW(DeferQueue(epoch, 4, ""), std::invalid_argument);
  EXPECT_THROW(DeferQueue(epoch, 4, std::string(DeferQueue::kMaxNameLength + 1, 'n')),
               std::invalid_argument);
  const DeferQueue longest(epoch, 4, std::string(DeferQueue::kMaxNameLength, 'n'));
  EXPECT_EQ(longest.capacity(), 4U);
  EXPECT_EQ(longest.pending(), 0U);
}

std::int64_t resident_bytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  long pages = 0;
  long resident = 0;
  const int fields = statm != nullptr ? std::fscanf(statm, "%ld %ld", &pages, &resident) : 0;
  if (statm != nullptr) std::fclose(statm);
  EXPECT_EQ(fields, 2);
  return std::int64_t{resident} * sysconf(_SC_PAGESIZE);
}

// A shard's destroy queue has room for twice its endpoint table: 2^21 entries for a million
// endpoints. Only the entries a queue has held may cost resident memory.
TEST(DeferQueue, ItsBoundCostsResidentMemoryOnlyForTheEntriesItHeld) {
  constexpr std::uint32_t kCapacity = std::uint32_t{1} << 22;  // 2^23 entries of 24 bytes reserved
  constexpr std::int64_t kTouched = std::int64_t{16} << 20;
  Epoch epoch(1);
  const std::int64_t before = resident_bytes();
  DeferQueue dq(epoch, kCapacity, "dq_large");
  std::vector<Probe> probes(4096);
  for (Probe& p : probes) ASSERT_TRUE(dq.defer(run_probe, &p));
  EXPECT_EQ(dq.reclaim(), probes.size());  // the reader is offline: all due
  EXPECT_LT(resident_bytes() - before, kTouched);
  for (const Probe& p : probes) EXPECT_EQ(p.runs, 1);
}

TEST(DeferQueue, WaitsForAnOnlineReaderUntilItIsQuiescent) {
  Epoch epoch(1);
  DeferQueue dq(epoch, 4, "dq_wait");
  epoch.online(0);
  Probe probe;
  ASSERT_TRUE(dq.defer(run_probe, &probe));
  EXPECT_EQ(dq.pending(), 1U);
  EXPECT_EQ(dq.reclaim(), 0U);
  EXPECT_EQ(probe.runs, 0);
  epoch.quiescent(0);
  EXPECT_EQ(dq.reclaim(), 1U);
  EXPECT_EQ(probe.runs, 1);
  EXPECT_EQ(dq.pending(), 0U);
  EXPECT_EQ(dq.reclaim(), 0U);  // once only
  EXPECT_EQ(probe.runs, 1);
  epoch.offline(0);
}

TEST(DeferQueue, QuiescentPointBeforeTheDeferralDoesNotCount) {
  Epoch epoch(1);
  DeferQueue dq(epoch, 4, "dq_before");
  epoch.online(0);
  epoch.quiescent(0);
  Probe probe;
  ASSERT_TRUE(dq.defer(run_probe, &probe));
  EXPECT_EQ(dq.reclaim(), 0U);
  EXPECT_EQ(probe.runs, 0);
  epoch.quiescent(0);
  EXPECT_EQ(dq.reclaim(), 1U);
  EXPECT_EQ(probe.runs, 1);
  epoch.offline(0);
}

TEST(DeferQueue, RunsWhenTheReaderGoesOffline) {
  Epoch epoch(1);
  DeferQueue dq(epoch, 4, "dq_offline");
  epoch.online(0);
  Probe probe;
  ASSERT_TRUE(dq.defer(run_probe, &probe));
  EXPECT_EQ(dq.reclaim(), 0U);
  epoch.offline(0);
  EXPECT_EQ(dq.reclaim(), 1U);
  EXPECT_EQ(probe.runs, 1);
}

TEST(DeferQueue, OfflineReadersAndReadersOnlineOnlyLaterDoNotDelay) {
  Epoch epoch(2);
  DeferQueue dq(epoch, 4, "dq_idle");
  Probe idle;
  ASSERT_TRUE(dq.defer(run_probe, &idle));  // nobody online
  EXPECT_EQ(dq.reclaim(), 1U);
  EXPECT_EQ(idle.runs, 1);

  Probe later;
  ASSERT_TRUE(dq.defer(run_probe, &later));
  epoch.online(1);  // after the deferral: it cannot hold what was unpublished before
  EXPECT_EQ(dq.reclaim(), 1U);
  EXPECT_EQ(later.runs, 1);
  epoch.offline(1);
}

TEST(DeferQueue, WaitsForEveryReaderOnlineAtTheDeferral) {
  Epoch epoch(3);
  DeferQueue dq(epoch, 4, "dq_every");
  epoch.online(0);
  epoch.online(2);  // reader 1 stays offline and must not delay anything
  Probe probe;
  ASSERT_TRUE(dq.defer(run_probe, &probe));
  epoch.quiescent(0);
  EXPECT_EQ(dq.reclaim(), 0U);
  EXPECT_EQ(probe.runs, 0);
  epoch.quiescent(2);
  EXPECT_EQ(dq.reclaim(), 1U);
  EXPECT_EQ(probe.runs, 1);
  epoch.offline(0);
  epoch.offline(2);
}

TEST(DeferQueue, RunsInDeferralOrderAndStopsAtTheFirstNotDue) {
  Epoch epoch(1);
  DeferQueue dq(epoch, 8, "dq_order");
  int next_position = 0;
  std::array<Probe, 3> probes;
  for (Probe& p : probes) p.next_position = &next_position;
  epoch.online(0);
  ASSERT_TRUE(dq.defer(run_probe, &probes[0]));
  ASSERT_TRUE(dq.defer(run_probe, &probes[1]));
  epoch.quiescent(0);
  ASSERT_TRUE(dq.defer(run_probe, &probes[2]));
  EXPECT_EQ(dq.reclaim(), 2U);
  EXPECT_EQ(probes[0].position, 0);
  EXPECT_EQ(probes[1].position, 1);
  EXPECT_EQ(probes[2].runs, 0);
  epoch.quiescent(0);
  EXPECT_EQ(dq.reclaim(), 1U);
  EXPECT_EQ(probes[2].position, 2);
  epoch.offline(0);
}

TEST(DeferQueue, FullQueueRefusesUntilAGracePeriodMakesRoom) {
  Epoch epoch(1);
  DeferQueue dq(epoch, 2, "dq_full");
  epoch.online(0);
  std::array<Probe, 3> probes;
  ASSERT_TRUE(dq.defer(run_probe, &probes[0]));
  ASSERT_TRUE(dq.defer(run_probe, &probes[1]));
  EXPECT_FALSE(dq.has_room());
  EXPECT_FALSE(dq.defer(run_probe, &probes[2]));  // reclaiming inside found nothing due
  EXPECT_EQ(dq.pending(), 2U);
  epoch.quiescent(0);
  EXPECT_TRUE(dq.defer(run_probe, &probes[2]));  // reclaims the first two, then queues
  EXPECT_EQ(probes[0].runs, 1);
  EXPECT_EQ(probes[1].runs, 1);
  EXPECT_EQ(probes[2].runs, 0);
  EXPECT_EQ(dq.pending(), 1U);
  EXPECT_TRUE(dq.has_room());
  epoch.offline(0);
  EXPECT_EQ(dq.reclaim(), 1U);
  EXPECT_EQ(probes[2].runs, 1);
}

TEST(DeferQueue, DestructorRunsEverythingPendingOnceNoReaderIsOnline) {
  Epoch epoch(2);
  std::array<Probe, 3> probes;
  {
    DeferQueue dq(epoch, 4, "dq_dtor");
    epoch.online(0);
    epoch.online(1);
    for (Probe& p : probes) ASSERT_TRUE(dq.defer(run_probe, &p));
    EXPECT_EQ(dq.reclaim(), 0U);
    epoch.offline(0);
    epoch.offline(1);
  }
  for (const Probe& p : probes) EXPECT_EQ(p.runs, 1);
}

TEST(DeferQueue, DestructorWaitsForAnOnlineReadersNextQuiescentPoint) {
  Epoch epoch(1);
  std::atomic<bool> online{false};
  std::atomic<bool> stop{false};
  std::atomic<int> quiescent_points{0};
  std::thread reader([&] {
    epoch.online(0);
    online.store(true, std::memory_order_release);
    while (!stop.load(std::memory_order_acquire)) {
      epoch.quiescent(0);
      quiescent_points.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::yield();
    }
    epoch.offline(0);
  });
  while (!online.load(std::memory_order_acquire)) std::this_thread::yield();
  Probe probe;
  {
    DeferQueue dq(epoch, 4, "dq_dtor_wait");
    ASSERT_TRUE(dq.defer(run_probe, &probe));
  }  // returns only once the reader, still online, has passed a quiescent point
  stop.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(probe.runs, 1);
  EXPECT_GT(quiescent_points.load(), 0);
}

// Writers swap a shared object and defer its free while readers check it: a free before the
// readers' grace period would be a use-after-free (reported by ASan and TSan builds) or a read of
// a poisoned object (checked here in every build).
struct Node {
  std::uint64_t value = 0;
  std::uint64_t check = 0;  // ~value while alive, poisoned to value when freed
  std::atomic<int>* frees = nullptr;
};

void free_node(void* ctx) {
  auto* node = static_cast<Node*>(ctx);
  node->check = node->value;  // poison
  node->frees->fetch_add(1, std::memory_order_relaxed);
  delete node;
}

TEST(DeferQueueThreads, TwoWritersSwapUnderTwoReadersEveryNodeFreedOnceAfterItsReaders) {
  constexpr std::uint32_t kReaders = 2;
  constexpr std::uint32_t kWriters = 2;
  constexpr int kSwapsPerWriter = 2000;
  Epoch epoch(kReaders);
  std::atomic<int> frees{0};
  std::atomic<Node*> current{new Node{0, ~std::uint64_t{0}, &frees}};
  std::atomic<int> writers_left{kWriters};
  std::atomic<std::uint32_t> online{0};
  std::array<std::uint64_t, kReaders> bad_reads{};
  std::array<std::uint64_t, kReaders> reads{};
  std::optional<DeferQueue> dq;
  dq.emplace(epoch, 64, "dq_threads");

  std::vector<std::thread> threads;
  for (std::uint32_t r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      epoch.online(r);
      online.fetch_add(1, std::memory_order_relaxed);
      for (std::uint64_t batch = 0;; ++batch) {
        const bool last = writers_left.load(std::memory_order_acquire) == 0;
        for (int i = 0; i < 16; ++i) {
          const Node* node = current.load(std::memory_order_acquire);  // partner: exchange below
          if (node->check != ~node->value) ++bad_reads[r];
          ++reads[r];
        }
        epoch.quiescent(r);
        if (last) break;
        if (batch % 64 == r) {  // now and then asleep, as an idle shard
          epoch.offline(r);
          std::this_thread::yield();
          epoch.online(r);
        }
      }
      epoch.offline(r);
    });
  }
  for (std::uint32_t w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      // Swapping starts once every reader is online, however threads are scheduled.
      while (online.load(std::memory_order_relaxed) != kReaders) std::this_thread::yield();
      for (int i = 1; i <= kSwapsPerWriter; ++i) {
        const std::uint64_t value = std::uint64_t{w} << 32 | static_cast<std::uint32_t>(i);
        // acq_rel: releases the new node to readers' acquire loads, acquires the old one's
        // contents from the writer that published it.
        Node* old = current.exchange(new Node{value, ~value, &frees}, std::memory_order_acq_rel);
        while (!dq->defer(free_node, old)) {
          std::this_thread::yield();  // full: let the readers reach a quiescent point
        }
        if (i % 8 == 0) dq->reclaim();
      }
      writers_left.fetch_sub(1, std::memory_order_release);
    });
  }
  for (std::thread& t : threads) t.join();
  dq.reset();  // readers are offline: runs every pending free
  EXPECT_EQ(frees.load(), kWriters * kSwapsPerWriter);
  for (std::uint32_t r = 0; r < kReaders; ++r) {
    EXPECT_EQ(bad_reads[r], 0U) << "reader " << r;
    EXPECT_GT(reads[r], 0U) << "reader " << r;
  }
  delete current.load();
}

}  // namespace
}  // namespace fastcm::shards
