// A bounded EventQueue for one thread: a ring of events with the MADs they borrow, and an eventfd
// that is readable exactly while the ring is non-empty.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "engine/mad_buf.h"
#include "fastcm/event.h"
#include "fastcm/event_queue.h"

namespace fastcm::engine {

class RingEventQueue final : public EventQueue {
 public:
  // Throws std::system_error when no eventfd can be created.
  explicit RingEventQueue(std::uint32_t capacity)
      : events_(capacity), fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error("eventfd failed");
  }
  ~RingEventQueue() override { ::close(fd_); }

  [[nodiscard]] int event_fd() const noexcept override { return fd_; }
  [[nodiscard]] std::size_t size() const noexcept override { return count_; }
  [[nodiscard]] bool full() const noexcept { return count_ == events_.size(); }

  // Appends `event`, taking a reference on `mad`. False (nothing taken) when full.
  bool push(const Event& event, MadBuf* mad) noexcept {
    if (full()) return false;
    if (mad != nullptr) retain(*mad);
    events_[(head_ + count_) % events_.size()] = event;
    if (count_++ == 0) signal(1);
    return true;
  }

  // Moves up to out.size() events to `out`; their MAD references go with them.
  std::size_t pop(std::span<Event> out) noexcept {
    std::size_t n = 0;
    for (; n < out.size() && count_ > 0; ++n, --count_) {
      out[n] = events_[head_];
      head_ = (head_ + 1) % events_.size();
    }
    if (n > 0 && count_ == 0) drain();
    return n;
  }

 private:
  void signal(std::uint64_t v) noexcept { (void)!::write(fd_, &v, sizeof v); }
  void drain() noexcept {
    std::uint64_t v = 0;
    (void)!::read(fd_, &v, sizeof v);
  }

  std::vector<Event> events_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  int fd_;
};

}  // namespace fastcm::engine
