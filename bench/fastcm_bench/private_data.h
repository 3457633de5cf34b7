// The private data the storm's REQs and REPs carry: --private-data bytes counting up from 0, so a
// capture shows where each message's data starts and ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fastcm::bench {

// Thread contract: pure; allocates (setup only).
[[nodiscard]] inline std::vector<std::uint8_t> counting_bytes(std::size_t n) {
  std::vector<std::uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(i);
  return bytes;
}

}  // namespace fastcm::bench
