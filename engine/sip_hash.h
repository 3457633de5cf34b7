// SipHash-c-d (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012): a keyed
// pseudo-random function. Of a message shorter than 8 bytes (the round function of the comm-ID
// permutation, cid_permutation.h), which is the one final block, so a hash costs c + d SipRounds
// and no loop; and of a message of whole 8-byte words (a half-open handshake's source, a GID and
// its port: shards/half_open_table.h), one compression per word before the final block.
// Thread contract: pure functions; a SipHasher is immutable after construction (any thread).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fastcm::engine {

struct SipKey {
  std::uint64_t k0 = 0;  // key bytes 0-7, little-endian
  std::uint64_t k1 = 0;  // key bytes 8-15
};

// SipHash under one key, with the work that depends on the key alone done once: the state's
// initial words, and the first half of the first SipRound, which mixes v0 and v1 before it reads
// v3, the only word a message block has touched. A hash then skips 8 of its operations.
class SipHasher {
 public:
  constexpr explicit SipHasher(const SipKey& key) noexcept
      : v0_(key.k0 ^ 0x736f6d6570736575ull),
        v1_(key.k1 ^ 0x646f72616e646f6dull),
        v2_(key.k0 ^ 0x6c7967656e657261ull),
        v3_(key.k1 ^ 0x7465646279746573ull) {
    first_half_round(v0_, v1_);
  }

  // SipHash-C-D of `words` (each holding 8 message bytes in little-endian order) followed by the
  // `tail_length` bytes of `tail` (its low bytes, little-endian; tail_length < 8, higher bytes
  // zero).
  template <int C, int D>
    requires(C >= 1)
  [[nodiscard]] constexpr std::uint64_t hash(std::span<const std::uint64_t> words, std::uint64_t tail,
                                             std::size_t tail_length) const noexcept {
    std::uint64_t v0 = v0_;
    std::uint64_t v1 = v1_;
    std::uint64_t v2 = v2_;
    std::uint64_t v3 = v3_;
    bool first_half_done = true;  // the constructor ran the first SipRound's first half
    const auto sip_round = [&] {
      if (!first_half_done) first_half_round(v0, v1);
      first_half_done = false;
      second_half_round(v0, v1, v2, v3);
    };
    const auto compress = [&](std::uint64_t block) {
      v3 ^= block;
      for (int i = 0; i < C; ++i) sip_round();
      v0 ^= block;
    };
    for (const std::uint64_t word : words) compress(word);
    // The final block: the tail bytes, and the message length (mod 256) in the top byte.
    compress(std::uint64_t{8 * words.size() + tail_length} << 56 | tail);
    v2 ^= 0xff;
    for (int i = 0; i < D; ++i) sip_round();
    return v0 ^ v1 ^ v2 ^ v3;
  }

  // `message` holds the message bytes in little-endian order in its low `length` bytes (length < 8;
  // higher bytes zero).
  template <int C, int D>
  [[nodiscard]] constexpr std::uint64_t hash(std::uint64_t message, std::size_t length) const noexcept {
    return hash<C, D>(std::span<const std::uint64_t>{}, message, length);
  }

 private:
  // One SipRound, split where its first use of v3 begins.
  static constexpr void first_half_round(std::uint64_t& v0, std::uint64_t& v1) noexcept {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
  }
  static constexpr void second_half_round(std::uint64_t& v0, std::uint64_t& v1, std::uint64_t& v2,
                                          std::uint64_t& v3) noexcept {
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }

  std::uint64_t v0_;
  std::uint64_t v1_;
  std::uint64_t v2_;
  std::uint64_t v3_;
};

// SipHash-C-D under `key`, for a single hash (a hasher kept per key skips the key's setup).
template <int C, int D>
[[nodiscard]] constexpr std::uint64_t sip_hash(const SipKey& key, std::span<const std::uint64_t> words,
                                               std::uint64_t tail, std::size_t tail_length) noexcept {
  return SipHasher(key).hash<C, D>(words, tail, tail_length);
}
template <int C, int D>
[[nodiscard]] constexpr std::uint64_t sip_hash(const SipKey& key, std::uint64_t message,
                                               std::size_t length) noexcept {
  return SipHasher(key).hash<C, D>(message, length);
}

}  // namespace fastcm::engine
