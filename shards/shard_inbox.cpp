#include "shards/shard_inbox.h"

#include <poll.h>
#include <rte_ring.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "runtime/checked_capacity.h"

namespace fastcm::shards {

ShardInbox::ShardInbox(std::uint32_t capacity, std::uint32_t shard)
    : capacity_(runtime::checked_capacity("ShardInbox", capacity, kMaxCapacity)),
      // RING_F_EXACT_SZ: the ring holds exactly `capacity`.
      ring_("inbox" + std::to_string(shard), capacity,
            RING_F_EXACT_SZ | RING_F_MP_HTS_ENQ | RING_F_MC_HTS_DEQ) {
  // Producers: HTS, not classic MP or RTS. All three let a preempted producer stall the others
  // (measured on two shared cores), but pure-spin HTS measured fastest there (9.1 vs 4.7 Mmsg/s for MP);
  // with classic MP, four producers on two cores spun on each other's tail update for minutes
  // under ThreadSanitizer, and RTS drew race reports outside the DPDK suppressions we allow.
  // Consumer: HTS dequeue too, called by one thread only. Debian's x86 build publishes the SC
  // dequeue's tail with barriers TSan cannot see, so the items' contents handed from a producer
  // to the shard would be reported as races in our code; HTS loads the producer tail with acquire
  // (partner: the HTS enqueue's release store of that tail) and stores its own tail with release
  // (partner: the enqueue's acquire load of the consumer tail before reusing a slot). The price
  // is one uncontended compare-and-swap per dequeue burst.
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

ShardInbox::~ShardInbox() { ::close(event_fd_); }

std::size_t ShardInbox::enqueue_burst(std::span<void* const> items) noexcept {
  const unsigned n = rte_ring_enqueue_burst(ring_.get(), items.data(),
                                            static_cast<unsigned>(items.size()), nullptr);
  if (n == 0) return 0;
  // Dekker's pattern with arm(): a seq_cst read-modify-write (a full barrier even when it fails)
  // after the ring publication, partnered with arm()'s seq_cst store before its emptiness check.
  // Either this producer sees kArmed or the consumer sees the items. (The ring's own tail accesses
  // are release/acquire; what keeps the store-then-load order on both sides is that x86, the only
  // target of the -march=corei7 DPDK build, compiles each seq_cst write here as a locked
  // instruction, a full barrier.) Only the producer that moves
  // kArmed to kSignalled writes the eventfd, so a sleeping shard costs one syscall in total.
  std::uint32_t expected = kArmed;
  if (wake_.compare_exchange_strong(expected, kSignalled, std::memory_order_seq_cst)) {
    // Fails only when the counter would pass 2^64 - 2, and the fd is readable then anyway.
    eventfd_write(event_fd_, 1);
  }
  return n;
}

std::size_t ShardInbox::dequeue_burst(std::span<void*> out) noexcept {
  unsigned left = 0;
  const unsigned n = rte_ring_dequeue_burst(ring_.get(), out.data(), static_cast<unsigned>(out.size()), &left);
  // The inbox is fullest just before the consumer takes from it. Relaxed: a statistic, written by
  // the one consumer only, read by any thread.
  if (n + left > high_water_.load(std::memory_order_relaxed)) high_water_.store(n + left, std::memory_order_relaxed);
  return n;
}

std::uint32_t ShardInbox::size() const noexcept { return rte_ring_count(ring_.get()); }

std::size_t ShardInbox::arm(std::span<void*> out) noexcept {
  eventfd_t ignored = 0;
  eventfd_read(event_fd_, &ignored);  // clears a past wake-up; EAGAIN when there was none
  // seq_cst store, then the emptiness check: partner of the seq_cst compare-and-swap in
  // enqueue_burst(). The check is a real dequeue, not rte_ring_empty(): the dequeue reads the
  // producer tail with an atomic acquire load, rte_ring_empty() with a plain read that
  // ThreadSanitizer reports as a race against the producers.
  wake_.store(kArmed, std::memory_order_seq_cst);
  const std::size_t n = dequeue_burst(out);
  // Not sleeping after all. A producer that already signalled left the fd readable: a spurious
  // wake-up at worst, cleared by the next arm().
  if (n != 0) disarm();
  return n;
}

void ShardInbox::disarm() noexcept {
  // Relaxed: the flag carries no data. Producers read it only to decide on an eventfd write, and
  // a stale kArmed costs them one spurious write, never a lost item.
  wake_.store(kIdle, std::memory_order_relaxed);
}

std::size_t ShardInbox::wait_burst(std::span<void*> out, unsigned idle_spins,
                                   int timeout_ms) noexcept {
  for (unsigned spin = 0;; ++spin) {
    if (const std::size_t n = dequeue_burst(out); n != 0) return n;
    if (spin == idle_spins) break;
    std::this_thread::yield();  // lets a preempted producer on this core finish its enqueue
  }
  if (const std::size_t n = arm(out); n != 0) return n;
  pollfd pfd{event_fd_, POLLIN, 0};
  ::poll(&pfd, 1, timeout_ms);  // timeout, EINTR and readiness all end in the dequeue below
  disarm();
  return dequeue_burst(out);
}

}  // namespace fastcm::shards
