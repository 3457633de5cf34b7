// One shard's connection endpoints: a fixed array of CEP slots, a FIFO of free slots, and lookup
// by wire communication ID or by API Id with generation checks.
//
// Slots are handed out in FIFO order so a slot rests as long as possible between two owners: the
// CID's short generation then tells stale MADs from current ones over the longest window. Never-used
// slots come first (they have rested longest), in index order, then freed slots in the order they
// were freed. Never-used slots are constructed on first use, in memory the kernel maps on first
// touch (demand_zero_array.h): the table's resident size follows its high-water mark, not its
// capacity, which is sized with slack for uneven hashing across shards.
// Thread contract: the owning shard's thread only, except the attachment words (attached,
// try_detach), which any thread may read and claim. Bounded: nothing allocates after construction.
//
// Hints: finding a slot from a CID is a decode, six SipHash rounds (cid_permutation.h), which
// alone was about a quarter of the instructions a connection's MADs cost. Most lookups name an
// endpoint issued or found moments ago (a REP names the REQ's endpoint, an API call the Id just
// created), so a small direct-mapped table keeps, at the CID's low bits (uniform: the permutation
// makes them so), the slot of the endpoint last issued or found there. A hint is only a guess: it
// counts when that slot holds a live endpoint with exactly that CID, the one endpoint the CID can
// name; otherwise the lookup decodes. A peer's MAD cannot make a wrong hint count, only miss.
//
// Attachment: each slot has one atomic word holding the slot's generation while the application
// holds the endpoint, 0 otherwise. It is the one fact about an endpoint other threads need:
// destroy() from any thread claims it with a compare-and-swap (so exactly one destroy wins), and
// the shard reads it before starting each callback (so none starts after destroy returned).
// A claim made on another thread leaves `generation | kDetachPending` until the shard has handled
// it (complete_remote_detach): until then the slot is not reused, even if the endpoint is freed
// meanwhile, so the claimant's request can name the slot without a generation race. While a
// callback of the endpoint runs, the shard holds kInCallback in the word: a callback starts only
// by a compare-and-swap from the bare generation, so once a destroy's claim is in, none starts.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>

#include "engine/cep.h"
#include "engine/cid.h"
#include "engine/demand_zero_array.h"
#include "fastcm/id.h"

namespace fastcm::engine {

class CepTable {
 public:
  // `capacity` ≤ CidLayout::max_slots(shards). Reserves address space for every slot; throws std::bad_alloc
  // when it cannot.
  CepTable(std::uint32_t capacity, std::uint32_t shard, CidLayout layout)
      : slots_(capacity),
        alternates_(capacity),
        free_fifo_(capacity),
        attached_(capacity),
        hints_(hint_count(capacity)),
        capacity_(capacity),
        shard_(shard),
        layout_(layout) {}

  ~CepTable() {
    for (std::uint32_t s = 0; s < constructed_; ++s) at(s).~Cep();
  }
  CepTable(const CepTable&) = delete;
  CepTable& operator=(const CepTable&) = delete;

  // A fresh idle endpoint with a new local comm ID, or null when every slot is taken.
  [[nodiscard]] Cep* allocate() noexcept {
    std::uint32_t slot;
    if (constructed_ < capacity_) {
      slot = constructed_++;
      if (slot == populated_) {
        populated_ = std::min(capacity_, slot + kPopulateSlots);
        (void)slots_.populate(slot, populated_ - slot);
      }
      Cep* fresh = new (&slots_[slot]) Cep{};
      fresh->slot = slot;
      fresh->timer.slot = slot;
    } else if (free_count_ != 0) {
      slot = free_fifo_[free_head_];
      free_head_ = next(free_head_);
      --free_count_;
    } else {
      return nullptr;
    }
    Cep& cep = at(slot);
    cep.live = true;
    cep.local_comm_id = layout_.encode({shard_, slot, cep.generation});
    hints_[hint_index(cep.local_comm_id)] = slot;
    return &cep;
  }

  // Returns the slot to the free FIFO and retires its generation: every Id and CID naming it goes
  // stale. The caller has already released the endpoint's MADs, timer and index entries.
  void free(Cep& cep) noexcept {
    const std::uint32_t slot = cep.slot;
    // A slot whose remote detach is still on its way stays out of the free FIFO (parked) until
    // complete_remote_detach(); otherwise the word is already 0 or becomes 0 here.
    const bool park = (word(slot).load(std::memory_order_acquire) & kDetachPending) != 0;
    if (!park) word(slot).store(0, std::memory_order_relaxed);
    const std::uint32_t generation = next_generation(cep.generation);
    cep.~Cep();
    new (&cep) Cep{};
    cep.slot = slot;
    cep.timer.slot = slot;
    cep.generation = generation;
    cep.parked = park;
    if (!park) push_free(slot);
  }

  // The live endpoint a wire CID names, or null (another shard's CID, unknown slot, or a slot
  // whose generation moved on).
  [[nodiscard]] Cep* find_by_comm_id(std::uint32_t comm_id) noexcept {
    if (Cep* hinted = live_at(hints_[hint_index(comm_id)], comm_id)) return hinted;
    const CidParts parts = layout_.decode(comm_id);
    Cep* cep = parts.shard == shard_ ? live_at(parts.slot, comm_id) : nullptr;
    if (cep != nullptr) hints_[hint_index(comm_id)] = parts.slot;
    return cep;
  }

  [[nodiscard]] const Cep* find_by_comm_id(std::uint32_t comm_id) const noexcept {
    return const_cast<CepTable*>(this)->find_by_comm_id(comm_id);
  }
  // Starts loading every cache line of the endpoint the hint for `comm_id` names (a handler reads
  // its identity, state, MADs and timer, lines apart), so that find_by_comm_id and the handler a
  // few MADs later do not wait for memory. A guess, as the hint is: it may load another endpoint,
  // never changes anything. The owning shard's thread.
  void prefetch(std::uint32_t comm_id) const noexcept {
    const std::uint32_t slot = hints_[hint_index(comm_id)];
    if (slot >= constructed_) return;
    constexpr std::uintptr_t kLine = 64;
    const auto first = reinterpret_cast<std::uintptr_t>(&slots_[slot]);
    for (std::uintptr_t line = first & ~(kLine - 1); line < first + sizeof(Cep); line += kLine) {
      __builtin_prefetch(reinterpret_cast<const void*>(line));
    }
  }

  // The slot an API Id names on this table, or nullopt for another shard's Id or a slot beyond
  // the table (a decode: where the caller already holds the slot, it passes it instead). Any
  // thread.
  [[nodiscard]] std::optional<std::uint32_t> slot_of(Id id) const noexcept {
    const CidParts parts = layout_.decode(id.comm_id());
    if (parts.shard != shard_ || parts.slot >= capacity_) return std::nullopt;
    return parts.slot;
  }
  // slot_of(id) on the owning shard's thread: the same answer, through the hint when `id` names
  // a live endpoint issued or found lately.
  [[nodiscard]] std::optional<std::uint32_t> own_slot_of(Id id) const noexcept {
    const std::uint32_t hinted = hints_[hint_index(id.comm_id())];
    if (holds(hinted, id.comm_id())) return hinted;
    return slot_of(id);
  }
  // The live endpoint an API Id names, or null when the Id is stale.
  [[nodiscard]] Cep* find(Id id) noexcept {
    const std::optional<std::uint32_t> slot = own_slot_of(id);
    return slot ? find(id, *slot) : nullptr;
  }
  [[nodiscard]] const Cep* find(Id id) const noexcept { return const_cast<CepTable*>(this)->find(id); }
  // find(id) where `slot` is already known to be slot_of(id).
  [[nodiscard]] Cep* find(Id id, std::uint32_t slot) noexcept {
    Cep* cep = live_at(slot, id.comm_id());
    return cep != nullptr && cep->generation == id.generation() ? cep : nullptr;
  }

  // ---- attachment ------------------------------------------------------------------------------
  // Hands the endpoint to the application. The owning shard's thread.
  void attach(const Cep& cep) noexcept {
    // Release: pairs with the acquire loads in attached() and try_detach() of other threads, which
    // then see the endpoint as fully set up by the shard.
    word(cep.slot).store(cep.generation, std::memory_order_release);
  }
  // Whether the application still holds the endpoint. The owning shard's thread.
  [[nodiscard]] bool attached(const Cep& cep) const noexcept {
    // Acquire: pairs with a claim's CAS on another thread.
    return (word(cep.slot).load(std::memory_order_acquire) & ~kInCallback) == cep.generation;
  }
  // Whether `id` names an endpoint the application still holds. Any thread; a snapshot.
  [[nodiscard]] bool attached(Id id) const noexcept {
    const std::optional<std::uint32_t> slot = slot_of(id);
    return slot && attached(id, *slot);
  }
  // attached(id) where `slot` is already known to be slot_of(id): no decode. Any thread.
  [[nodiscard]] bool attached(Id id, std::uint32_t slot) const noexcept {
    return id.generation() != 0 &&
           (word(slot).load(std::memory_order_acquire) & ~kInCallback) == id.generation();  // pairs: attach()
  }
  // Whether `cep` is attached, or was detached by a destroy from another thread that the shard has
  // not handled yet (try_detach_remote). The owning shard's thread.
  [[nodiscard]] bool attached_or_detaching(const Cep& cep) const noexcept {
    // Acquire: pairs with a claim's CAS on another thread.
    const std::uint32_t seen = word(cep.slot).load(std::memory_order_acquire) & ~kInCallback;
    return (seen & ~kDetachPending) == cep.generation;
  }
  // Starts a callback of the attached endpoint: false, starting nothing, once it was detached. The
  // owning shard's thread; not nested for one endpoint (the caller tracks its own nesting).
  [[nodiscard]] bool enter_callback(const Cep& cep) noexcept {
    std::uint32_t expected = cep.generation;
    // acq_rel: ordered with every claim in the word's modification order; a claim that came first
    // makes this fail, one that comes later sees kInCallback and keeps it.
    return word(cep.slot).compare_exchange_strong(expected, cep.generation | kInCallback,
                                                  std::memory_order_acq_rel);
  }
  // Ends the callback started by enter_callback on `slot` (whatever became of the endpoint since).
  void leave_callback(std::uint32_t slot) noexcept {
    // Release: the callback's effects before any claim that follows (partner: claim's acq_rel).
    word(slot).fetch_and(~kInCallback, std::memory_order_release);
  }
  // Takes the endpoint from the application and returns it, for exactly one caller per attach;
  // null for the others and when `id` is not attached. The endpoint stays live (its protocol side
  // is finished by the caller). The owning shard's thread.
  [[nodiscard]] Cep* try_detach(Id id) noexcept {
    const std::optional<std::uint32_t> slot = own_slot_of(id);
    return slot ? try_detach(id, *slot) : nullptr;
  }
  // try_detach(id) where `slot` is already known to be slot_of(id).
  [[nodiscard]] Cep* try_detach(Id id, std::uint32_t slot) noexcept {
    return claim(id, slot, 0) ? &at(slot) : nullptr;  // attached, so live with that Id
  }

  // try_detach from any other thread: the claim stays pending (the slot is not reused) until the
  // shard calls complete_remote_detach(slot, id.generation()). Returns the endpoint's slot (for the caller's own
  // per-slot records: the endpoint itself is the shard's), nullopt when `id` is not attached.
  // Any thread.
  [[nodiscard]] std::optional<std::uint32_t> try_detach_remote(Id id) noexcept {
    const std::optional<std::uint32_t> slot = slot_of(id);
    if (!slot || !claim(id, *slot, id.generation() | kDetachPending)) return std::nullopt;
    return slot;
  }

  // The shard's side of a remote detach, given the slot try_detach_remote returned and the
  // detached Id's generation: ends the pending claim (returning a parked slot to the free FIFO)
  // and returns the endpoint if it is still live, else null. The owning shard's thread.
  Cep* complete_remote_detach(std::uint32_t slot, std::uint32_t generation) noexcept {
    word(slot).store(0, std::memory_order_relaxed);  // only the shard writes a pending word
    // A pending claim kept the slot from reuse, so a live endpoint there of that generation is
    // the detached one.
    Cep& cep = at(slot);
    Cep* detached = cep.live && cep.generation == generation ? &cep : nullptr;
    if (cep.parked) {
      cep.parked = false;
      push_free(slot);
    }
    return detached;
  }

  // The alternate paths of `cep`, a live endpoint of this table, made (as AlternatePaths{}) on the
  // first call in the endpoint's life: memory only endpoints that use them touch.
  [[nodiscard]] AlternatePaths& alternates(Cep& cep) noexcept {
    if (!cep.alternates_made) {
      new (&alternates_[cep.slot]) AlternatePaths{};
      cep.alternates_made = true;
    }
    return *std::launder(reinterpret_cast<AlternatePaths*>(&alternates_[cep.slot]));
  }
  // Read-only: an endpoint that never made them reads AlternatePaths{}.
  [[nodiscard]] const AlternatePaths& alternates(const Cep& cep) const noexcept {
    static constexpr AlternatePaths kNone{};
    return cep.alternates_made ? *std::launder(reinterpret_cast<const AlternatePaths*>(&alternates_[cep.slot])) : kNone;
  }

  // A slot handed out at least once (slot < high_water()).
  [[nodiscard]] Cep& at(std::uint32_t slot) noexcept { return *std::launder(reinterpret_cast<Cep*>(&slots_[slot])); }
  [[nodiscard]] const Cep& at(std::uint32_t slot) const noexcept {
    return *std::launder(reinterpret_cast<const Cep*>(&slots_[slot]));
  }
  // Slots [0, high_water()) have been handed out at least once; the others were never touched.
  [[nodiscard]] std::uint32_t high_water() const noexcept { return constructed_; }
  [[nodiscard]] static Id id_of(const Cep& cep) noexcept { return Id::make(cep.local_comm_id, cep.generation); }
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint32_t in_use() const noexcept { return constructed_ - free_count_; }

 private:
  // Never-used slots are mapped this many at a time (80 KiB), one system call instead of a page
  // fault per page: a 1M storm went from 936k to 1,014k connections per second, the faults' entries
  // and exits no longer among its costs. Still inside the storm's window, by the shard that needs
  // the slots, and at most one chunk ahead of them.
  static constexpr std::uint32_t kPopulateSlots = 256;
  static constexpr std::uint32_t kDetachPending = 1u << 31;  // generations stay below 2^30
  static constexpr std::uint32_t kInCallback = 1u << 30;

  // Moves the word of `slot` (slot_of(id)) from `id`'s generation (a callback may be running) to
  // `claimed`, keeping kInCallback; false when `id` is not attached.
  [[nodiscard]] bool claim(Id id, std::uint32_t slot, std::uint32_t claimed) noexcept {
    if (id.generation() == 0) return false;
    std::atomic_ref<std::uint32_t> word = this->word(slot);
    std::uint32_t seen = word.load(std::memory_order_acquire);  // pairs: attach(), leave_callback()
    do {
      if ((seen & ~kInCallback) != id.generation()) return false;
      // acq_rel: acquires attach()'s release (the endpoint's setup) and releases this claim to the
      // shard's enter_callback() and attached() loads.
    } while (!word.compare_exchange_weak(seen, (seen & kInCallback) | claimed, std::memory_order_acq_rel,
                                         std::memory_order_acquire));
    return true;
  }
  // Whether `slot` holds the live endpoint whose wire ID is `comm_id`. The owning shard's thread.
  [[nodiscard]] bool holds(std::uint32_t slot, std::uint32_t comm_id) const noexcept {
    if (slot >= constructed_) return false;
    const Cep& cep = at(slot);
    return cep.live && cep.local_comm_id == comm_id;
  }
  // The live endpoint in `slot` whose wire ID is `comm_id`, or null. The owning shard's thread.
  [[nodiscard]] Cep* live_at(std::uint32_t slot, std::uint32_t comm_id) noexcept {
    return holds(slot, comm_id) ? &at(slot) : nullptr;
  }
  // Four hints per slot, at most 16384 (64 KiB, demand-zero). Direct-mapped, a hint is lost to any
  // endpoint issued or found later at the same low bits, so where n endpoints were issued between
  // an endpoint's and a lookup of it (a storm's window: about 1,024), about 1 - e^(-n/hints) of
  // the lookups decode: 22 % with 4096 hints, 6 % with 16384. A power of two, so the CID's low
  // bits index them.
  [[nodiscard]] static std::uint32_t hint_count(std::uint32_t capacity) noexcept {
    return static_cast<std::uint32_t>(std::bit_ceil(std::clamp<std::uint64_t>(std::uint64_t{capacity} * 4, 1, 16384)));
  }
  [[nodiscard]] std::size_t hint_index(std::uint32_t comm_id) const noexcept { return comm_id & (hints_.size() - 1); }
  void push_free(std::uint32_t slot) noexcept {
    free_fifo_[(free_head_ + free_count_) % capacity_] = slot;
    ++free_count_;
  }
  [[nodiscard]] std::uint32_t next(std::uint32_t i) const noexcept { return i + 1 == capacity_ ? 0 : i + 1; }
  // Generations stay below 2^30 (the top bits are the attachment word's flags, and the very top
  // one tags listen Ids, see listens.h), and those whose low CID bits are zero are skipped so that
  // no CID word is 0 (the permutation then keeps every CID non-zero, cid_permutation.h).
  [[nodiscard]] static std::uint32_t next_generation(std::uint32_t g) noexcept {
    do {
      g = (g + 1) & (kInCallback - 1);
    } while ((g & ((1u << kCidGenerationBits) - 1)) == 0);
    return g;
  }

  // Per slot: the generation while attached, else 0 (so a never-used slot reads as detached). Only
  // ever accessed atomically, through word().
  [[nodiscard]] std::atomic_ref<std::uint32_t> word(std::uint32_t slot) const noexcept {
    return std::atomic_ref<std::uint32_t>(attached_[slot]);
  }

  struct CepStorage {
    alignas(Cep) std::byte bytes[sizeof(Cep)];
  };
  DemandZeroArray<CepStorage> slots_;
  struct AlternatePathsStorage {
    alignas(AlternatePaths) std::byte bytes[sizeof(AlternatePaths)];
  };
  DemandZeroArray<AlternatePathsStorage> alternates_;  // per slot, made by alternates()
  DemandZeroArray<std::uint32_t> free_fifo_;  // freed slots, a ring of free_count_ from free_head_
  mutable DemandZeroArray<std::uint32_t> attached_;
  DemandZeroArray<std::uint32_t> hints_;  // slots, at CIDs' low bits (see Hints above)
  std::uint32_t capacity_;
  std::uint32_t constructed_ = 0;  // slots [0, constructed_) hold a Cep
  std::uint32_t populated_ = 0;    // slots [0, populated_) are mapped (populate())
  std::uint32_t free_head_ = 0;
  std::uint32_t free_count_ = 0;
  std::uint32_t shard_;
  CidLayout layout_;
};

}  // namespace fastcm::engine
