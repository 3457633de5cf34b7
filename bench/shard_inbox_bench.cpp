// The shard inbox against the usual alternatives, many producers and one consumer, same run:
//   ShardInbox (HTS rte_ring; the consumer spins with yields, then sleeps on the eventfd),
//   tbb::concurrent_bounded_queue (blocking push/pop), std::mutex + std::deque + condition
//   variable (the consumer takes up to a burst per lock).
// Thread 0 is the consumer, the others produce. Every thread runs the same iteration count, so
// each iteration a producer moves kBurst items and the consumer takes producers * kBurst.
// All queues hold kCapacity items; a full inbox or deque makes the producer yield and retry.
#include <benchmark/benchmark.h>
#include <tbb/concurrent_queue.h>

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "shards/shard_inbox.h"

namespace {

constexpr std::size_t kBurst = 32;
constexpr std::uint32_t kCapacity = 1024;

void* item(std::uintptr_t v) { return reinterpret_cast<void*>(v); }

// Each queue is a process-wide static: the threads of one run share it, runs take turns, and every
// run leaves it empty (the consumer takes exactly what the producers put in).
fastcm::shards::ShardInbox& inbox() {
  static fastcm::shards::ShardInbox q(kCapacity, 0);
  return q;
}

void BM_ShardInbox(benchmark::State& state) {
  auto& q = inbox();
  const auto producers = static_cast<std::size_t>(state.threads() - 1);
  std::array<void*, kBurst> buf{};
  if (state.thread_index() == 0) {
    for (auto _ : state) {
      for (std::size_t left = producers * kBurst; left != 0;) {
        left -= q.wait_burst({buf.data(), std::min(left, kBurst)}, 64, 100);
      }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(producers * kBurst));
  } else {
    for (std::size_t i = 0; i < kBurst; ++i) buf[i] = item(i + 1);
    for (auto _ : state) {
      for (std::size_t done = 0; done != kBurst;) {
        const std::size_t took = q.enqueue_burst({buf.data() + done, kBurst - done});
        done += took;
        if (done != kBurst) std::this_thread::yield();
      }
    }
  }
}

tbb::concurrent_bounded_queue<void*>& tbb_queue() {
  static tbb::concurrent_bounded_queue<void*> q = [] {
    tbb::concurrent_bounded_queue<void*> made;
    made.set_capacity(kCapacity);
    return made;
  }();
  return q;
}

void BM_TbbBoundedQueue(benchmark::State& state) {
  auto& q = tbb_queue();
  const auto producers = static_cast<std::size_t>(state.threads() - 1);
  if (state.thread_index() == 0) {
    void* out = nullptr;
    for (auto _ : state) {
      for (std::size_t left = producers * kBurst; left != 0; --left) q.pop(out);
      benchmark::DoNotOptimize(out);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(producers * kBurst));
  } else {
    for (auto _ : state) {
      for (std::size_t i = 0; i < kBurst; ++i) q.push(item(i + 1));
    }
  }
}

struct LockedDeque {
  std::mutex mutex;  // the baseline's lock, held per push burst and per pop burst
  std::condition_variable nonempty;
  std::deque<void*> items;
};

LockedDeque& locked_deque() {
  static LockedDeque q;
  return q;
}

void BM_MutexDeque(benchmark::State& state) {
  auto& q = locked_deque();
  const auto producers = static_cast<std::size_t>(state.threads() - 1);
  if (state.thread_index() == 0) {
    void* last = nullptr;
    for (auto _ : state) {
      for (std::size_t left = producers * kBurst; left != 0;) {
        std::unique_lock lock(q.mutex);
        q.nonempty.wait(lock, [&] { return !q.items.empty(); });
        for (std::size_t n = 0; n < kBurst && left != 0 && !q.items.empty(); ++n, --left) {
          last = q.items.front();
          q.items.pop_front();
        }
      }
      benchmark::DoNotOptimize(last);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(producers * kBurst));
  } else {
    for (auto _ : state) {
      for (std::size_t done = 0; done != kBurst;) {
        {
          std::lock_guard lock(q.mutex);
          for (; done != kBurst && q.items.size() < kCapacity; ++done) {
            q.items.push_back(item(done + 1));
          }
        }
        q.nonempty.notify_one();
        if (done != kBurst) std::this_thread::yield();
      }
    }
  }
}

BENCHMARK(BM_ShardInbox)->Threads(2)->Threads(3)->Threads(5);
BENCHMARK(BM_TbbBoundedQueue)->Threads(2)->Threads(3)->Threads(5);
BENCHMARK(BM_MutexDeque)->Threads(2)->Threads(3)->Threads(5);

}  // namespace
