#include "shards/shard_inbox.h"

#include <poll.h>
#include <rte_ring.h>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
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
}

std::size_t ShardInbox::enqueue_burst(std::span<void* const> items) noexcept {
  const unsigned n = rte_ring_enqueue_burst(ring_.get(), items.data(),
                                            static_cast<unsigned>(items.size()), nullptr);
  if (n != 0) wake_.notify();  // after the ring's publication: wakeup_fd.h's protocol
  return n;
}

void ShardInbox::enqueue_all(std::span<void* const> items) noexcept {
  for (std::size_t done = 0; done < items.size();) {
    const std::size_t n = enqueue_burst(items.subspan(done));
    done += n;
    if (n == 0) std::this_thread::yield();  // the consumer, or a preempted producer, gets the core
  }
}

std::size_t ShardInbox::dequeue_burst(std::span<void*> out) noexcept {
  unsigned left = 0;
  const unsigned n = rte_ring_dequeue_burst(ring_.get(), out.data(), static_cast<unsigned>(out.size()), &left);
  // The inbox is fullest just before the consumer takes from it. Relaxed: a statistic, written by
  // the one consumer only, read by any thread.
  if (n + left > high_water_.load(std::memory_order_relaxed)) high_water_.store(n + left, std::memory_order_relaxed);
  return n;
}

std::uint32_t ShardInbox::size() const noexcept { return std::min(ring_.count(), capacity_); }

std::size_t ShardInbox::arm(std::span<void*> out) noexcept {
  wake_.arm();
  // The check after arming is a real dequeue, not rte_ring_empty(): the dequeue reads the producer
  // tail with an atomic acquire load, rte_ring_empty() with a plain read that ThreadSanitizer
  // reports as a race against the producers.
  const std::size_t n = dequeue_burst(out);
  if (n != 0) wake_.disarm();  // not sleeping after all
  return n;
}

std::size_t ShardInbox::wait_burst(std::span<void*> out, unsigned idle_spins,
                                   int timeout_ms) noexcept {
  for (unsigned spin = 0;; ++spin) {
    if (const std::size_t n = dequeue_burst(out); n != 0) return n;
    if (spin == idle_spins) break;
    std::this_thread::yield();  // lets a preempted producer on this core finish its enqueue
  }
  if (const std::size_t n = arm(out); n != 0) return n;
  pollfd pfd{wake_.fd(), POLLIN, 0};
  ::poll(&pfd, 1, timeout_ms);  // timeout, EINTR and readiness all end in the dequeue below
  disarm();
  return dequeue_burst(out);
}

}  // namespace fastcm::shards
