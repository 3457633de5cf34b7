// The engine-wide bound on live endpoints (EngineConfig::max_endpoints), shared by the shards; the
// same bounded count serves the MAD accounts (mempool/mad_accounts.h).
//
// Each shard's table has room for more than its even share, so that endpoints spread unevenly
// across shards (REQs arrive unevenly at ports; a full table passes its REQs to other shards)
// still find a slot; this budget keeps the total at the configured bound, exactly as one
// table would. It is touched twice per endpoint (allocate, free), never per MAD.
// Thread contract: any thread.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>

namespace fastcm::engine {

class EndpointBudget {
 public:
  explicit EndpointBudget(std::uint32_t limit) noexcept : limit_(limit) {}

  // Takes one endpoint; false, taking nothing, when all are taken. A spare (a shard's endpoint
  // made ahead of create_id, shards/spare_endpoints.h) counts toward the limit but not toward
  // used() and the high-water mark until adopt() hands it to the application.
  [[nodiscard]] bool take(bool spare = false) noexcept {
    // Relaxed: a count, nothing is published through it (the endpoint lives in its shard).
    std::uint64_t word = word_.load(std::memory_order_relaxed);
    const std::uint64_t step = step_of(spare);
    do {
      if (taken(word) >= limit_) return false;
    } while (!word_.compare_exchange_weak(word, word + step, std::memory_order_relaxed));
    if (!spare) raise_high_water(word + step);
    return true;
  }
  // A spare taken by the application.
  void adopt() noexcept {
    const std::uint64_t before = word_.fetch_sub(kOneSpare, std::memory_order_relaxed);
    assert(spares(before) >= 1 && "adopt() without a spare taken");
    raise_high_water(before - kOneSpare);
  }
  // Gives back an endpoint the application held, or (`spare`) one taken by take(true) that was
  // never made: both of its counts, or the spares would stay one too many and used() one short.
  void give(bool spare = false) noexcept {
    [[maybe_unused]] const std::uint64_t before = word_.fetch_sub(step_of(spare), std::memory_order_relaxed);
    // One give too many would borrow from the spare half and still read as a plausible level (0):
    // debug builds, which the sanitizer suites and the fuzzers run, stop at it instead.
    assert(taken(before) >= 1 && (!spare || spares(before) >= 1) && "give() without a take");
  }
  // Held by the application now (spares not counted): a snapshot where other threads take and give.
  [[nodiscard]] std::uint32_t used() const noexcept { return held(word_.load(std::memory_order_relaxed)); }
  [[nodiscard]] std::uint32_t limit() const noexcept { return limit_; }
  // The most the application held at once so far (exact: every change that sets a new mark
  // raises it).
  [[nodiscard]] std::uint32_t high_water() const noexcept { return high_water_.load(std::memory_order_relaxed); }

 private:
  // One word, so that every change sees both counts at once: all endpoints taken in the low half,
  // the spares among them in the high half.
  static constexpr std::uint64_t kOneSpare = std::uint64_t{1} << 32;
  // What one endpoint adds to the word: a spare counts in both halves.
  [[nodiscard]] static constexpr std::uint64_t step_of(bool spare) noexcept { return spare ? kOneSpare + 1 : 1; }
  [[nodiscard]] static std::uint32_t taken(std::uint64_t word) noexcept { return static_cast<std::uint32_t>(word); }
  [[nodiscard]] static std::uint32_t spares(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>(word >> 32);
  }
  [[nodiscard]] static std::uint32_t held(std::uint64_t word) noexcept {
    return taken(word) - spares(word);
  }
  // Relaxed like word_: a statistic. The compare costs a load of the same cache line per take; a
  // store only when a new mark is set.
  void raise_high_water(std::uint64_t word) noexcept {
    const std::uint32_t now = held(word);
    std::uint32_t mark = high_water_.load(std::memory_order_relaxed);
    while (now > mark && !high_water_.compare_exchange_weak(mark, now, std::memory_order_relaxed)) {
    }
  }

  std::uint32_t limit_;
  std::atomic<std::uint64_t> word_{0};
  std::atomic<std::uint32_t> high_water_{0};
};

}  // namespace fastcm::engine
