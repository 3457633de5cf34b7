#include "runtime/wakeup_fd.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace fastcm::runtime {

WakeupFd::WakeupFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

WakeupFd::~WakeupFd() { ::close(fd_); }

void WakeupFd::notify() noexcept {
  // A seq_cst read-modify-write after the producer's publication, partner of the seq_cst store in
  // arm() before the consumer's check: either this producer sees kArmed or the consumer sees the
  // item. (Queues built on rte_ring publish with release and check with acquire; what keeps the
  // store-then-load order on both sides is that x86, the only target of the -march=corei7 DPDK
  // build, compiles each seq_cst write here as a locked instruction, a full barrier, even when the
  // exchange fails.)
  std::uint32_t expected = kArmed;
  if (state_.compare_exchange_strong(expected, kSignalled, std::memory_order_seq_cst)) {
    // Fails only when the counter would pass 2^64 - 2, and the fd is readable then anyway.
    eventfd_write(fd_, 1);
  }
}

void WakeupFd::arm() noexcept {
  eventfd_t ignored = 0;
  eventfd_read(fd_, &ignored);  // clears a past wake-up; EAGAIN when there was none
  state_.store(kArmed, std::memory_order_seq_cst);  // partner: notify()
}

void WakeupFd::disarm() noexcept {
  // Relaxed: the word carries no data. A producer that still reads kArmed pays one spurious
  // write, never loses an item.
  state_.store(kIdle, std::memory_order_relaxed);
}

}  // namespace fastcm::runtime
