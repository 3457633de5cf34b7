// The inbox of one shard worker: a bounded MPSC queue of pointers (pooled MADs from the workers,
// command records from API threads) plus the eventfd an idle shard sleeps on.
//
// Thread contract, as in the names:
//   enqueue_burst / enqueue   any thread, concurrently (multi-producer); never block, never syscall
//                             unless the consumer is asleep (armed).
//   dequeue_burst / arm / disarm / wait_burst
//                             the shard's thread only (single consumer); one thread at a time.
//   capacity / event_fd       any thread.
//
// Idle protocol: the consumer spins briefly (yielding: measured on two shared cores, pure
// spinning collapses when a producer is preempted), then arm()s and, when arm() finds
// the ring still empty, sleeps on event_fd(): runtime/wakeup_fd.h's protocol, so only a producer
// that finds the consumer armed writes the eventfd and the hot path costs no syscall. wait_burst() runs the whole protocol; a shard
// that also waits on timers uses arm() / event_fd() / disarm() itself.
//
// Items are opaque pointers: the inbox never dereferences, owns or frees them. An item enqueued is
// owned by the inbox until dequeued; one "not enqueued" stays the producer's (the caller counts it
// and applies its overload policy). Items still inside at destruction are dropped unvisited: the
// owner drains the inbox before destroying it if they must be returned to a pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "runtime/owned_ring.h"
#include "runtime/wakeup_fd.h"

namespace fastcm::shards {

class ShardInbox {
 public:
  static constexpr std::uint32_t kMaxCapacity = std::uint32_t{1} << 24;

  // Room for exactly `capacity` items (1..kMaxCapacity); `shard` only names the ring. Allocates
  // here and never again. Throws std::invalid_argument for a capacity out of range,
  // std::system_error when the ring cannot be initialized or the eventfd cannot be created,
  // std::bad_alloc.
  ShardInbox(std::uint32_t capacity, std::uint32_t shard);
  ShardInbox(const ShardInbox&) = delete;
  ShardInbox& operator=(const ShardInbox&) = delete;

  // --- Producers: any thread, concurrently.

  // Enqueues the longest prefix of `items` that fits, in order, and returns its length:
  // items[result..] were NOT enqueued (inbox full) and remain the caller's. Never blocks on the
  // consumer; wakes it (one eventfd write) when it is armed and something was enqueued.
  [[nodiscard]] std::size_t enqueue_burst(std::span<void* const> items) noexcept;

  // One item: true when enqueued, false when the inbox is full (the item remains the caller's).
  [[nodiscard]] bool enqueue(void* item) noexcept { return enqueue_burst({&item, 1}) == 1; }

  // Enqueues every item, in order, yielding while the inbox is full. For items whose number is
  // bounded by something else (control items: endpoints and waiting callers), so that the consumer,
  // which drains without waiting on anyone, always makes room. Blocks: while the inbox is full.
  void enqueue_all(std::span<void* const> items) noexcept;

  // --- The consumer: the shard's thread only.

  // Moves up to out.size() items into out, in enqueue order per producer; returns how many.
  // 0 when empty. Does not sleep and does not touch the eventfd.
  [[nodiscard]] std::size_t dequeue_burst(std::span<void*> out) noexcept;

  // Clears a past wake-up, arms, and re-checks emptiness by dequeuing into out. 0: armed with the
  // inbox empty, so the caller may sleep until event_fd() is readable (any later enqueue makes it
  // readable). Otherwise: that many items were moved into out and the consumer is not armed; do
  // not sleep.
  [[nodiscard]] std::size_t arm(std::span<void*> out) noexcept;

  // Leaves the armed state after waking (or after deciding not to sleep for another reason, such
  // as a timer), so producers stop paying for wake-ups. Does not read the eventfd; arm() does.
  void disarm() noexcept { wake_.disarm(); }

  // The whole idle protocol: dequeue; if empty, retry up to `idle_spins` times with a yield
  // between tries, then arm() and, still empty, sleep in poll() on the eventfd for at most
  // `timeout_ms` (negative: no limit), then disarm and dequeue. Returns the items moved into out;
  // 0 when the timeout passed with nothing queued or a signal interrupted the sleep (EINTR).
  [[nodiscard]] std::size_t wait_burst(std::span<void*> out, unsigned idle_spins,
                                       int timeout_ms) noexcept;

  // --- Any thread.

  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  // Items queued now (a snapshot).
  [[nodiscard]] std::uint32_t size() const noexcept;
  // The most items seen queued at once (at dequeue_burst: the inbox is fullest just before it).
  [[nodiscard]] std::uint32_t high_water() const noexcept { return high_water_.load(std::memory_order_relaxed); }

  // Readable when an armed consumer has been signalled. For a shard multiplexing it with other fds
  // (poll/epoll); the inbox owns it.
  [[nodiscard]] int event_fd() const noexcept { return wake_.fd(); }

 private:
  std::uint32_t capacity_;
  // HTS on both sides; one consumer by contract (see the constructor for why not SC dequeue).
  runtime::OwnedRing ring_;
  runtime::WakeupFd wake_;  // the consumer's sleep: arm() / disarm(), producers notify()
  std::atomic<std::uint32_t> high_water_{0};  // the consumer's; see dequeue_burst
};

}  // namespace fastcm::shards
