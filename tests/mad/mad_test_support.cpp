#include "tests/mad/mad_test_support.h"

#include <cstdio>

namespace fastcm::mad::test {

std::uint64_t read_bits(std::span<const std::uint8_t> buf, std::size_t byte, unsigned bit,
                        unsigned width) {
  std::uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i) {
    const std::size_t at = byte * 8 + bit + i;
    value = (value << 1) | ((static_cast<unsigned>(buf[at / 8]) >> (7 - at % 8)) & 1U);
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
    out = "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size()) +
          "\n";
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

void put(Mad& mad, std::initializer_list<ByteAt> bytes) {
  for (const ByteAt& b : bytes) {
    EXPECT_EQ(mad[b.mad_byte], 0U) << "MAD byte " << b.mad_byte << " listed twice";
    mad[b.mad_byte] = b.value;
  }
}

void put_counting_bytes(Mad& mad, std::size_t mad_byte, std::size_t count, std::uint8_t start) {
  for (std::size_t i = 0; i < count; ++i) {
    mad[mad_byte + i] = static_cast<std::uint8_t>(start + i);
  }
}

Mad send_header_bytes(std::uint8_t attr_low) {
  Mad mad{};
  put(mad, {{0, 0x01},   // BaseVersion
            {1, 0x07},   // MgmtClass: CM
            {2, 0x02},   // ClassVersion
            {3, 0x03},   // Method: Send
            {8, 0x01}, {9, 0x02}, {10, 0x03}, {11, 0x04},  // TransactionID, big-endian
            {12, 0x05}, {13, 0x06}, {14, 0x07}, {15, 0x08},
            {17, attr_low}});  // AttributeID 0x00xx (byte 16 is 0x00)
  return mad;
}

}  // namespace fastcm::mad::test
