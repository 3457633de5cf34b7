// Local communication IDs: the word [shard | slot | short generation], put through the engine's
// keyed permutation (cid_permutation.h).
//
// The shard bits let the receive path route any MAD that carries our ID to the owning shard
// without a lookup before the owning shard: decoding inverts the permutation and reads
// the fields. The short generation lets the owning shard tell a reused slot from the one a stale
// MAD names. The permutation, keyed per engine, makes every ID unpredictable from the others a
// peer has seen (neighbouring slots, or the same slot's previous generation), and IDs of a
// restarted engine unlikely to collide with those its peers still remember.
//
// No issued ID is 0: a word is never 0 (its generation field never is, cep_table.h) and the
// permutation maps non-zero words to non-zero IDs.
#pragma once

#include <bit>
#include <cstdint>

#include "engine/cid_permutation.h"

namespace fastcm::engine {

inline constexpr unsigned kCidGenerationBits = 8;

struct CidParts {
  std::uint32_t shard = 0;
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;  // the low kCidGenerationBits bits of the slot's generation
};

class CidLayout {
 public:
  // `shards` ≥ 1; the slot field takes every bit the shard field and the generation leave.
  CidLayout(std::uint32_t shards, const SipKey& key) noexcept
      : shard_bits_(shard_bits(shards)), permutation_(key) {}

  // Slots one shard of an engine with `shards` shards can name.
  [[nodiscard]] static constexpr std::uint32_t max_slots(std::uint32_t shards) noexcept {
    return std::uint32_t{1} << (32 - kCidGenerationBits - shard_bits(shards));
  }

  // The ID of `p`, whose generation field must not be 0 (then the ID is not 0 either).
  [[nodiscard]] std::uint32_t encode(CidParts p) const noexcept {
    const std::uint32_t shard_field = shard_bits_ == 0 ? 0 : p.shard << (32 - shard_bits_);
    return permutation_.encode(shard_field | (p.slot << kCidGenerationBits) | (p.generation & kGenerationMask));
  }
  // The fields of any 32-bit value: those it was encoded from, for an ID of this layout's engine;
  // arbitrary ones (a shard beyond the engine's, a slot never used) for any other value.
  [[nodiscard]] CidParts decode(std::uint32_t cid) const noexcept {
    const std::uint32_t word = permutation_.decode(cid);
    CidParts p;
    p.shard = shard_bits_ == 0 ? 0 : word >> (32 - shard_bits_);
    p.slot = (word >> kCidGenerationBits) & ((std::uint32_t{1} << (32 - kCidGenerationBits - shard_bits_)) - 1);
    p.generation = word & kGenerationMask;
    return p;
  }

 private:
  [[nodiscard]] static constexpr unsigned shard_bits(std::uint32_t shards) noexcept {
    return shards <= 1 ? 0u : static_cast<unsigned>(std::bit_width(shards - 1));
  }

  static constexpr std::uint32_t kGenerationMask = (1u << kCidGenerationBits) - 1;
  unsigned shard_bits_;
  CidPermutation permutation_;
};

}  // namespace fastcm::engine
