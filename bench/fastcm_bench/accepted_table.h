// The server role's record of the endpoints it accepted and has not destroyed yet, so that its
// teardown can destroy the connections its clients left open (a client that was killed, or one
// still running when the server is stopped).
//
// A slot holds an endpoint's Id (raw; 0 when free). The thread handling a REQ claims a free slot
// and makes it the endpoint's context (Engine::set_context), so the thread that destroys the
// endpoint later finds its slot in the event and frees it: no lookup, no lock, no allocation.
// Ids carry their generation, so a teardown that reads a slot just freed or reused destroys a
// stale Id, which the engine answers with Status::stale_id and nothing else.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "bench/fastcm_bench/thread_slot.h"
#include "fastcm/id.h"

namespace fastcm::bench {

class AcceptedTable {
 public:
  using Slot = std::atomic<std::uint64_t>;

  // `capacity`: slots; twice the endpoints that can be live keeps a claim's walk short.
  explicit AcceptedTable(std::uint32_t capacity)
      : capacity_(capacity),
        slots_(std::make_unique<Slot[]>(capacity)),
        cursors_(std::make_unique<Cursor[]>(kMaxThreadSlots)) {
    // Each thread starts its walks in a part of the table of its own.
    for (std::uint32_t t = 0; t < kMaxThreadSlots; ++t) {
      cursors_[t].next = static_cast<std::uint32_t>(std::uint64_t{capacity} * t / kMaxThreadSlots);
    }
  }

  // A free slot now holding `id`, or null when every slot is taken (then the endpoint is not
  // recorded). Walks from where the calling thread's last claim ended. Thread contract: any
  // thread; lock-free.
  [[nodiscard]] Slot* claim(Id id) noexcept {
    std::uint32_t& at = cursors_[thread_slot()].next;
    for (std::uint32_t n = 0; n < capacity_; ++n) {
      Slot& slot = slots_[at];
      at = at + 1 == capacity_ ? 0 : at + 1;
      std::uint64_t free = 0;
      // Relaxed: the slot publishes only its own value; see the header comment for stale reads.
      if (slot.compare_exchange_strong(free, id.raw, std::memory_order_relaxed)) return &slot;
    }
    return nullptr;
  }

  // Frees a slot claim() returned. Any thread.
  static void release(Slot& slot) noexcept { slot.store(0, std::memory_order_relaxed); }

  // Calls fn(Id) for every slot in use (a snapshot per slot). Any thread.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (std::uint32_t i = 0; i < capacity_; ++i) {
      if (const std::uint64_t raw = slots_[i].load(std::memory_order_relaxed); raw != 0) fn(Id{raw});
    }
  }

 private:
  struct alignas(64) Cursor {
    std::uint32_t next = 0;  // written by its thread only
  };
  std::uint32_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<Cursor[]> cursors_;
};

}  // namespace fastcm::bench
