// Handshake latencies in log-linear buckets (HDR-style): values below 128 ns are exact, and above
// that each power of two is split into 64 buckets, so a value's bucket is at most 1/64 (1.6 %)
// wider than the value. Each recording thread has its own preallocated row (thread_slot.h):
// recording is a bucket index and two plain stores, with no allocation and no shared cache line.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/fastcm_bench/thread_slot.h"

namespace fastcm::bench {

struct LatencySummary {
  std::uint64_t count = 0;
  // Nanoseconds: the upper edge of the bucket holding the percentile (never above max_ns).
  std::uint64_t p50_ns = 0;
  std::uint64_t p99_ns = 0;
  std::uint64_t p999_ns = 0;
  std::uint64_t max_ns = 0;
  struct CdfPoint {
    std::uint64_t ns;   // bucket upper edge
    double fraction;    // of samples at or below it
  };
  std::vector<CdfPoint> cdf;  // one point per non-empty bucket, increasing
};

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBits = 7;           // 2^7 = 128 exact values, then 64 per octave
  static constexpr unsigned kHalf = 1u << (kSubBits - 1);
  static constexpr unsigned kMaxShift = 36;         // values up to 2^43 ns (about 2.4 hours)
  static constexpr std::size_t kBuckets = (kMaxShift + 2) * kHalf;

  LatencyHistogram() : rows_(std::make_unique<Row[]>(kMaxThreadSlots)) {}

  // Records one latency. Thread contract: any thread (its own row); values past the last bucket
  // count in it (and in the maximum, exactly).
  void record(std::uint64_t ns) noexcept {
    Row& row = rows_[thread_slot()];
    add_own(row.buckets[bucket_of(ns)], 1);
    if (ns > row.max_ns.load(std::memory_order_relaxed)) {
      row.max_ns.store(ns, std::memory_order_relaxed);
    }
  }

  // Merges every row. Thread contract: any thread; exact once the recording threads are done
  // (a happens-before edge from their last record), a snapshot before that.
  [[nodiscard]] LatencySummary summary() const;

  // Bucket arithmetic, exposed for the report's wording and for checks.
  [[nodiscard]] static std::size_t bucket_of(std::uint64_t ns) noexcept;
  [[nodiscard]] static std::uint64_t upper_edge(std::size_t bucket) noexcept;

 private:
  struct alignas(64) Row {
    std::array<std::atomic<std::uint64_t>, kBuckets> buckets{};
    std::atomic<std::uint64_t> max_ns{0};
  };
  std::unique_ptr<Row[]> rows_;
};

}  // namespace fastcm::bench
