#include "tools/fastcm-mad/hex_text.h"

#include <gtest/gtest.h>

#include "tools/fastcm-mad/gid_text.h"

namespace fastcm::tools {
namespace {

using Bytes = std::vector<std::uint8_t>;

TEST(HexText, ParsesEitherCaseWithSeparatorsAndPrefix) {
  EXPECT_EQ(parse_hex("00ff7Fa0"), (Bytes{0x00, 0xff, 0x7f, 0xa0}));
  EXPECT_EQ(parse_hex("00:FF:7f\n a0\t"), (Bytes{0x00, 0xff, 0x7f, 0xa0}));
  EXPECT_EQ(parse_hex("0xAB01"), (Bytes{0xab, 0x01}));
  EXPECT_EQ(parse_hex(""), Bytes{});
  EXPECT_EQ(parse_hex(" : "), Bytes{});
}

TEST(HexText, RefusesOddDigitCountAndOtherCharacters) {
  EXPECT_EQ(parse_hex("abc"), std::nullopt);
  EXPECT_EQ(parse_hex("0g"), std::nullopt);
  EXPECT_EQ(parse_hex("01-02"), std::nullopt);
  EXPECT_EQ(parse_hex("x01"), std::nullopt);
}

TEST(HexText, FormatsLowercasePairs) {
  const Bytes bytes{0x00, 0x0a, 0xbc, 0xff};
  EXPECT_EQ(to_hex(bytes), "000abcff");
  EXPECT_EQ(parse_hex(to_hex(bytes)), bytes);
  EXPECT_EQ(to_hex({}), "");
}

TEST(GidText, ShortestIpv6TextBothWays) {
  const Gid gid = Gid::from_parts(0xfe80000000000000ULL, 0x0002c90300000001ULL);
  EXPECT_EQ(gid_to_text(gid), "fe80::2:c903:0:1");
  EXPECT_EQ(gid_from_text("FE80:0:0:0:2:C903:0:1"), gid);
  EXPECT_EQ(gid_to_text(Gid{}), "::");
  const std::optional<Gid> mapped = gid_from_text("::ffff:192.168.1.2");
  ASSERT_TRUE(mapped.has_value());
  EXPECT_EQ(mapped->interface_id(), 0x0000ffffc0a80102ULL);
  EXPECT_EQ(gid_to_text(*mapped), "::ffff:192.168.1.2");
  EXPECT_EQ(gid_from_text("192.168.1.2"), std::nullopt);
  EXPECT_EQ(gid_from_text("fe80::1::2"), std::nullopt);
}

}  // namespace
}  // namespace fastcm::tools
