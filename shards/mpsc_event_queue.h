// The EventQueue of the sharded engine (event.h): events from every
// shard thread (many producers) to the application's polling thread (one consumer), by value in a
// bounded rte_ring, with an eventfd that is readable while events wait, for epoll loops. Each event
// travels with its endpoint's table slot (QueuedEvent), so that the consumer can check whether the
// endpoint is still attached without decoding the event's Id.
//
// Thread contract, as in the names:
//   push                     any thread, concurrently (the shards); never waits for the consumer
//                            and never allocates; may spin while another push is midway (HTS
//                            ring: pushes run one at a time); makes a syscall only when it turns
//                            the queue from unsignalled to signalled (one eventfd write per
//                            wake-up, not per event).
//   push_burst_unsignalled,  push in two steps, for a producer that pushes a burst and wakes the
//   signal                   consumer once after it (a shard's batch, event_bursts.h): the
//                            events wait unsignalled until the producer's signal().
//   pop                      one thread at a time (the application's polling thread): polls of
//                            one queue must not run concurrently. A caller that polls one queue
//                            from several threads serializes those polls itself.
//   full / size / level /    any thread; full, size and level are snapshots.
//   event_fd
//
// The eventfd: readable whenever the queue holds events and no push (of push_burst_unsignalled: no
// signal) or pop is midway (no lost wake-up). A pop that leaves the queue empty makes it
// unreadable again, unless a producer raced in, in which case it stays or becomes readable. A
// wake-up can be spurious: a pop may find nothing (events pushed before the eventfd write were
// taken by an earlier pop, or a producer's write landed after the pop that emptied the queue);
// that pop clears it. The queue reads the eventfd itself; the application must not (a read of its
// own would take the write a pop waits for, and the queue's wake-ups would stop): poll or epoll
// it only.
//
// Ownership: an event in the queue holds one reference on its MAD (taken by push, or handed over
// by its caller: MadHold); pop hands that reference to the caller with the event. Events still
// inside at destruction are dropped without releasing their MADs: the owner (the engine) pops and
// releases them before destroying the queue.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "engine/mad_buf.h"
#include "fastcm/counters.h"
#include "fastcm/event.h"
#include "fastcm/event_queue.h"
#include "runtime/owned_ring.h"

namespace fastcm::shards {

// One queued event and the slot of the endpoint it is about, in that endpoint's shard's table.
struct QueuedEvent {
  Event event;
  std::uint32_t slot = 0;
};

class MpscEventQueue final : public EventQueue {
 public:
  static constexpr std::uint32_t kMaxCapacity = std::uint32_t{1} << 20;

  // Room for exactly `capacity` events (1..kMaxCapacity). The ring's storage is the next power of
  // two above `capacity`, times sizeof(QueuedEvent) (232 bytes): allocated here and never again.
  // Throws std::invalid_argument for a capacity out of range, std::system_error when the ring
  // cannot be initialized or the eventfd cannot be created, std::bad_alloc.
  explicit MpscEventQueue(std::uint32_t capacity);
  // Closes the eventfd. Events still inside are dropped; their MAD references are not released.
  ~MpscEventQueue() override;

  // How a pushed event comes to hold its MAD reference.
  enum class MadHold {
    share,      // it takes a reference of its own; the caller keeps its reference
    hand_over,  // it takes the caller's reference, which the caller holds no more once the push
                // succeeded (a failed push leaves it with the caller)
  };

  // Any thread, concurrently. Appends a copy of `event`, which then holds one reference on `mad`
  // (normally the MAD that event.event.mad names; null for none), as `hold` says. Returns false
  // when the queue is full: nothing is appended and no reference is kept (the caller applies its
  // backpressure policy).
  [[nodiscard]] bool push(const QueuedEvent& event, engine::MadBuf* mad, MadHold hold = MadHold::share) noexcept;
  // The reference an event to be pushed with `hold` takes on `mad` (null: none): its own for
  // share, nothing for hand_over. Taken before the event can be visible, as the consumer may pop
  // and release it at once. (Relaxed, as engine::retain: the caller already holds a reference.)
  // Returns whether it took one.
  static bool take_reference(engine::MadBuf* mad, MadHold hold) noexcept {
    const bool share = mad != nullptr && hold == MadHold::share;
    if (share) engine::retain(*mad);
    return share;
  }
  // Several events in one ring operation, without the wake-up: queues the longest prefix of
  // `events` that fits and returns its length. Each event already holds its MAD reference
  // (take_reference); those of events[result..] stay the caller's. A consumer asleep on the
  // eventfd does not see the events until this thread calls signal(), which it must do before it
  // waits for anything or returns control.
  [[nodiscard]] std::size_t push_burst_unsignalled(std::span<const QueuedEvent> events) noexcept;
  // Makes sure the eventfd is (or is about to be) readable: the caller that claims the wake-up
  // writes the eventfd; everyone else finds it claimed and does nothing. Any thread.
  void signal() noexcept;

  // The single consumer. Moves up to out.size() events into `out`, oldest first (each producer's
  // events in its push order), each with its MAD reference, which the caller now owns; returns
  // how many. 0 when empty. Never blocks; reads the eventfd only when the queue was signalled and
  // this pop finds it empty.
  [[nodiscard]] std::size_t pop(std::span<QueuedEvent> out) noexcept;

  // Any thread; snapshots. full() is what the engine checks before it creates an endpoint whose
  // events could not be queued.
  [[nodiscard]] bool full() const noexcept { return size() == capacity_; }
  [[nodiscard]] std::size_t size() const noexcept override;
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  // Any thread: events waiting, the most that ever waited at once (those a pop found, or those
  // waiting now), and the capacity.
  [[nodiscard]] Level level() const noexcept {
    const std::uint64_t now = size();
    return Level{.now = now, .high_water = std::max<std::uint64_t>(now, high_water_.load(std::memory_order_relaxed)),
                 .limit = capacity_};
  }

  // Any thread. Owned by the queue: never close it.
  [[nodiscard]] int event_fd() const noexcept override { return event_fd_; }

 private:
  // The bit of wake_ (see signal() and settle_empty() for the protocol).
  enum : std::uint32_t { kClaimed = 1 };

  // Called by pop() when the ring was found empty: clears a wake-up whose write landed and
  // re-signals if a producer raced in.
  void settle_empty() noexcept;
  // Events in the ring: the consumer tail and then the producer tail, both atomic loads.
  [[nodiscard]] std::uint32_t count() const noexcept;

  std::uint32_t capacity_;
  runtime::OwnedRing ring_;  // HTS producers and consumer (see the constructor)
  int event_fd_ = -1;
  // The wake-up state since the consumer last cleared it: kClaimed once a pusher (or the consumer
  // re-signalling) took the job of writing the eventfd; 0 when the eventfd holds no wake-up and
  // none is coming. Written ONLY by read-modify-writes after construction: a plain store would end
  // the release sequences settle_empty() relies on. Its own cache line: every push
  // read-modify-writes it.
  alignas(64) std::atomic<std::uint32_t> wake_{0};
  // Written by the consumer alone (pop), read anywhere: a statistic that orders nothing, so relaxed
  // on both sides (no partner). Off the producers' cache line and path.
  alignas(64) std::atomic<std::uint32_t> high_water_{0};
};

}  // namespace fastcm::shards
