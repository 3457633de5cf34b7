#include "shards/mpsc_event_queue.h"

#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>

#include "runtime/checked_capacity.h"

namespace fastcm::shards {
namespace {

// Events travel by value: the ring copies them as arrays of 32-bit words.
static_assert(std::is_trivially_copyable_v<QueuedEvent>, "the ring copies QueuedEvents bytewise");
// The ring's element size must be a multiple of 4. QueuedEvent's already is (it holds pointers),
// so the ring's stride equals a QueuedEvent array's and a burst lands straight in pop()'s span.
static_assert(sizeof(QueuedEvent) % 4 == 0, "rte_ring elements are whole 32-bit words");
constexpr unsigned kEventSize = sizeof(QueuedEvent);

}  // namespace

// RING_F_EXACT_SZ: the ring holds exactly `capacity`.
// Sync modes, as for the shard inbox (shard_inbox.cpp), whose reasons hold here too:
// - producers HTS: the shards push concurrently; classic MP spun for minutes under TSan with
//   four producers on two cores and was slowest on an oversubscribed machine.
// - consumer HTS, though there is one: its tail accesses are C11 acquire/release atomics that
//   TSan sees (Debian's x86 SC dequeue uses barriers TSan cannot see), so what a shard wrote
//   before pushing (the MAD's contents) reaches the polling thread through edges TSan checks,
//   not reported as a race in our code. One uncontended CAS per pop. (TSan still reports the
//   ring's own slot copies, inside rte_ring_elem_pvt.h, suppressed as DPDK internals: it keys
//   synchronization by address, and HTS moves the head with a CAS on a 64-bit word but publishes
//   the tail with a store to its upper half, so a pusher that waited on the head does not pass
//   on the previous pusher's slot writes. Writes made before the head CAS are passed on.)
// DPDK 22.11 has the element-size HTS calls (rte_ring_mp_hts_enqueue_bulk_elem,
// rte_ring_mc_hts_dequeue_burst_elem); they are called directly, skipping the sync-type switch.
MpscEventQueue::MpscEventQueue(std::uint32_t capacity)
    : capacity_(runtime::checked_capacity("MpscEventQueue", capacity, kMaxCapacity)),
      ring_("fastcm_evq", capacity, RING_F_EXACT_SZ | RING_F_MP_HTS_ENQ | RING_F_MC_HTS_DEQ,
            kEventSize) {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

MpscEventQueue::~MpscEventQueue() { ::close(event_fd_); }

bool MpscEventQueue::push(const QueuedEvent& event, engine::MadBuf* mad, MadHold hold) noexcept {
  const bool took = take_reference(mad, hold);
  if (push_burst_unsignalled({&event, 1}) == 0) {
    // Full: give back the reference just taken. The caller's own reference keeps the count above
    // zero, so this can never be the last release (no pool needed) and orders nothing.
    if (took) mad->refs.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  signal();
  return true;
}

std::size_t MpscEventQueue::push_burst_unsignalled(std::span<const QueuedEvent> events) noexcept {
  return rte_ring_mp_hts_enqueue_burst_elem(ring_.get(), events.data(), kEventSize,
                                            static_cast<unsigned>(events.size()), nullptr);
}

std::size_t MpscEventQueue::pop(std::span<QueuedEvent> out) noexcept {
  const auto want = static_cast<unsigned>(std::min<std::size_t>(out.size(), capacity_));
  unsigned left = 0;
  const unsigned n = rte_ring_mc_hts_dequeue_burst_elem(ring_.get(), out.data(), kEventSize, want, &left);
  // Events are removed only here, so the queue was never fuller since the last pop than the n + left
  // this one found: the high-water mark costs the producers nothing.
  if (n + left > high_water_.load(std::memory_order_relaxed)) high_water_.store(n + left, std::memory_order_relaxed);
  if (left == 0) settle_empty();
  return n;
}

// The wake-up protocol. Labels name each atomic access of ours and its partners. wake_ holds one
// bit, kClaimed: a producer took the job of writing the eventfd since the consumer last cleared
// it. The consumer clears it only after its read of the eventfd consumed that write, so no write
// is ever left behind a clear (a readable eventfd always means a write the next settle reads),
// and a settle never waits for a producer: a claimer whose write has not landed yet leaves the
// bit set and the eventfd unreadable, so the consumer sleeps until the write wakes it.
//
// No fences: producers and the consumer meet on read-modify-writes of the one word wake_, and its
// modification order decides who signals. For an event in the ring, the push's S1 is either
//   - after the consumer's C1 in that order: then S1 (or an earlier claim after C1) finds kClaimed
//     clear and its thread writes the eventfd, after C1 and so after the read before C1; or
//   - before C1: C1 reads from S1's release sequence (only RMWs follow S1), so the enqueue that
//     preceded S1 happens-before C2, which sees the event and signals (or the event was popped).
// Either way, once the pushes and the pop in flight have returned, an event in the ring has the
// eventfd readable or its write on the way: no lost wake-up. One write per claim, and a claim is
// cleared only by C1, after a pop found the ring empty: one write per wake-up, not per push.
void MpscEventQueue::signal() noexcept {
  // S1: acq_rel RMW. Release: publishes this thread's enqueue (the ring tail store before it) to
  // the consumer's C1. Acquire: partner of the last C1 before it, so the consumer's eventfd read
  // before that C1 happens-before our write below and cannot swallow it.
  if ((wake_.fetch_or(kClaimed, std::memory_order_acq_rel) & kClaimed) != 0) return;
  // Fails only when the counter would pass 2^64 - 2; it is readable then anyway.
  eventfd_write(event_fd_, 1);
}

void MpscEventQueue::settle_empty() noexcept {
  // C0: a snapshot (relaxed: the read below, not this load, decides): with no claim there is
  // nothing to clear, and no syscall for a consumer polling an idle queue.
  if ((wake_.load(std::memory_order_relaxed) & kClaimed) == 0) return;
  // Consumes the claimer's write. EAGAIN: it has not landed yet; the claim stays, and the write,
  // when it lands, makes the eventfd readable for the pop that clears it. (The only reader is this
  // consumer, which is why the application must not read the eventfd.)
  eventfd_t ignored = 0;
  if (eventfd_read(event_fd_, &ignored) != 0) return;
  // C1: acq_rel RMW. Acquire: partner of S1 of every claim and push before it in wake_'s order,
  // whose enqueues C2 then sees. Release: partner of the acquire in the S1 of the next claim. No
  // claim can come between the read above and C1: kClaimed is still set.
  wake_.exchange(0, std::memory_order_acq_rel);
  // C2: a producer that pushed after this pop's dequeue found kClaimed set and left the signal to
  // whoever cleared it: us.
  if (count() != 0) signal();
}

std::size_t MpscEventQueue::size() const noexcept {
  // count() can exceed the capacity for a moment when called off the consumer's thread.
  return std::min(count(), capacity_);
}

std::uint32_t MpscEventQueue::count() const noexcept { return ring_.count(); }

}  // namespace fastcm::shards
