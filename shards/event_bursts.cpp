#include "shards/event_bursts.h"

#include <span>

namespace fastcm::shards {

std::size_t EventBursts::index_of(const MpscEventQueue& queue) const noexcept {
  std::size_t i = 0;
  while (i < count_ && bursts_[i].queue != &queue) ++i;
  return i;
}

bool EventBursts::push(MpscEventQueue& queue, const QueuedEvent& event, engine::MadBuf* mad,
                       MpscEventQueue::MadHold hold, std::uint16_t port_index) noexcept {
  const std::size_t i = index_of(queue);
  if (i == kMaxQueues) return queue.push(event, mad, hold);
  Burst* burst = &bursts_[i];
  if (i == count_) {
    ++count_;
    burst->queue = &queue;
    const std::size_t size = queue.size();  // a snapshot: never above the capacity, but racing
    burst->room = size < queue.capacity() ? queue.capacity() - static_cast<std::uint32_t>(size) : 0;
    burst->held = 0;
  }
  if (burst->room == 0) return false;
  if (burst->held == kPerQueue) queue_held(*burst);
  MpscEventQueue::take_reference(mad, hold);
  burst->events[burst->held] = event;
  burst->mads[burst->held] = mad;
  burst->ports[burst->held] = port_index;
  ++burst->held;
  --burst->room;
  return true;
}

bool EventBursts::full(const MpscEventQueue& queue) const noexcept {
  const std::size_t i = index_of(queue);
  return i < count_ ? bursts_[i].room == 0 : queue.full();
}

void EventBursts::queue_held(Burst& burst) noexcept {
  const std::size_t queued = burst.queue->push_burst_unsignalled({burst.events.data(), burst.held});
  for (std::size_t i = queued; i < burst.held; ++i) on_refused_(ctx_, burst.mads[i], burst.ports[i]);
  burst.held = 0;
}

void EventBursts::flush() noexcept {
  for (std::size_t i = 0; i < count_; ++i) {
    queue_held(bursts_[i]);
    bursts_[i].queue->signal();
  }
  count_ = 0;
}

}  // namespace fastcm::shards
