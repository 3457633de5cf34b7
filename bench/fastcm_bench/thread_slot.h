// A small index per thread, for per-thread rows of counters that each thread writes alone (no
// shared cache line on the per-connection path, no locked instruction, no allocation).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace fastcm::bench {

// Rows per table. The threads that record are the engines' shard threads (at most
// 2 x kMaxShards = 128), the two poll-mode threads and the main thread.
inline constexpr std::uint32_t kMaxThreadSlots = 256;

// The calling thread's row, claimed on its first call and kept for its lifetime (rows are not
// reused: the engines' threads live as long as the run). Thread contract: any thread.
inline std::uint32_t thread_slot() noexcept {
  static std::atomic<std::uint32_t> next{0};
  // Relaxed: the claim only has to be unique; each row's contents are published separately.
  thread_local const std::uint32_t slot = next.fetch_add(1, std::memory_order_relaxed);
  if (slot >= kMaxThreadSlots) std::abort();  // more recording threads than the bound above
  return slot;
}

// Adds to a counter only the calling thread writes: a plain load and store, atomic only so that
// readers on other threads may take snapshots.
inline void add_own(std::atomic<std::uint64_t>& counter, std::uint64_t n) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace fastcm::bench
