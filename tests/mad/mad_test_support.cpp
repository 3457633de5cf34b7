#include "tests/mad/mad_test_support.h"

#include <cstdio>

namespace fastcm::mad::test {

std::uint64_t read_bits(std::span<const std::uint8_t> buf, std::size_t byte, unsigned bit,
                        unsigned width) {
  std::uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i) {
    const std::size_t at = byte * 8 + bit + i;
    value = (value << 1) | ((buf[at / 8] >> (7 - at % 8)) & 1U);
  }
  return value;
}

void write_bits(std::span<std::uint8_t> buf, std::size_t byte, unsigned bit, unsigned width,
                std::uint64_t value) {
  for (unsigned i = 0; i < width; ++i) {
    const std::size_t at = byte * 8 + bit + i;
    const auto mask = static_cast<std::uint8_t>(1U << (7 - at % 8));
    if ((value >> (width - 1 - i)) & 1U) {
      buf[at / 8] = static_cast<std::uint8_t>(buf[at / 8] | mask);
    } else {
      buf[at / 8] = static_cast<std::uint8_t>(buf[at / 8] & ~mask);
    }
  }
}

std::string byte_diff(std::span<const std::uint8_t> got, std::span<const std::uint8_t> want) {
  std::string out;
  if (got.size() != want.size()) {
    out = "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size()) + "\n";
  }
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (got[i] != want[i]) {
      char line[64];
      std::snprintf(line, sizeof line, "MAD byte %zu: got 0x%02x, want 0x%02x\n", i,
                    static_cast<unsigned>(got[i]), static_cast<unsigned>(want[i]));
      out += line;
    }
  }
  return out;
}

}  // namespace fastcm::mad::test
