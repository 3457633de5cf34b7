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

  // An eventfd that is readable while the queue holds events, for epoll loops. Owned by the
  // queue: never close it; reading it is allowed but unnecessary (poll keeps it in step).
  // Thread contract: any thread.
  [[nodiscard]] virtual int event_fd() const noexcept = 0;
  // Events waiting. Thread contract: any thread; a snapshot.
  [[nodiscard]] virtual std::size_t size() const noexcept = 0;
};

}  // namespace fastcm
