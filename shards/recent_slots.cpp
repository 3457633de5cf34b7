#include "shards/recent_slots.h"

#include <atomic>

namespace fastcm::shards {

thread_local std::array<RecentSlots::Entry, RecentSlots::kEntries> RecentSlots::entries_{};

std::uint32_t RecentSlots::new_engine_serial() noexcept {
  // Relaxed: a unique number, it orders nothing.
  static std::atomic<std::uint32_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace fastcm::shards
