// The engine-wide HalfOpenBudget (engine/half_open_budget.h): the half-open handshakes of every
// source and every listen, shared by all shards.
//
// Sources: a table of 32-bit words indexed by a keyed hash (SipHash-1-3) of the source (port index
// and LID, or port index and GID), each word [standing: 8 bits | handshakes: 24 bits]. The table
// stores no keys: two sources whose hashes meet share one word, so one budget, with probability
// 1 / source_slots per pair (the key is the engine's secret, so a sender cannot aim its hashes at
// another source's word); the budget holds either way, only fairness between the two suffers. So
// the table cannot fill, needs no eviction, and each operation is one compare-and-swap loop on one
// word. It lives in demand-zero memory: only the words of sources seen take memory.
// Listens: one 64-bit word per listen slot, [listen generation: 32 | handshakes: 32]; a word
// holding another generation belongs to an earlier listen of the slot, whose handshakes no longer
// count (its settle() finds the generation changed and is ignored), so the first admission of the
// new listen starts its count again.
//
// Thread contract: any thread (engine/half_open_budget.h); admit and settle are lock-free, and
// allocate nothing. Memory order: relaxed throughout: the words are counts, nothing is published
// through them, and each compare-and-swap acts on the word's latest value.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "engine/demand_zero_array.h"
#include "engine/half_open_budget.h"
#include "engine/sip_hash.h"

namespace fastcm::shards {

class HalfOpenTable final : public engine::HalfOpenBudget {
 public:
  static constexpr std::uint32_t kMaxPerSource = (std::uint32_t{1} << 24) - 1;
  // Unanswered handshakes in a row after which a source's REPs are sent once.
  static constexpr std::uint32_t kUnansweringAfter = 2;

  struct Limits {
    std::uint32_t per_source = 0;    // 1..kMaxPerSource
    std::uint32_t per_listen = 0;    // at least 1
    std::uint32_t listens = 0;       // listen slots (EngineConfig::max_listens)
    std::uint32_t source_slots = 0;  // a power of two
  };

  // Throws std::invalid_argument for limits out of range, std::bad_alloc.
  HalfOpenTable(const Limits& limits, const engine::SipKey& key);

  [[nodiscard]] Admission admit(const MadAddress& from, engine::BacklogRef listen) noexcept override;
  void settle(std::uint32_t source, engine::BacklogRef listen, Settled how) noexcept override;

  // The half-open handshakes counted for the source at `from`, and its unanswered ones in a row
  // (a snapshot, for tests and tools). Any thread.
  [[nodiscard]] std::uint32_t source_handshakes(const MadAddress& from) const noexcept;
  [[nodiscard]] std::uint32_t source_unanswered(const MadAddress& from) const noexcept;

 private:
  [[nodiscard]] std::uint32_t slot_of(const MadAddress& from) const noexcept;
  // The source word of `slot`. The array is only ever reached through these references; const
  // reads too (atomic_ref needs a non-const object, and loads change nothing).
  [[nodiscard]] std::atomic_ref<std::uint32_t> source_word(std::uint32_t slot) const noexcept {
    return std::atomic_ref<std::uint32_t>(const_cast<std::uint32_t&>(sources_[slot]));
  }
  // Counts one handshake against `listen`; false when it is at its bound.
  [[nodiscard]] bool take_listen(engine::BacklogRef listen) noexcept;
  void give_listen(engine::BacklogRef listen) noexcept;

  Limits limits_;
  engine::SipHasher hasher_;
  engine::DemandZeroArray<std::uint32_t> sources_;  // used through std::atomic_ref only
  std::unique_ptr<std::atomic<std::uint64_t>[]> listens_;
};

}  // namespace fastcm::shards
