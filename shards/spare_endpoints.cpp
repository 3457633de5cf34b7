#include "shards/spare_endpoints.h"

namespace fastcm::shards {

std::optional<SpareEndpoints::Spare> SpareEndpoints::take() noexcept {
  if (count_.load(std::memory_order_relaxed) == 0) return std::nullopt;
  const std::uint32_t first = next_take_.load(std::memory_order_relaxed);
  for (std::uint32_t i = 0; i < kTarget; ++i) {
    const std::uint32_t at = (first + i) % kTarget;
    std::atomic<std::uint64_t>& cell = cells_[at];
    // The load first: an empty cell costs a read, not a write to a line other takers share.
    // Acquire partner: top_up's release store of this cell, after the shard set the endpoint up
    // and stored its slot.
    std::uint64_t raw = cell.load(std::memory_order_acquire);
    if (raw == 0) continue;
    const std::uint32_t slot = slots_[at].load(std::memory_order_relaxed);
    // Relaxed: the load above acquired what this Id's cell published; success means no other
    // taker took it since, so no refill wrote over its slot.
    if (!cell.compare_exchange_strong(raw, 0, std::memory_order_relaxed)) continue;
    next_take_.store((at + 1) % kTarget, std::memory_order_relaxed);
    count_.fetch_sub(1, std::memory_order_relaxed);
    return Spare{.id = Id{raw}, .slot = slot};
  }
  return std::nullopt;
}

}  // namespace fastcm::shards
