// The events a shard's burst emits for poll delivery, held per event queue and queued when the
// burst ends: one ring operation and at most one wake-up per queue per burst, not one per event.
// Each push to an MpscEventQueue is a compare-and-swap on the ring head its consumer reads, a cache
// miss on both cores per event (pushing one at a time was 4 % of the shards' CPU in poll mode); a
// poll-mode consumer also wakes to the burst's events together.
//
// Room: the first event of a burst for a queue reads the queue's free room; the burst then takes
// from that snapshot, and push() refuses (as a full queue's push does) once it is used up. Other
// producers may fill the queue before the flush: the events that no longer fit are handed to the
// refusal handler then, each with its MAD reference and its endpoint's port, which releases and
// counts them (the Protocol counted them as queued).
//
// Bounds: kMaxQueues queues per burst of kPerQueue events each (58 KiB of QueuedEvents); a queue
// beyond kMaxQueues is pushed to and woken at once, a queue's kPerQueue + 1-th event first queues
// the kPerQueue held (unsignalled, the wake-up still waits for the flush).
//
// Thread contract: the shard's thread only (the worker, or the caller driving the engine). Never
// blocks, never allocates after construction.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "engine/mad_buf.h"
#include "shards/mpsc_event_queue.h"

namespace fastcm::shards {

class EventBursts {
 public:
  static constexpr std::size_t kMaxQueues = 8;
  static constexpr std::size_t kPerQueue = 32;

  // Called for each held event its queue had no room for at the flush: `mad` (may be null) is the
  // event's reference, which the handler now owns; `port_index` is what push() was given.
  using RefusedFn = void (*)(void* ctx, engine::MadBuf* mad, std::uint16_t port_index) noexcept;

  EventBursts(RefusedFn on_refused, void* ctx) noexcept : on_refused_(on_refused), ctx_(ctx) {}
  EventBursts(const EventBursts&) = delete;
  EventBursts& operator=(const EventBursts&) = delete;

  // Holds `event` for `queue` until flush(), with a reference on `mad` as `hold` says
  // (MpscEventQueue::push). False when the queue's room is used up: nothing held, no reference
  // taken (a hand_over reference stays the caller's).
  [[nodiscard]] bool push(MpscEventQueue& queue, const QueuedEvent& event, engine::MadBuf* mad,
                          MpscEventQueue::MadHold hold, std::uint16_t port_index) noexcept;
  // Whether push() to `queue` would refuse now.
  [[nodiscard]] bool full(const MpscEventQueue& queue) const noexcept;
  // Queues every held event and wakes each queue pushed to since the last flush.
  void flush() noexcept;

 private:
  struct Burst {
    MpscEventQueue* queue = nullptr;
    std::uint32_t room = 0;  // events the queue may still take, as this burst counts them
    std::uint32_t held = 0;
    std::array<QueuedEvent, kPerQueue> events;  // contiguous: queued in one ring operation
    std::array<engine::MadBuf*, kPerQueue> mads;
    std::array<std::uint16_t, kPerQueue> ports;
  };

  // The burst holding events for `queue`, or count_ when none does.
  [[nodiscard]] std::size_t index_of(const MpscEventQueue& queue) const noexcept;
  // Queues what `burst` holds; hands what did not fit to the refusal handler.
  void queue_held(Burst& burst) noexcept;

  RefusedFn on_refused_;
  void* ctx_;
  std::array<Burst, kMaxQueues> bursts_;
  std::size_t count_ = 0;
};

}  // namespace fastcm::shards
