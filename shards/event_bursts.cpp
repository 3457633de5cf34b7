#include "shards/event_bursts.h"

#include <span>

namespace fastcm::shards {

EventBursts::Burst* EventBursts::find(const MpscEventQueue& queue) const noexcept {
  for (std::size_t i = 0; i < count_; ++i) {
    if (bursts_[i].queue == &queue) return const_cast<Burst*>(&bursts_[i]);
  }
  return nullptr;
}

bool EventBursts::push(MpscEventQueue& queue, const QueuedEvent& event, engine::MadBuf* mad,
                       MpscEventQueue::MadHold hold, std::uint16_t port_index) noexcept {
  Burst* burst = find(queue);
  if (burst == nullptr) {
    if (count_ == kMaxQueues) return queue.push(event, mad, hold);
    burst = &bursts_[count_++];
    burst->queue = &queue;
    const std::size_t size = queue.size();  // a snapshot: never above the capacity, but racing
    burst->room = size < queue.capacity() ? queue.capacity() - static_cast<std::uint32_t>(size) : 0;
    burst->held = 0;
  }
  if (burst->room == 0) return false;
  if (burst->held == kPerQueue) queue_held(*burst);
  // Taken before the event can be visible: the consumer may pop and release it at once.
  if (mad != nullptr && hold == MpscEventQueue::MadHold::share) engine::retain(*mad);
  burst->events[burst->held] = event;
  burst->mads[burst->held] = mad;
  burst->ports[burst->held] = port_index;
  ++burst->held;
  --burst->room;
  return true;
}

bool EventBursts::full(const MpscEventQueue& queue) const noexcept {
  const Burst* burst = find(queue);
  return burst != nullptr ? burst->room == 0 : queue.full();
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
