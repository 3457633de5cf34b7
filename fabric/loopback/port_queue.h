// One loopback port's receive side: a bounded pool of MAD slots, the MPSC queue that carries them
// from senders to the port's consumer, the consumer-local holding area for delayed MADs, and the
// wake-up eventfd of an idle consumer.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "fastcm/clock.h"
#include "fastcm/fabric.h"
#include "runtime/owned_ring.h"
#include "runtime/wakeup_fd.h"

struct rte_ring;

namespace fastcm::loopback {

// Preallocated at construction; afterwards nothing allocates and nothing locks.
//
// A slot cycles: free ring -> a sender fills it -> rx ring -> the consumer copies it out (at once,
// or after holding it until its deliver-at time) -> free ring. Both rings are DPDK rte_rings in our
// own memory (no EAL needed) with room for every slot, so only the slot pool can run out: that is
// the queue-full condition.
class PortQueue {
 public:
  struct Slot {
    MadPacket pkt;  // as the receiver will see it
    // The hand-off word: kFree while in the free pool, else the deliver-at time (kDue = at once).
    // Written last by the side giving the slot away (release), read first by the side taking it
    // (acquire). The rings already order the hand-off, but with barriers outside the C++ memory
    // model; this pair makes it visible to the language (and to ThreadSanitizer).
    std::atomic<std::uint64_t> state{kFree};
  };
  static constexpr std::uint64_t kDue = 0;
  static constexpr std::uint64_t kFree = ~std::uint64_t{0};

  // `depth` slots (1..2^20); `id` names the rings. Throws std::system_error when the eventfd
  // cannot be created or a ring cannot be initialized, std::bad_alloc.
  PortQueue(std::uint32_t depth, std::uint32_t id);
  PortQueue(const PortQueue&) = delete;
  PortQueue& operator=(const PortQueue&) = delete;

  // --- Senders: any thread, concurrently.

  static constexpr std::size_t kBurst = 32;  // ring entries moved per ring operation, at most

  // Takes up to out.size() (≤ kBurst) free slots for the caller to fill, in one ring operation;
  // returns how many, fewer when the rest of the `depth` slots are in flight.
  [[nodiscard]] std::size_t try_acquire(std::span<Slot*> out) noexcept;

  // Queues slots taken by try_acquire() and filled, in order, in one ring operation; the consumer
  // may see slots[i] from deliver_at_ns[i] on (kDue: at once). Never fails. The slots belong to
  // the queue again afterwards.
  void publish(std::span<Slot* const> slots, std::span<const std::uint64_t> deliver_at_ns) noexcept;

  // Wakes the consumer if it armed the eventfd; call after publishing (once per run of publishes).
  void notify() noexcept { wake_.notify(); }

  // --- The consumer: one thread at a time.

  // Copies out up to bufs.size() MADs: first the held ones whose time has come, in (deliver-at,
  // arrival) order, then queued ones in queue order, holding back those not yet due.
  // Reads `clock` only when a delayed MAD is involved.
  std::size_t receive(std::span<MadPacket* const> bufs, const Clock& clock) noexcept;

  // Fabric::arm_rx_event: clears a past wake-up, arms, and returns false instead when a MAD is
  // queued or held (a consumer holding delayed MADs must not sleep past their time).
  bool arm() noexcept;

  // Moves every queued MAD into holding (those already due behind the held ones already due) and
  // returns the earliest deliver-at time, or nullopt when nothing is in flight.
  std::optional<std::uint64_t> next_delivery_ns(const Clock& clock) noexcept;

  // --- Any thread.

  // Slots not in the free pool: queued, held, or being filled by a sender. Exact when no sender
  // or consumer runs; otherwise a value the count had at some instant.
  [[nodiscard]] std::size_t in_flight() const noexcept;

  [[nodiscard]] int event_fd() const noexcept { return wake_.fd(); }

 private:
  // Slots the consumer has copied out, not yet back in the free ring.
  struct Freed {
    explicit Freed(rte_ring* free_ring) noexcept : ring(free_ring) {}
    void add(Slot* slot) noexcept;  // flushes when kBurst are waiting
    void flush() noexcept;
    rte_ring* ring;
    std::array<void*, kBurst> slots;  // [0, count) filled; left unset: an empty poll writes none
    unsigned count = 0;
  };
  struct Held {
    std::uint64_t deliver_at_ns;
    std::uint64_t arrival;  // tie-break: earlier arrival first
    Slot* slot;
  };
  static bool later(const Held& x, const Held& y) noexcept;  // the heap order (min-heap)

  void hold(Slot* slot, std::uint64_t deliver_at_ns) noexcept;
  // Copies the MAD into `buf` and marks the slot free; the caller returns it to the free ring.
  static void copy_out(Slot* slot, MadPacket* buf) noexcept;

  std::uint32_t depth_;
  std::unique_ptr<Slot[]> slots_;
  runtime::OwnedRing rx_;    // filled slots: multi-producer (HTS), single-consumer
  runtime::OwnedRing free_;  // free slots: single-producer (the consumer), multi-consumer (HTS, senders)
  std::vector<Held> held_;  // consumer-only min-heap; capacity `depth` reserved, never exceeded
  std::uint64_t arrivals_ = 0;
  runtime::WakeupFd wake_;  // the consumer arms it in arm(); senders notify()
};

}  // namespace fastcm::loopback
