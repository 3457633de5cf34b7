// A keyed pseudo-random permutation of the non-zero 32-bit words: what turns a comm ID's fields
// ([shard | slot | generation], cid.h) into the ID put on the wire, and back.
//
// A balanced Feistel network of kRounds rounds over the two 16-bit halves, the round function
// SipHash-1-3 of (round, half) under the engine's key: with a pseudo-random round function, four
// rounds already make a strong pseudo-random permutation (Luby and Rackoff); the extra rounds are
// margin for the small 16-bit halves, against which attacks need fewer pairs. A peer that sees
// any number of IDs learns nothing of the others', nor of the next one a slot will get.
//
// Zero is kept out of the range: a REJ whose local comm ID is 0 comes from a CM that made no
// endpoint for the REQ it rejects, so no word the engine encodes may come out as 0. The Feistel output P is patched into
// Q(x) = P(x), except Q(x0) = P(0) for the one x0 with P(x0) = 0; Q maps every non-zero word to a
// non-zero one and stays a bijection on them. (Words are never 0 on input: cid.h.)
// Thread contract: immutable after construction; any thread.
#pragma once

#include <cstdint>

#include "engine/sip_hash.h"

namespace fastcm::engine {

class CidPermutation {
 public:
  static constexpr int kRounds = 6;

  explicit CidPermutation(const SipKey& key) noexcept
      : key_(key), zero_image_(feistel(0)), zero_preimage_(feistel_inverse(0)) {}

  // The non-zero image of a non-zero `word` (0 maps to an arbitrary non-zero word).
  [[nodiscard]] std::uint32_t encode(std::uint32_t word) const noexcept {
    const std::uint32_t out = feistel(word);
    return out == 0 ? zero_image_ : out;
  }
  // The inverse of encode for every non-zero `cid`; 0, which encode never returns, decodes to the
  // same word as encode(0) does (a lookup compares the whole ID, so nothing matches it).
  [[nodiscard]] std::uint32_t decode(std::uint32_t cid) const noexcept {
    const std::uint32_t word = feistel_inverse(cid);
    return word == 0 ? zero_preimage_ : word;
  }

 private:
  [[nodiscard]] std::uint32_t round_function(int round, std::uint32_t half) const noexcept {
    // The message is 3 bytes: the half (2), the round number (1).
    return static_cast<std::uint32_t>(
        sip_hash<1, 3>(key_, std::uint64_t{static_cast<std::uint32_t>(round)} << 16 | half, 3) & 0xFFFF);
  }
  [[nodiscard]] std::uint32_t feistel(std::uint32_t word) const noexcept {
    std::uint32_t left = word >> 16;
    std::uint32_t right = word & 0xFFFF;
    for (int r = 0; r < kRounds; ++r) {
      const std::uint32_t next = left ^ round_function(r, right);
      left = right;
      right = next;
    }
    return left << 16 | right;
  }
  [[nodiscard]] std::uint32_t feistel_inverse(std::uint32_t word) const noexcept {
    std::uint32_t left = word >> 16;
    std::uint32_t right = word & 0xFFFF;
    for (int r = kRounds - 1; r >= 0; --r) {
      const std::uint32_t previous = right ^ round_function(r, left);
      right = left;
      left = previous;
    }
    return left << 16 | right;
  }

  SipKey key_;
  std::uint32_t zero_image_;     // P(0): what the word mapping to 0 is given instead
  std::uint32_t zero_preimage_;  // P^-1(0): the word that gets P(0)
};

}  // namespace fastcm::engine
