// Private data and additional information from the API into wire messages: the length check every
// send command makes, the copy into the message's fixed-size field (the rest stays zero), and the
// all-zeros test that decides whether an established endpoint must keep a MAD for its bytes.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <span>

namespace fastcm::engine {

template <std::size_t N>
[[nodiscard]] constexpr bool fits(std::span<const std::uint8_t> data) noexcept {
  return data.size() <= N;
}

template <std::size_t N>
constexpr void copy_into(std::array<std::uint8_t, N>& to, std::span<const std::uint8_t> from) noexcept {
  std::copy_n(from.begin(), std::min(N, from.size()), to.begin());
}

// Whether every byte is zero: libc's memcmp against zeros (glibc's x86-64 memcmp compares 32 bytes
// a step where the CPU has AVX2). Private data is up to 224 bytes and almost always all zeros: per
// connection, a byte loop with an early exit (std::all_of) cost ~1,900 instructions, 8-byte words
// ~350, the compiler's SSE2 OR-reduction ~310, memcmp ~210 (callgrind, fastcm_bench_per_mad).
// Precondition: at most 256 bytes, as every field inside a MAD's 232 bytes of CM data.
[[nodiscard]] inline bool all_zero(std::span<const std::uint8_t> bytes) noexcept {
  static constexpr std::array<std::uint8_t, 256> kZeros{};
  assert(bytes.size() <= kZeros.size());
  return std::memcmp(bytes.data(), kZeros.data(), bytes.size()) == 0;
}

}  // namespace fastcm::engine
