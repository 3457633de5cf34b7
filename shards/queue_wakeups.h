// The event queues a shard pushed to during one burst of its batch, woken once at the burst's end
// instead of at each event: a poll-mode consumer then wakes to the burst's events together rather
// than to the first of them, and goes back to sleep once per burst, not once per event.
//
// Thread contract: the shard's thread only (the worker, or the caller driving the engine). Never
// blocks, never allocates; a flush makes at most one eventfd write per queue (MpscEventQueue::signal).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "shards/mpsc_event_queue.h"

namespace fastcm::shards {

class QueueWakeups {
 public:
  // Room for this many distinct queues per burst; a burst that reaches more wakes the others at once.
  static constexpr std::size_t kMaxPending = 8;

  // Pushes `event` without waking `queue` yet (flush() will); false when the queue is full, as
  // MpscEventQueue::push.
  [[nodiscard]] bool push(MpscEventQueue& queue, const QueuedEvent& event, engine::MadBuf* mad,
                          MpscEventQueue::MadHold hold = MpscEventQueue::MadHold::share) noexcept {
    if (!queue.push_unsignalled(event, mad, hold)) return false;
    if (std::find(pending_.begin(), pending_.begin() + count_, &queue) != pending_.begin() + count_) return true;
    if (count_ == kMaxPending) {
      queue.signal();
    } else {
      pending_[count_++] = &queue;
    }
    return true;
  }

  // Wakes every queue pushed to since the last flush.
  void flush() noexcept {
    for (std::size_t i = 0; i < count_; ++i) pending_[i]->signal();
    count_ = 0;
  }

 private:
  std::array<MpscEventQueue*, kMaxPending> pending_{};
  std::size_t count_ = 0;
};

}  // namespace fastcm::shards
