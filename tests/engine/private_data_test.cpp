// all_zero decides whether an established endpoint may let go of a MAD (its private data then
// reads back as that many zeros): one missed non-zero byte would lose the application's data.
#include "engine/private_data.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace fastcm::engine {
namespace {

TEST(AllZero, EmptyAndZeroSpansOfEveryLengthAreZero) {
  const std::array<std::uint8_t, 224> zeros{};
  for (std::size_t n = 0; n <= zeros.size(); ++n) {
    EXPECT_TRUE(all_zero(std::span(zeros).first(n))) << "length " << n;
  }
}

TEST(AllZero, OneNonZeroByteAnywhereIsSeenAtEveryLengthAndAlignment) {
  std::array<std::uint8_t, 232> bytes{};
  for (std::size_t start = 0; start < 8; ++start) {
    for (std::size_t n = 1; start + n <= bytes.size(); n += 13) {
      for (std::size_t at = 0; at < n; ++at) {
        bytes[start + at] = 0x80;
        EXPECT_FALSE(all_zero(std::span(bytes).subspan(start, n)))
            << "start " << start << " length " << n << " byte " << at;
        bytes[start + at] = 0;
      }
    }
  }
}

TEST(AllZero, BytesOutsideTheSpanAreNotRead) {
  std::array<std::uint8_t, 24> bytes{};
  bytes[0] = 1;
  bytes[23] = 1;
  EXPECT_TRUE(all_zero(std::span(bytes).subspan(1, 22)));
}

}  // namespace
}  // namespace fastcm::engine
