// Private data and additional information from the API into wire messages: the length check every
// send command makes, the copy into the message's fixed-size field (the rest stays zero), and the
// all-zeros test that decides whether an established endpoint must keep a MAD for its bytes.
#pragma once

#include <algorithm>
#include <array>
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

// Whether every byte is zero. OR-reduces whole words without an early exit: private data is up to
// 224 bytes and almost always all zeros, and a byte loop with an early exit (std::all_of) cost
// ~1,900 instructions per connection. A ragged end is read as the span's last word, overlapping.
[[nodiscard]] inline bool all_zero(std::span<const std::uint8_t> bytes) noexcept {
  const auto word_at = [&](std::size_t at) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data() + at, sizeof word);
    return word;
  };
  const std::size_t n = bytes.size();
  if (n < sizeof(std::uint64_t)) {
    std::uint8_t any = 0;
    for (const std::uint8_t b : bytes) any |= b;
    return any == 0;
  }
  std::uint64_t any = word_at(n - sizeof any);
  std::size_t i = 0;
  for (; i + 4 * sizeof any <= n; i += 4 * sizeof any) {
    any |= word_at(i) | word_at(i + 8) | word_at(i + 16) | word_at(i + 24);
  }
  for (; i + sizeof any <= n; i += sizeof any) any |= word_at(i);
  return any == 0;
}

}  // namespace fastcm::engine
