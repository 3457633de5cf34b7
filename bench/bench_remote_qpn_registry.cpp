// RemoteQpnRegistry against the library candidates, all behind engine::RemoteQpns with the same
// contract (bounded by an atomic count where the container is not):
//   Registry      shards::RemoteQpnRegistry (fixed open addressing, lock-free find)
//   TbbHash       tbb::concurrent_hash_map, tbb::tbb_allocator (tbbmalloc when it loads)
//   TbbHashScal   tbb::concurrent_hash_map, tbb::scalable_allocator
//   MutexMap      std::mutex + std::unordered_map (reserved for the capacity)
// Each table is sized for kCapacity endpoints and holds kResident entries throughout (a busy
// engine): sequential QPNs of one CA GUID, as a peer's QPs usually are, which a weak hash piles
// onto few buckets. Workloads, with 1, 2 and 4 threads, each thread on its own keys:
//   ClaimRelease  claim a new key, release it: one connection's whole use of the table
//   FindMiss      look up a key that is not there (a REQ from a QP we are not connected to)
//   FindHit       look up a resident key (a REQ or REP from a QP we are connected to)
// Items are claim+release pairs or lookups. Run in Release, alone:
//   fastcm_bench_remote_qpn_registry --benchmark_repetitions=3
//     --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <tbb/concurrent_hash_map.h>
#include <tbb/scalable_allocator.h>
#include <tbb/tbb_allocator.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "engine/remote_qpns.h"
#include "shards/remote_qpn_registry.h"

namespace {

using fastcm::Id;
using fastcm::engine::RemoteQpnKey;
using fastcm::engine::RemoteQpns;

constexpr std::uint32_t kCapacity = 1 << 16;
constexpr std::uint32_t kResident = kCapacity / 2;
constexpr std::uint32_t kKeysPerThread = 1024;

RemoteQpnKey resident_key(std::uint32_t n) { return {n, 0xB000}; }
RemoteQpnKey thread_key(int thread, std::uint32_t n) {
  return {n, 0xA000 + static_cast<std::uint64_t>(thread)};
}
Id thread_id(int thread, std::uint32_t n) {
  return Id::make(static_cast<std::uint32_t>(thread) << 16 | n, 1);
}

struct KeyHash {
  std::size_t operator()(const RemoteQpnKey& k) const noexcept {
    const std::uint64_t h = (k.ca_guid ^ (std::uint64_t{k.qpn} << 32 | k.qpn)) *
                            0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

struct KeyHashCompare {
  static std::size_t hash(const RemoteQpnKey& k) noexcept { return KeyHash{}(k); }
  static bool equal(const RemoteQpnKey& a, const RemoteQpnKey& b) noexcept { return a == b; }
};

// Reserves one of `capacity` entries; false when all are taken.
bool reserve(std::atomic<std::uint32_t>& size, std::uint32_t capacity) noexcept {
  std::uint32_t n = size.load(std::memory_order_relaxed);
  do {
    if (n >= capacity) return false;
  } while (!size.compare_exchange_weak(n, n + 1, std::memory_order_acquire,
                                       std::memory_order_relaxed));
  return true;
}

template <class Allocator>
class TbbHashQpns final : public RemoteQpns {
 public:
  explicit TbbHashQpns(std::uint32_t capacity) : capacity_(capacity), map_(capacity) {}

  std::optional<Id> find(RemoteQpnKey key) const noexcept override {
    typename Map::const_accessor entry;
    return map_.find(entry, key) ? std::optional<Id>(entry->second) : std::nullopt;
  }

  std::optional<Id> claim(RemoteQpnKey key, Id owner) noexcept override {
    if (std::optional<Id> held = find(key)) return *held == owner ? std::nullopt : held;
    if (!reserve(size_, capacity_)) return std::nullopt;
    typename Map::accessor entry;
    if (!map_.insert(entry, key)) {  // another claim of `key` got in first
      size_.fetch_sub(1, std::memory_order_release);
      return entry->second == owner ? std::nullopt : std::optional<Id>(entry->second);
    }
    entry->second = owner;
    return std::nullopt;
  }

  void release(RemoteQpnKey key, Id owner) noexcept override {
    typename Map::accessor entry;
    if (map_.find(entry, key) && entry->second == owner) {
      map_.erase(entry);
      size_.fetch_sub(1, std::memory_order_release);
    }
  }

 private:
  using Map = tbb::concurrent_hash_map<RemoteQpnKey, Id, KeyHashCompare, Allocator>;
  std::uint32_t capacity_;
  std::atomic<std::uint32_t> size_{0};
  Map map_;
};

class MutexMapQpns final : public RemoteQpns {
 public:
  explicit MutexMapQpns(std::uint32_t capacity) : capacity_(capacity) { map_.reserve(capacity); }

  std::optional<Id> find(RemoteQpnKey key) const noexcept override {
    const std::lock_guard lock(mutex_);
    const auto it = map_.find(key);
    return it != map_.end() ? std::optional<Id>(it->second) : std::nullopt;
  }

  std::optional<Id> claim(RemoteQpnKey key, Id owner) noexcept override {
    const std::lock_guard lock(mutex_);
    if (const auto it = map_.find(key); it != map_.end()) {
      return it->second == owner ? std::nullopt : std::optional<Id>(it->second);
    }
    if (map_.size() < capacity_) map_.emplace(key, owner);
    return std::nullopt;
  }

  void release(RemoteQpnKey key, Id owner) noexcept override {
    const std::lock_guard lock(mutex_);
    if (const auto it = map_.find(key); it != map_.end() && it->second == owner) map_.erase(it);
  }

 private:
  std::uint32_t capacity_;
  mutable std::mutex mutex_;  // the baseline's one lock, held per operation
  std::unordered_map<RemoteQpnKey, Id, KeyHash> map_;
};

using TbbHash = TbbHashQpns<tbb::tbb_allocator<std::pair<const RemoteQpnKey, Id>>>;
using TbbHashScal = TbbHashQpns<tbb::scalable_allocator<std::pair<const RemoteQpnKey, Id>>>;
using Registry = fastcm::shards::RemoteQpnRegistry;

// One process-wide table per candidate, filled with the resident entries on first use; every run
// leaves it as it found it.
template <class Table>
RemoteQpns& filled_table() {
  static Table made(kCapacity);
  static const bool filled = [] {
    for (std::uint32_t n = 0; n < kResident; ++n) (void)made.claim(resident_key(n), Id{n + 1});
    return true;
  }();
  benchmark::DoNotOptimize(filled);
  return made;
}

template <class Table>
void BM_ClaimRelease(benchmark::State& state) {
  RemoteQpns& t = filled_table<Table>();
  const int me = state.thread_index();
  std::uint32_t n = 0;
  for (auto _ : state) {
    const RemoteQpnKey key = thread_key(me, n);
    const Id owner = thread_id(me, n);
    benchmark::DoNotOptimize(t.claim(key, owner));
    t.release(key, owner);
    n = (n + 1) % kKeysPerThread;
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Table>
void BM_FindMiss(benchmark::State& state) {
  const RemoteQpns& t = filled_table<Table>();
  const int me = state.thread_index();
  std::uint32_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.find(thread_key(me, n)));
    n = (n + 1) % kKeysPerThread;
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Table>
void BM_FindHit(benchmark::State& state) {
  const RemoteQpns& t = filled_table<Table>();
  std::uint32_t n = static_cast<std::uint32_t>(state.thread_index()) * 4099;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.find(resident_key(n)));
    n = (n + 1) % kResident;
  }
  state.SetItemsProcessed(state.iterations());
}

#define QPN_BENCH(fn, table) \
  BENCHMARK_TEMPLATE(fn, table)->Threads(1)->Threads(2)->Threads(4)->UseRealTime()

QPN_BENCH(BM_ClaimRelease, Registry);
QPN_BENCH(BM_ClaimRelease, TbbHash);
QPN_BENCH(BM_ClaimRelease, TbbHashScal);
QPN_BENCH(BM_ClaimRelease, MutexMapQpns);
QPN_BENCH(BM_FindMiss, Registry);
QPN_BENCH(BM_FindMiss, TbbHash);
QPN_BENCH(BM_FindMiss, TbbHashScal);
QPN_BENCH(BM_FindMiss, MutexMapQpns);
QPN_BENCH(BM_FindHit, Registry);
QPN_BENCH(BM_FindHit, TbbHash);
QPN_BENCH(BM_FindHit, TbbHashScal);
QPN_BENCH(BM_FindHit, MutexMapQpns);

}  // namespace
