// One shard's connection endpoints: a fixed array of CEP slots, a FIFO of free slots, and lookup
// by wire communication ID or by API Id with generation checks.
//
// Free slots are reused in FIFO order so a slot rests as long as possible between two owners: the
// CID's short generation then tells stale MADs from current ones over the longest window.
// Thread contract: the owning shard's thread only. Bounded: nothing allocates after construction.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/cep.h"
#include "engine/cid.h"
#include "fastcm/id.h"

namespace fastcm::engine {

class CepTable {
 public:
  // `capacity` ≤ layout.max_slots(). Allocates all slots at once.
  CepTable(std::uint32_t capacity, std::uint32_t shard, CidLayout layout)
      : ceps_(std::make_unique<Cep[]>(capacity)),
        free_fifo_(std::make_unique<std::uint32_t[]>(capacity)),
        capacity_(capacity),
        free_count_(capacity),
        shard_(shard),
        layout_(layout) {
    for (std::uint32_t i = 0; i < capacity; ++i) {
      ceps_[i].slot = i;
      ceps_[i].timer.slot = i;
      free_fifo_[i] = i;
    }
  }

  // A fresh idle endpoint with a new local comm ID, or null when every slot is taken.
  [[nodiscard]] Cep* allocate() noexcept {
    if (free_count_ == 0) return nullptr;
    const std::uint32_t slot = free_fifo_[free_head_];
    free_head_ = next(free_head_);
    --free_count_;
    Cep& cep = ceps_[slot];
    cep.live = true;
    cep.local_comm_id = layout_.encode({shard_, slot, cep.generation});
    return &cep;
  }

  // Returns the slot to the free FIFO and retires its generation: every Id and CID naming it goes
  // stale. The caller has already released the endpoint's MADs, timer and index entries.
  void free(Cep& cep) noexcept {
    const std::uint32_t slot = cep.slot;
    const std::uint32_t generation = next_generation(cep.generation);
    cep.~Cep();
    new (&cep) Cep{};
    cep.slot = slot;
    cep.timer.slot = slot;
    cep.generation = generation;
    free_fifo_[(free_head_ + free_count_) % capacity_] = slot;
    ++free_count_;
  }

  // The live endpoint a wire CID names, or null (another shard's CID, unknown slot, or a slot
  // whose generation moved on).
  [[nodiscard]] Cep* find_by_comm_id(std::uint32_t comm_id) noexcept {
    const CidParts parts = layout_.decode(comm_id);
    if (parts.shard != shard_ || parts.slot >= capacity_) return nullptr;
    Cep& cep = ceps_[parts.slot];
    return cep.live && cep.local_comm_id == comm_id ? &cep : nullptr;
  }

  [[nodiscard]] const Cep* find_by_comm_id(std::uint32_t comm_id) const noexcept {
    return const_cast<CepTable*>(this)->find_by_comm_id(comm_id);
  }

  // The live endpoint an API Id names, or null when the Id is stale.
  [[nodiscard]] Cep* find(Id id) noexcept {
    Cep* cep = find_by_comm_id(id.comm_id());
    return cep != nullptr && cep->generation == id.generation() ? cep : nullptr;
  }
  [[nodiscard]] const Cep* find(Id id) const noexcept { return const_cast<CepTable*>(this)->find(id); }

  [[nodiscard]] Cep& at(std::uint32_t slot) noexcept { return ceps_[slot]; }
  [[nodiscard]] static Id id_of(const Cep& cep) noexcept { return Id::make(cep.local_comm_id, cep.generation); }
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint32_t in_use() const noexcept { return capacity_ - free_count_; }

 private:
  [[nodiscard]] std::uint32_t next(std::uint32_t i) const noexcept { return i + 1 == capacity_ ? 0 : i + 1; }
  // Generations stay below 2^31 (the top bit tags listen Ids, see listen_table.h), and those whose
  // low CID bits are zero are skipped so that no CID of slot 0, shard 0 is 0.
  [[nodiscard]] static std::uint32_t next_generation(std::uint32_t g) noexcept {
    do {
      g = (g + 1) & 0x7FFF'FFFFu;
    } while ((g & ((1u << kCidGenerationBits) - 1)) == 0);
    return g;
  }

  std::unique_ptr<Cep[]> ceps_;
  std::unique_ptr<std::uint32_t[]> free_fifo_;
  std::uint32_t capacity_;
  std::uint32_t free_head_ = 0;
  std::uint32_t free_count_;
  std::uint32_t shard_;
  CidLayout layout_;
};

}  // namespace fastcm::engine
