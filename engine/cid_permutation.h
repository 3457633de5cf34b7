// A keyed, tweaked pseudo-random permutation of the words of `bits` bits (16..32): what turns the
// secret part of a comm ID ([slot | generation], cid.h) into the bits put on the wire, and back.
// The tweak (the ID's shard, cid.h) selects one of kMaxTweaks independent permutations, so equal
// words of two shards give unrelated images.
//
// A Feistel network of kRounds rounds over the word's two halves, the high one floor(bits / 2)
// bits wide and the low one the rest (equal for even widths, one bit apart for odd ones; the
// halves swap roles each round, so an even round count ends with the widths it started with). The
// round function is SipHash-1-3 of (round, tweak, half) under the engine's key, cut to the width
// of the half it is XORed into: with a pseudo-random round function, four rounds already make a
// strong pseudo-random permutation (Luby and Rackoff); the extra rounds are margin for the small
// halves, against which attacks need fewer pairs. A peer that sees any number of IDs learns
// nothing of the others', nor of the next one a slot will get, on its shard or any other.
//
// Why SipHash and not AES-NI, which needs a fifth of the instructions (one aesenc chain of ten
// per round): the six rounds run in series, so an encode costs the chain's latency. Measured with
// the same Feistel and key (AMD EPYC, g++ -O2 -maes): SipHash 45 ns per encode when each input is
// the last output and 42 ns when inputs are independent; AES-128 95 ns and 51 ns.
//
// Zero is kept out of the range: a REJ whose local comm ID is 0 comes from a CM that made no
// endpoint for the REQ it rejects, so no word the engine encodes may come out as 0. Per tweak, the
// Feistel output P is patched into Q(x) = P(x), except Q(x0) = P(0) for the one x0 with P(x0) = 0;
// Q maps every non-zero word to a non-zero one and stays a bijection on them. (Words are never 0
// on input: cid.h.)
// Thread contract: immutable after construction; any thread.
#pragma once

#include <array>
#include <cstdint>

#include "engine/sip_hash.h"

namespace fastcm::engine {

class CidPermutation {
 public:
  static constexpr int kRounds = 6;  // even: the output's halves have the input's widths
  static constexpr std::uint32_t kMaxTweaks = 64;  // the engine's shard limit (kMaxShards)

  // Permutes words of `bits` bits (16..32, the caller's constant) under tweaks 0..kMaxTweaks-1.
  CidPermutation(const SipKey& key, unsigned bits) noexcept
      : hasher_(key), low_bits_(bits - bits / 2), high_mask_(mask(bits / 2)), low_mask_(mask(low_bits_)) {
    for (std::uint32_t t = 0; t < kMaxTweaks; ++t) {
      zero_image_[t] = feistel(0, t);
      zero_preimage_[t] = feistel_inverse(0, t);
    }
  }

  // The non-zero image under `tweak` (below kMaxTweaks) of a non-zero `word` below 2^bits (0 maps to an arbitrary
  // non-zero word).
  [[nodiscard]] std::uint32_t encode(std::uint32_t word, std::uint32_t tweak) const noexcept {
    const std::uint32_t out = feistel(word, tweak);
    return out == 0 ? zero_image_[tweak] : out;
  }
  // The inverse of encode under `tweak` for every non-zero `cid` below 2^bits; 0, which encode
  // never returns, decodes to the same word as encode(0) does (a lookup compares the whole ID, so
  // nothing matches it).
  [[nodiscard]] std::uint32_t decode(std::uint32_t cid, std::uint32_t tweak) const noexcept {
    const std::uint32_t word = feistel_inverse(cid, tweak);
    return word == 0 ? zero_preimage_[tweak] : word;
  }

 private:
  [[nodiscard]] static constexpr std::uint32_t mask(unsigned bits) noexcept { return (std::uint32_t{1} << bits) - 1; }
  // Round r XORs into the high half's width on even rounds and the low half's on odd ones.
  [[nodiscard]] std::uint32_t target_mask(int round) const noexcept { return round % 2 == 0 ? high_mask_ : low_mask_; }
  [[nodiscard]] std::uint32_t round_function(int round, std::uint32_t tweak, std::uint32_t half) const noexcept {
    // The message is 4 bytes: the half (2, as no half is wider than 16 bits), the tweak (1), the
    // round number (1).
    const std::uint64_t message = std::uint64_t{static_cast<std::uint32_t>(round)} << 24 | tweak << 16 | half;
    return static_cast<std::uint32_t>(hasher_.hash<1, 3>(message, 4)) & target_mask(round);
  }
  [[nodiscard]] std::uint32_t feistel(std::uint32_t word, std::uint32_t tweak) const noexcept {
    std::uint32_t left = word >> low_bits_;  // floor(bits / 2) bits wide
    std::uint32_t right = word & low_mask_;
    for (int r = 0; r < kRounds; ++r) {
      const std::uint32_t next = left ^ round_function(r, tweak, right);  // as wide as `left`
      left = right;
      right = next;
    }
    return left << low_bits_ | right;
  }
  [[nodiscard]] std::uint32_t feistel_inverse(std::uint32_t word, std::uint32_t tweak) const noexcept {
    std::uint32_t left = word >> low_bits_;
    std::uint32_t right = word & low_mask_;
    for (int r = kRounds - 1; r >= 0; --r) {
      const std::uint32_t previous = right ^ round_function(r, tweak, left);
      right = left;
      left = previous;
    }
    return left << low_bits_ | right;
  }

  SipHasher hasher_;
  unsigned low_bits_;
  std::uint32_t high_mask_;  // the high half's bits, floor(bits / 2) of them
  std::uint32_t low_mask_;
  std::array<std::uint32_t, kMaxTweaks> zero_image_{};     // per tweak, P(0): what the word mapping to 0 gets
  std::array<std::uint32_t, kMaxTweaks> zero_preimage_{};  // per tweak, P^-1(0): the word that gets P(0)
};

}  // namespace fastcm::engine
