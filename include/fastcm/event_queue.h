// An EventQueue holds events for poll delivery (Delivery::queue); Engine::poll drains it.
#pragma once

#include <cstddef>

namespace fastcm {

class EventQueue {
 public:
  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;
  virtual ~EventQueue() = default;

  // An eventfd that is readable while the queue holds events, for poll and epoll loops (level- or
  // edge-triggered: after a wake-up, poll until a poll returns fewer events than asked). Owned by
  // the queue: never close it, and never read it: Engine::poll reads it when it finds the queue
  // empty, and a read of the application's own would take the wake-up that poll waits to clear.
  // Thread contract: any thread.
  [[nodiscard]] virtual int event_fd() const noexcept = 0;
  // Events waiting. Thread contract: any thread; a snapshot.
  [[nodiscard]] virtual std::size_t size() const noexcept = 0;
};

}  // namespace fastcm
