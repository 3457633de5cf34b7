// A shard's spare endpoints: idle endpoints the shard creates ahead of need (Protocol::create_spare)
// so that Engine::create_id from an application thread takes one without waiting for the shard
// (EngineConfig::posted_calls > 0, fastcm/engine.h). The shard keeps between kLow and kTarget of
// them; create_id takes one, hands it to the application (Protocol::adopt_spare) and returns.
//
// Bounds: kTarget per shard, from the engine's endpoint budget like any endpoint (they count
// toward max_endpoints; a full budget leaves the shard short, and create_id then asks the shard,
// which answers no_resources only once no spare is left either).
//
// Cells, not a DPDK ring: kTarget words, each an Id's raw value or 0 (empty; no Id is 0), beside
// the spare's slot in its table (published with the word). A take is one compare-and-swap of a
// full cell to empty, so no taker ever waits for another; the swap succeeds only if the cell still
// holds the Id whose slot the taker read (an Id is never made twice, so a cell taken and refilled
// meanwhile fails it). Every multi-consumer
// dequeue of rte_ring has a point where one consumer has claimed entries and not yet released
// them: classic MC and HTS make every later consumer spin until it does, so an application thread
// preempted there stalled every create_id on the shard for the rest of its time slice; RTS does
// not, but releases through a compare-and-swap chain whose ordering ThreadSanitizer reported as
// races (shard_inbox.cpp). A full scan of the cells (kTarget loads) bounds a take that finds none.
//
// Thread contract: top_up on the shard's thread only (the one producer); take and count from any
// thread, concurrently. Never blocks, never allocates after construction.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fastcm/id.h"
#include "fastcm/status.h"

namespace fastcm::shards {

class SpareEndpoints {
 public:
  static constexpr std::uint32_t kTarget = 256;
  static constexpr std::uint32_t kLow = kTarget * 3 / 4;  // top_up refills below this

  // A spare endpoint's Id and its slot in its shard's table (Protocol::create_spare).
  struct Spare {
    Id id;
    std::uint32_t slot = 0;
  };

  // Refills to kTarget once fewer than kLow are left, calling `make(Spare&)` (noexcept, returning a
  // Status: ok, or anything else when the endpoint budget is spent, which ends the refill) for each
  // new spare. The endpoint `make` sets up is published to its taker: the release store of its
  // cell pairs with take()'s acquiring exchange. Returns how many it made.
  template <typename Make>
  std::size_t top_up(Make&& make) noexcept {
    // Relaxed: only this thread adds, so the count is at least the full cells (a taker empties its
    // cell before it decrements), and at least kTarget - have cells are empty.
    std::uint32_t have = count_.load(std::memory_order_relaxed);
    if (have >= kLow) return 0;
    std::size_t made = 0;
    // From where the last refill stopped: takers take in cell order too, so the cells they
    // emptied since begin there.
    for (std::uint32_t i = 0, at = next_fill_; i < kTarget && have < kTarget; ++i, at = (at + 1) % kTarget) {
      std::atomic<std::uint64_t>& cell = cells_[at];
      // Relaxed: a 0 here was written by a taker's exchange, after which no taker touches the cell.
      if (cell.load(std::memory_order_relaxed) != 0) continue;
      Spare spare;
      if (make(spare) != Status::ok) break;  // the endpoint budget is spent
      // Relaxed: published by the cell's store below.
      slots_[at].store(spare.slot, std::memory_order_relaxed);
      cell.store(spare.id.raw, std::memory_order_release);  // acquire partner: take()'s load
      count_.fetch_add(1, std::memory_order_relaxed);
      next_fill_ = (at + 1) % kTarget;
      ++have;
      ++made;
    }
    return made;
  }

  // A spare endpoint, now the caller's alone; nullopt when none is left. Never blocks.
  [[nodiscard]] std::optional<Spare> take() noexcept;

  // Spares held (a snapshot: it may still count one a taker has just emptied).
  [[nodiscard]] std::uint32_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<std::uint64_t>, kTarget> cells_{};  // Id::raw, 0 when empty
  std::array<std::atomic<std::uint32_t>, kTarget> slots_{};  // each full cell's Spare::slot
  std::atomic<std::uint32_t> count_{0};
  // Where takers look first: the cell after the last one taken. Relaxed: only a hint.
  std::atomic<std::uint32_t> next_take_{0};
  std::uint32_t next_fill_ = 0;  // the shard's own
};

}  // namespace fastcm::shards
