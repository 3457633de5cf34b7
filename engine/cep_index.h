// A bounded hash index from a remote key (a 32-bit ID and the remote CA GUID) to endpoints,
// chained through a link member inside each Cep, so inserting and erasing never allocate.
// It serves duplicate REQs by (remote comm ID, remote CA GUID); stale connections by remote QPN
// cross shards and live in the engine's RemoteQpns instead.
// Thread contract: the owning shard's thread only.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>

#include "engine/cep.h"
#include "engine/cep_table.h"

namespace fastcm::engine {

struct RemoteKey {
  std::uint32_t id = 0;
  Guid ca_guid = 0;
  friend constexpr bool operator==(const RemoteKey&, const RemoteKey&) = default;
};

// KeyOf(const Cep&) -> RemoteKey; Link is the Cep member chaining the bucket; Flag marks membership.
template <RemoteKey (*KeyOf)(const Cep&), std::uint32_t Cep::*Link, bool Cep::*Flag>
class CepIndex {
 public:
  // One bucket per slot, rounded up to a power of two.
  explicit CepIndex(CepTable& table)
      : table_(table),
        mask_(std::bit_ceil(table.capacity() | 1u) - 1),
        buckets_(std::make_unique<std::uint32_t[]>(mask_ + 1)) {
    for (std::uint32_t i = 0; i <= mask_; ++i) buckets_[i] = kNoSlot;
  }

  // Adds `cep` under its current key; a no-op if it is already indexed.
  void insert(Cep& cep) noexcept {
    if (cep.*Flag) return;
    std::uint32_t& head = buckets_[bucket(KeyOf(cep))];
    cep.*Link = head;
    head = cep.slot;
    cep.*Flag = true;
  }

  // Removes `cep`; a no-op if it is not indexed. Must run before the key fields change.
  void erase(Cep& cep) noexcept {
    if (!(cep.*Flag)) return;
    for (std::uint32_t* at = &buckets_[bucket(KeyOf(cep))]; *at != kNoSlot; at = &(table_.at(*at).*Link)) {
      if (*at == cep.slot) {
        *at = cep.*Link;
        break;
      }
    }
    cep.*Link = kNoSlot;
    cep.*Flag = false;
  }

  // Starts loading the bucket find(key) and insert() will read: a random line of a table sized
  // for every endpoint, the one cache miss most REQs would otherwise wait for.
  void prefetch(RemoteKey key) const noexcept { __builtin_prefetch(&buckets_[bucket(key)]); }
  // The second step, once prefetch(key)'s line has had time to arrive: starts loading the link of
  // the first endpoint in the key's chain, and the key beside it (cep.h), which find(key) reads
  // next: another random line.
  void prefetch_chain(RemoteKey key) const noexcept {
    const std::uint32_t head = buckets_[bucket(key)];
    if (head != kNoSlot) __builtin_prefetch(&(table_.at(head).*Link));
  }

  [[nodiscard]] Cep* find(RemoteKey key) noexcept {
    for (std::uint32_t s = buckets_[bucket(key)]; s != kNoSlot; s = table_.at(s).*Link) {
      Cep& cep = table_.at(s);
      if (KeyOf(cep) == key) return &cep;
    }
    return nullptr;
  }

 private:
  [[nodiscard]] std::uint32_t bucket(RemoteKey k) const noexcept {
    // Fibonacci hashing of the mixed key: cheap and spreads sequential IDs and QPNs.
    const std::uint64_t mixed = (k.ca_guid ^ (std::uint64_t{k.id} << 17 | k.id)) * 0x9E3779B97F4A7C15ull;
    return static_cast<std::uint32_t>(mixed >> 32) & mask_;
  }

  CepTable& table_;
  std::uint32_t mask_;
  std::unique_ptr<std::uint32_t[]> buckets_;
};

inline RemoteKey remote_comm_key(const Cep& c) noexcept { return {c.remote_comm_id, c.remote_ca_guid}; }

using DuplicateReqIndex = CepIndex<remote_comm_key, &Cep::dup_next, &Cep::in_dup_index>;

}  // namespace fastcm::engine
