// The rping examples' single-threaded loop: epoll over the file descriptors that bring work (the
// engine's event queue, the verbs completion channel) and a signalfd for SIGINT and SIGTERM.
//
// Thread contract: block_stop_signals() first in main, before any thread starts (threads inherit
// the mask, so the signals reach only the signalfd); then one thread uses the loop.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace fastcm::examples {

class EventLoop {
 public:
  // Blocks SIGINT and SIGTERM in the calling thread (and the threads it starts later).
  static void block_stop_signals() noexcept;

  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // False when epoll or the signalfd could not be made.
  [[nodiscard]] bool ok() const noexcept { return epoll_fd_ >= 0 && signal_fd_ >= 0; }
  // Watches `fd` for readability; wait() reports it by `tag`. False on an epoll error.
  bool watch(int fd, std::uint32_t tag) noexcept;
  // Waits up to `timeout_ms` (-1: no limit) and writes the tags of the ready fds into `ready`;
  // returns how many. A stop signal sets stop_requested() and returns what else was ready.
  std::size_t wait(int timeout_ms, std::span<std::uint32_t> ready) noexcept;
  [[nodiscard]] bool stop_requested() const noexcept { return stop_requested_; }
  // The signal that asked to stop ("SIGINT", "SIGTERM"), empty before one came.
  [[nodiscard]] const std::string& stop_signal() const noexcept { return stop_signal_; }

 private:
  int epoll_fd_ = -1;
  int signal_fd_ = -1;
  bool stop_requested_ = false;
  std::string stop_signal_;
};

}  // namespace fastcm::examples
