// SipHash-c-d (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012) of a message
// shorter than 8 bytes: a keyed pseudo-random function, here the round function of the comm-ID
// permutation (cid_permutation.h). Such a message is the one final block, so a hash costs c + d
// SipRounds and no loop; longer messages are not needed and not offered.
// Thread contract: pure functions.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace fastcm::engine {

struct SipKey {
  std::uint64_t k0 = 0;  // key bytes 0-7, little-endian
  std::uint64_t k1 = 0;  // key bytes 8-15
};

// `message` holds the message bytes in little-endian order in its low `length` bytes (length < 8;
// higher bytes zero).
template <int C, int D>
[[nodiscard]] constexpr std::uint64_t sip_hash(const SipKey& key, std::uint64_t message,
                                               std::size_t length) noexcept {
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
  // The final block: the message bytes, and the length in the top byte.
  const std::uint64_t block = std::uint64_t{length} << 56 | message;
  v3 ^= block;
  for (int i = 0; i < C; ++i) round();
  v0 ^= block;
  v2 ^= 0xff;
  for (int i = 0; i < D; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace fastcm::engine
