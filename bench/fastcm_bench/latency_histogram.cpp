#include "bench/fastcm_bench/latency_histogram.h"

#include <algorithm>
#include <bit>

namespace fastcm::bench {

std::size_t LatencyHistogram::bucket_of(std::uint64_t ns) noexcept {
  if (ns < (std::uint64_t{1} << kSubBits)) return static_cast<std::size_t>(ns);
  // The top kSubBits bits of the value: a mantissa in [kHalf, 2 * kHalf) and a shift.
  const unsigned shift = static_cast<unsigned>(std::bit_width(ns)) - kSubBits;
  if (shift > kMaxShift) return kBuckets - 1;
  return std::size_t{shift} * kHalf + static_cast<std::size_t>(ns >> shift);
}

std::uint64_t LatencyHistogram::upper_edge(std::size_t bucket) noexcept {
  if (bucket < (std::size_t{1} << kSubBits)) return bucket;
  const std::size_t shift = bucket / kHalf - 1;
  const std::uint64_t mantissa = bucket - shift * kHalf;
  return ((mantissa + 1) << shift) - 1;
}

LatencySummary LatencyHistogram::summary() const {
  std::vector<std::uint64_t> merged(kBuckets, 0);
  LatencySummary s;
  for (std::uint32_t r = 0; r < kMaxThreadSlots; ++r) {
    for (std::size_t b = 0; b < kBuckets; ++b) {
      merged[b] += rows_[r].buckets[b].load(std::memory_order_relaxed);
    }
    s.max_ns = std::max(s.max_ns, rows_[r].max_ns.load(std::memory_order_relaxed));
  }
  for (const std::uint64_t n : merged) s.count += n;
  if (s.count == 0) return s;

  // The smallest bucket edge with at least `q` of the samples at or below it.
  const auto percentile = [&](double q) {
    const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(s.count));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      seen += merged[b];
      if (seen > 0 && seen >= rank) return std::min(upper_edge(b), s.max_ns);
    }
    return s.max_ns;
  };
  s.p50_ns = percentile(0.50);
  s.p99_ns = percentile(0.99);
  s.p999_ns = percentile(0.999);

  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < kBuckets; ++b) {
    if (merged[b] == 0) continue;
    seen += merged[b];
    s.cdf.push_back({std::min(upper_edge(b), s.max_ns),
                     static_cast<double>(seen) / static_cast<double>(s.count)});
  }
  return s;
}

}  // namespace fastcm::bench
