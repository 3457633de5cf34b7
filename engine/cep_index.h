// A bounded hash index from a remote key (a 32-bit ID and the remote CA GUID) to endpoints,
// chained through a link member inside each Cep, so inserting and erasing never allocate.
// It serves duplicate REQs by (remote comm ID, remote CA GUID); stale connections by remote QPN
// cross shards and live in the engine's RemoteQpns instead.
// Thread contract: the owning shard's thread only.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "engine/cep.h"
#include "engine/cep_table.h"
#include "engine/demand_zero_array.h"

namespace fastcm::engine {

struct RemoteKey {
  std::uint32_t id = 0;
  Guid ca_guid = 0;
  friend constexpr bool operator==(const RemoteKey&, const RemoteKey&) = default;
};

// KeyOf(const Cep&) -> RemoteKey; Link is the Cep member chaining the bucket; Flag marks membership.
//
// Links are tagged: a bucket head and each endpoint's link hold not a bare slot but a word that
// describes the endpoint it points to, [last | tag | slot]: its slot, 7 bits of its key's hash
// and whether it ends the chain. A lookup reads an endpoint only when its tag matches or when it
// must pass it to reach the next one. A REQ (which looks for a duplicate that is almost never
// there) whose bucket holds one other endpoint then reads nothing but the bucket, where it used to
// read that endpoint's line: a cache miss of its own in a storm (on_req's costliest load).
template <RemoteKey (*KeyOf)(const Cep&), std::uint32_t Cep::*Link, bool Cep::*Flag>
class CepIndex {
 public:
  // One bucket per slot, rounded up to a power of two. `table` has at most kMaxSlots slots (so a
  // slot fits a link's slot field; CidLayout::max_slots is never more).
  // Throws std::bad_alloc.
  explicit CepIndex(CepTable& table)
      : table_(table),
        mask_(std::bit_ceil(table.capacity() | 1u) - 1),
        buckets_(std::size_t{mask_} + 1),
        written_(std::size_t{mask_} + 1) {}

  static constexpr std::uint32_t kMaxSlots = std::uint32_t{1} << 24;

  // Adds `cep` under its current key; a no-op if it is already indexed.
  void insert(Cep& cep) noexcept {
    if (cep.*Flag) return;
    const RemoteKey key = KeyOf(cep);
    const std::uint32_t b = bucket(key);
    cep.*Link = head(b);
    buckets_[b] = link_to(cep.slot, tag(key), cep.*Link == kNoLink);
    written_.mark(b);
    cep.*Flag = true;
  }

  // Removes `cep`; a no-op if it is not indexed. Must run before the key fields change.
  void erase(Cep& cep) noexcept {
    if (!(cep.*Flag)) return;
    std::uint32_t* before = nullptr;  // the link to the endpoint before `at`'s, if any
    for (std::uint32_t* at = &buckets_[bucket(KeyOf(cep))]; *at != kNoLink; at = &(table_.at(slot_of(*at)).*Link)) {
      if (slot_of(*at) == cep.slot) {
        *at = cep.*Link;
        if (*at == kNoLink && before != nullptr) *before |= kLast;  // the one before ends the chain now
        break;
      }
      before = at;
    }
    cep.*Link = kNoLink;
    cep.*Flag = false;
  }

  // Starts loading the bucket find(key) and insert() will read: a random line of a table sized
  // for every endpoint, the one cache miss most REQs would otherwise wait for.
  // A prefetch never faults: it maps no zero page under a bucket never written (see written_).
  void prefetch(RemoteKey key) const noexcept { __builtin_prefetch(&buckets_[bucket(key)]); }
  // The second step, once prefetch(key)'s line has had time to arrive: starts loading the key and
  // link of the first endpoint in the key's chain (cep.h keeps them on one line), if find(key)
  // will read them.
  void prefetch_chain(RemoteKey key) const noexcept {
    const std::uint32_t first = head(bucket(key));
    if (first != kNoLink && !passes_by(first, tag(key))) __builtin_prefetch(&(table_.at(slot_of(first)).*Link));
  }

  [[nodiscard]] Cep* find(RemoteKey key) noexcept {
    const std::uint32_t wanted = tag(key);
    for (std::uint32_t link = head(bucket(key)); link != kNoLink && !passes_by(link, wanted);) {
      Cep& cep = table_.at(slot_of(link));
      if (tag_of(link) == wanted && KeyOf(cep) == key) return &cep;
      link = cep.*Link;
    }
    return nullptr;
  }

 private:
  static constexpr std::uint32_t kSlotMask = kMaxSlots - 1;
  static constexpr std::uint32_t kLast = std::uint32_t{1} << 31;
  static constexpr unsigned kTagShift = 24;

  // Tags are 1..127, so that no link is kNoLink (0).
  [[nodiscard]] static std::uint32_t link_to(std::uint32_t slot, std::uint32_t tag, bool last) noexcept {
    return (last ? kLast : 0) | tag << kTagShift | slot;
  }
  [[nodiscard]] static std::uint32_t slot_of(std::uint32_t link) noexcept { return link & kSlotMask; }
  [[nodiscard]] static std::uint32_t tag_of(std::uint32_t link) noexcept { return (link & ~kLast) >> kTagShift; }
  // Whether a lookup for a key tagged `wanted` is done at `link` without reading its endpoint: the
  // endpoint is the chain's last and its tag differs.
  [[nodiscard]] static bool passes_by(std::uint32_t link, std::uint32_t wanted) noexcept {
    return (link & kLast) != 0 && tag_of(link) != wanted;
  }

  // Bucket b's first link; kNoLink, without reading it, while its block was never written.
  [[nodiscard]] std::uint32_t head(std::uint32_t b) const noexcept {
    return written_.written(b) ? buckets_[b] : kNoLink;
  }

  [[nodiscard]] static std::uint64_t mixed(RemoteKey k) noexcept {
    // Fibonacci hashing of the mixed key: cheap and spreads sequential IDs and QPNs.
    return (k.ca_guid ^ (std::uint64_t{k.id} << 17 | k.id)) * 0x9E3779B97F4A7C15ull;
  }
  // The bucket from the product's high word, the tag from the 7 bits below it.
  [[nodiscard]] std::uint32_t bucket(RemoteKey k) const noexcept {
    return static_cast<std::uint32_t>(mixed(k) >> 32) & mask_;
  }
  [[nodiscard]] static std::uint32_t tag(RemoteKey k) noexcept {
    const auto t = static_cast<std::uint32_t>(mixed(k) >> 25) & 0x7F;
    return t == 0 ? 1 : t;
  }

  CepTable& table_;
  std::uint32_t mask_;
  DemandZeroArray<std::uint32_t> buckets_;  // kNoLink (0) until used: pages are mapped as buckets fill
  WrittenBlocks<std::uint32_t> written_;     // read a bucket only once its block was written
};

inline RemoteKey remote_comm_key(const Cep& c) noexcept { return {c.remote_comm_id, c.remote_ca_guid}; }

using DuplicateReqIndex = CepIndex<remote_comm_key, &Cep::dup_next, &Cep::in_dup_index>;

}  // namespace fastcm::engine
