// The engine-wide bound on live endpoints (EngineConfig::max_endpoints), shared by the shards; the
// same bounded count serves the MAD accounts (mempool/mad_accounts.h).
//
// Each shard's table has room for more than its even share, so that REQs hashed unevenly across
// shards still find a slot; this budget keeps the total at the configured bound, exactly as one
// table would. It is touched twice per endpoint (allocate, free), never per MAD.
// Thread contract: any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace fastcm::engine {

class EndpointBudget {
 public:
  explicit EndpointBudget(std::uint32_t limit) noexcept : limit_(limit) {}

  // Takes one endpoint; false, taking nothing, when all are taken.
  [[nodiscard]] bool take() noexcept {
    // Relaxed: a count, nothing is published through it (the endpoint lives in its shard).
    std::uint32_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used >= limit_) return false;
    } while (!used_.compare_exchange_weak(used, used + 1, std::memory_order_relaxed));
    raise_high_water(used + 1);
    return true;
  }
  void give() noexcept { used_.fetch_sub(1, std::memory_order_relaxed); }
  // Taken now: a snapshot where other threads take and give.
  [[nodiscard]] std::uint32_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint32_t limit() const noexcept { return limit_; }
  // The most taken at once so far (exact: every take that sets a new mark raises it).
  [[nodiscard]] std::uint32_t high_water() const noexcept { return high_water_.load(std::memory_order_relaxed); }

 private:
  // Relaxed like used_: a statistic. The compare costs a load of the same cache line per take; a
  // store only when a new mark is set.
  void raise_high_water(std::uint32_t used) noexcept {
    std::uint32_t mark = high_water_.load(std::memory_order_relaxed);
    while (used > mark && !high_water_.compare_exchange_weak(mark, used, std::memory_order_relaxed)) {
    }
  }

  std::uint32_t limit_;
  std::atomic<std::uint32_t> used_{0};
  std::atomic<std::uint32_t> high_water_{0};
};

}  // namespace fastcm::engine
