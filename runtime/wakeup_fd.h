// The wake-up of one idle consumer by many producers: an eventfd that the consumer arms before it
// sleeps and that producers write only while it is armed. A consumer that keeps finding work costs
// its producers no system call; a sleeping one costs them one eventfd write per sleep (the first
// producer to find it armed), not one per item. The shard inbox and the loopback port queue wake
// their consumers with it.
//
// Protocol, over one word (Dekker's pattern):
//   consumer  arm(); checks its queue again (an acquire read of what producers publish); finds it
//             empty -> sleeps until fd() is readable (poll/epoll, beside other fds), then
//             disarm(); finds work -> disarm() and does not sleep.
//   producer  publishes its item (a release store or stronger), then notify().
// Either notify() finds the consumer armed and writes the eventfd, or the consumer's check finds
// the item: no wake-up is lost. A wake-up can be spurious (a producer signalled just before the
// consumer found the item itself); the next arm() clears it.
//
// Threads: notify() any thread, concurrently; arm() and disarm() the one consumer at a time; fd()
// any thread. Blocks: never (the eventfd is non-blocking). Errors: the constructor throws
// std::system_error (errno of eventfd(2)); nothing else fails.
#pragma once

#include <atomic>
#include <cstdint>

namespace fastcm::runtime {

class WakeupFd {
 public:
  WakeupFd();
  ~WakeupFd();
  WakeupFd(const WakeupFd&) = delete;
  WakeupFd& operator=(const WakeupFd&) = delete;

  // Producer, after publishing: writes the eventfd when the consumer is armed and no producer has
  // written it since.
  void notify() noexcept;
  // Consumer, before its last check of the queue: clears a past wake-up and arms.
  void arm() noexcept;
  // Consumer, after waking or after deciding not to sleep: producers stop paying for wake-ups.
  void disarm() noexcept;
  // Readable once a producer has signalled the armed consumer. The WakeupFd owns it.
  [[nodiscard]] int fd() const noexcept { return fd_; }

 private:
  enum : std::uint32_t { kIdle, kArmed, kSignalled };

  // kIdle -> kArmed by arm(); kArmed -> kSignalled by the one producer that writes the eventfd;
  // -> kIdle by disarm(). Its own cache line: producers read-modify-write it once per burst.
  alignas(64) std::atomic<std::uint32_t> state_{kIdle};
  int fd_ = -1;
};

}  // namespace fastcm::runtime
