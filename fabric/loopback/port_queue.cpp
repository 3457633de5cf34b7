#include "fabric/loopback/port_queue.h"

#include <rte_ring.h>

#include <algorithm>
#include <cassert>
#include <new>
#include <string>

namespace fastcm::loopback {

// Both rings hold every slot exactly (RING_F_EXACT_SZ). Both sides of both rings are HTS (head/tail
// sync), entered through the generic rte_ring_enqueue/dequeue calls that dispatch on each side's
// sync type. With classic MP/MC, four sender threads on two cores spun on each other's tail update
// for minutes under TSan; with HTS the same test takes under a second, and its atomics are plain
// __atomic builtins that TSan understands. The single receiver's sides are HTS too, though one
// thread needs no sync: an SP/SC side publishes its tail with a plain store (Debian's x86 build),
// which the other side's HTS acquire load reads, and TSan reported that pair as a race whenever
// the plain store's stack could not be restored for the suppression to match (CServer tests).
PortQueue::PortQueue(std::uint32_t depth, std::uint32_t id)
    : depth_(depth),
      slots_(std::make_unique<Slot[]>(depth)),
      rx_("lbrx" + std::to_string(id), depth, RING_F_EXACT_SZ | RING_F_MP_HTS_ENQ | RING_F_MC_HTS_DEQ),
      free_("lbfree" + std::to_string(id), depth,
            RING_F_EXACT_SZ | RING_F_MP_HTS_ENQ | RING_F_MC_HTS_DEQ) {
  for (std::uint32_t i = 0; i < depth; ++i) rte_ring_enqueue(free_.get(), &slots_[i]);
  held_.reserve(depth);
}

std::size_t PortQueue::try_acquire(std::span<Slot*> out) noexcept {
  assert(out.size() <= kBurst);
  void* objs[kBurst];
  const unsigned got = rte_ring_dequeue_burst(free_.get(), objs, static_cast<unsigned>(out.size()), nullptr);
  for (unsigned i = 0; i < got; ++i) {
    out[i] = static_cast<Slot*>(objs[i]);
    // Acquire partner: the release in copy_out(), so the consumer's last reads of this slot
    // happen-before the caller's writes.
    [[maybe_unused]] const std::uint64_t state = out[i]->state.load(std::memory_order_acquire);
    assert(state == kFree);
  }
  return got;
}

void PortQueue::publish(std::span<Slot* const> slots, std::span<const std::uint64_t> deliver_at_ns) noexcept {
  assert(slots.size() <= kBurst && deliver_at_ns.size() == slots.size());
  void* objs[kBurst];
  for (std::size_t i = 0; i < slots.size(); ++i) {
    // Release partner: the acquire in receive() / next_delivery_ns(), which then see the filled pkt.
    slots[i]->state.store(std::min(deliver_at_ns[i], kFree - 1), std::memory_order_release);
    objs[i] = slots[i];
  }
  // Cannot fail: the ring has room for every slot there is.
  rte_ring_enqueue_bulk(rx_.get(), objs, static_cast<unsigned>(slots.size()), nullptr);
}

bool PortQueue::arm() noexcept {
  wake_.arm();
  if (held_.empty()) {
    // The emptiness check is a dequeue, not rte_ring_empty(): the dequeue reads the producer tail
    // with an acquire load, rte_ring_empty() with a plain read that TSan reports as a race against
    // the HTS senders. A MAD found here waits among the held ones (kDue sorts first).
    void* obj = nullptr;
    if (rte_ring_dequeue(rx_.get(), &obj) != 0) return true;
    auto* slot = static_cast<Slot*>(obj);
    hold(slot, slot->state.load(std::memory_order_acquire));  // partner: publish()
  }
  wake_.disarm();  // not sleeping after all
  return false;
}

bool PortQueue::later(const Held& x, const Held& y) noexcept {
  return x.deliver_at_ns != y.deliver_at_ns ? x.deliver_at_ns > y.deliver_at_ns
                                            : x.arrival > y.arrival;
}

void PortQueue::hold(Slot* slot, std::uint64_t deliver_at_ns) noexcept {
  held_.push_back(Held{deliver_at_ns, arrivals_++, slot});  // within the reserved capacity
  std::push_heap(held_.begin(), held_.end(), later);
}

void PortQueue::copy_out(Slot* slot, MadPacket* buf) noexcept {
  // Member by member: the address block's padding stays uncopied and both copies inline (a
  // whole-struct copy went through a memcpy call).
  buf->addr = slot->pkt.addr;
  buf->mad = slot->pkt.mad;
  slot->state.store(kFree, std::memory_order_release);  // acquire partner: try_acquire()
}

void PortQueue::Freed::add(Slot* slot) noexcept {
  slots[count++] = slot;
  if (count == kBurst) flush();
}

void PortQueue::Freed::flush() noexcept {
  // Cannot fail: the ring has room for every slot there is.
  if (count > 0) rte_ring_enqueue_bulk(ring, slots.data(), count, nullptr);
  count = 0;
}

std::size_t PortQueue::receive(std::span<MadPacket* const> bufs, const Clock& clock) noexcept {
  std::size_t n = 0;
  std::optional<std::uint64_t> now;
  const auto now_ns = [&] { return now ? *now : *(now = clock.now_ns()); };
  // Copied-out slots go back to the senders a burst at a time (one ring operation, not one per
  // MAD), at the latest when this call returns.
  Freed freed(free_.get());
  const auto hand_out = [&](Slot* slot) {
    copy_out(slot, bufs[n++]);
    freed.add(slot);
  };
  while (n < bufs.size() && !held_.empty() && held_.front().deliver_at_ns <= now_ns()) {
    std::pop_heap(held_.begin(), held_.end(), later);
    Slot* slot = held_.back().slot;
    held_.pop_back();
    hand_out(slot);
  }
  void* objs[kBurst];
  while (n < bufs.size()) {
    const auto want = static_cast<unsigned>(std::min(bufs.size() - n, kBurst));
    const unsigned got = rte_ring_dequeue_burst(rx_.get(), objs, want, nullptr);
    for (unsigned i = 0; i < got; ++i) {
      auto* slot = static_cast<Slot*>(objs[i]);
      const std::uint64_t at = slot->state.load(std::memory_order_acquire);  // partner: publish()
      if (at == kDue || at <= now_ns()) {
        hand_out(slot);
      } else {
        hold(slot, at);
      }
    }
    if (got < want) break;
  }
  freed.flush();
  return n;
}

std::optional<std::uint64_t> PortQueue::next_delivery_ns(const Clock& clock) noexcept {
  const std::uint64_t now = clock.now_ns();
  void* objs[kBurst];
  unsigned got = 0;
  while ((got = rte_ring_dequeue_burst(rx_.get(), objs, kBurst, nullptr)) > 0) {
    for (unsigned i = 0; i < got; ++i) {
      auto* slot = static_cast<Slot*>(objs[i]);
      const std::uint64_t at = slot->state.load(std::memory_order_acquire);  // partner: publish()
      hold(slot, std::max(at, now));
    }
  }
  if (held_.empty()) return std::nullopt;
  return held_.front().deliver_at_ns;
}

std::size_t PortQueue::in_flight() const noexcept { return depth_ - std::min(free_.count(), depth_); }

}  // namespace fastcm::loopback
