#include "shards/held_calls.h"

#include "shards/shard_inbox.h"

namespace fastcm::shards {

thread_local HeldCalls::State HeldCalls::held_{};

bool HeldCalls::open(const void* engine) noexcept {
  if (held_.depth != 0 && held_.engine != engine) return false;
  held_.engine = engine;
  ++held_.depth;
  return true;
}

void HeldCalls::close(const void* engine) noexcept {
  if (held_.depth == 0 || held_.engine != engine) return;
  if (--held_.depth != 0) return;
  release();
  held_.engine = nullptr;
}

bool HeldCalls::hold(const void* engine, ShardInbox& inbox, void* item) noexcept {
  if (held_.depth == 0 || held_.engine != engine) return false;
  if (held_.count == kCapacity) release_all();
  held_.items[held_.count++] = Held{.inbox = &inbox, .item = item};
  return true;
}

void HeldCalls::release_all() noexcept {
  // Per inbox, its items in the order held: one burst each.
  const std::uint32_t count = held_.count;
  held_.count = 0;
  std::array<void*, kCapacity> burst;
  for (std::uint32_t first = 0; first < count; ++first) {
    ShardInbox* const inbox = held_.items[first].inbox;
    if (inbox == nullptr) continue;  // gone with an earlier inbox's burst
    std::size_t n = 0;
    for (std::uint32_t i = first; i < count; ++i) {
      if (held_.items[i].inbox != inbox) continue;
      burst[n++] = held_.items[i].item;
      held_.items[i].inbox = nullptr;
    }
    inbox->enqueue_all({burst.data(), n});
  }
}

}  // namespace fastcm::shards
