// Private data and additional information from the API into wire messages: the length check every
// send command makes, and the copy into the message's fixed-size field (the rest stays zero).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
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

}  // namespace fastcm::engine
