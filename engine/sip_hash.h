// SipHash-c-d (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012): a keyed
// pseudo-random function. Of a message shorter than 8 bytes (the round function of the comm-ID
// permutation, cid_permutation.h), which is the one final block, so a hash costs c + d SipRounds
// and no loop; and of a message of whole 8-byte words (a half-open handshake's source, a GID and
// its port: shards/half_open_table.h), one compression per word before the final block.
// Thread contract: pure functions.
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

// The hash of `words` (each holding 8 message bytes in little-endian order)
// followed by the `tail_length` bytes of `tail` (its low bytes, little-endian; tail_length < 8,
// higher bytes zero).
template <int C, int D>
[[nodiscard]] constexpr std::uint64_t sip_hash(const SipKey& key, std::span<const std::uint64_t> words,
                                               std::uint64_t tail, std::size_t tail_length) noexcept {
  std::uint64_t v0 = key.k0 ^ 0x736f6d6570736575ull;
  std::uint64_t v1 = key.k1 ^ 0x646f72616e646f6dull;
  std::uint64_t v2 = key.k0 ^ 0x6c7967656e657261ull;
  std::uint64_t v3 = key.k1 ^ 0x7465646279746573ull;
  const auto round = [&] {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
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
  };
  const auto compress = [&](std::uint64_t block, int rounds) {
    v3 ^= block;
    for (int i = 0; i < rounds; ++i) round();
    v0 ^= block;
  };
  for (const std::uint64_t word : words) compress(word, C);
  // The final block: the tail bytes, and the message length (mod 256) in the top byte.
  compress(std::uint64_t{8 * words.size() + tail_length} << 56 | tail, C);
  v2 ^= 0xff;
  for (int i = 0; i < D; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

// `message` holds the message bytes in little-endian order in its low `length` bytes (length < 8;
// higher bytes zero).
template <int C, int D>
[[nodiscard]] constexpr std::uint64_t sip_hash(const SipKey& key, std::uint64_t message,
                                               std::size_t length) noexcept {
  return sip_hash<C, D>(key, std::span<const std::uint64_t>{}, message, length);
}

}  // namespace fastcm::engine
