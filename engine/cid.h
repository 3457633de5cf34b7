// Local communication IDs: [shard | secret], where the secret is the word [slot | short
// generation] put through the engine's keyed permutation (cid_permutation.h), over the bits the
// shard field leaves.
//
// The shard field is in the clear, so the receive path (and any API call) finds the owning shard
// of an ID with a shift: no decode before the owning shard, which then decodes the secret once to
// find its slot. Hiding it would protect nothing: a peer guessing a live ID on one shard has that
// shard's share of the endpoints in that shard's share of the ID space, the same odds as a guess
// over all of them. The shard is also the permutation's tweak: the same slot and generation on two
// shards give unrelated secrets, so an ID a peer holds says nothing of its neighbours on others.
// The short generation lets the owning shard tell a reused slot from the one a stale MAD names.
// The permutation, keyed per engine, makes every ID unpredictable from the others a peer has seen
// (neighbouring slots, or the same slot's previous generation), and IDs of a restarted engine
// unlikely to collide with those its peers still remember.
//
// No issued ID is 0: a secret word is never 0 (its generation field never is, cep_table.h) and
// the permutation maps non-zero words to non-zero ones.
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
  // `shards` 1..64 (the engine's kMaxShards); the slot field takes every bit the shard field and
  // the generation leave.
  CidLayout(std::uint32_t shards, const SipKey& key) noexcept
      : shard_bits_(shard_bits(shards)), permutation_(key, 32 - shard_bits_) {}

  // Slots one shard of an engine with `shards` shards can name.
  [[nodiscard]] static constexpr std::uint32_t max_slots(std::uint32_t shards) noexcept {
    return std::uint32_t{1} << (32 - kCidGenerationBits - shard_bits(shards));
  }

  // The ID of `p`, whose generation field must not be 0 (then the ID is not 0 either).
  [[nodiscard]] std::uint32_t encode(CidParts p) const noexcept {
    return shard_field(p.shard) |
           permutation_.encode(p.slot << kCidGenerationBits | (p.generation & kGenerationMask), p.shard);
  }
  // The shard an ID names: a shift, no decode. For any 32-bit value; may exceed the engine's shards
  // for a value that is not one of its IDs.
  [[nodiscard]] std::uint32_t shard_of(std::uint32_t cid) const noexcept {
    return shard_bits_ == 0 ? 0 : cid >> (32 - shard_bits_);
  }
  // The fields of any 32-bit value: those it was encoded from, for an ID of this layout's engine;
  // arbitrary ones (a shard beyond the engine's, a slot never used) for any other value.
  [[nodiscard]] CidParts decode(std::uint32_t cid) const noexcept {
    const std::uint32_t shard = shard_of(cid);  // below 2^shard_bits_ <= kMaxTweaks
    const std::uint32_t secret = permutation_.decode(cid & (~std::uint32_t{0} >> shard_bits_), shard);
    return CidParts{.shard = shard, .slot = secret >> kCidGenerationBits, .generation = secret & kGenerationMask};
  }

 private:
  [[nodiscard]] static constexpr unsigned shard_bits(std::uint32_t shards) noexcept {
    return shards <= 1 ? 0u : static_cast<unsigned>(std::bit_width(shards - 1));
  }
  [[nodiscard]] std::uint32_t shard_field(std::uint32_t shard) const noexcept {
    return shard_bits_ == 0 ? 0 : shard << (32 - shard_bits_);
  }

  static constexpr std::uint32_t kGenerationMask = (1u << kCidGenerationBits) - 1;
  unsigned shard_bits_;
  CidPermutation permutation_;
};

}  // namespace fastcm::engine
