// rping's wire (examples/rping_common/rping_protocol.h) against what rdma-core 44's rping does: a
// big-endian 16-byte advert, and the ping text its client writes (and its -V checks).
#include "examples/rping_common/rping_protocol.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace fastcm::examples::rping {
namespace {

TEST(RpingProtocol, AdvertIsBigEndianAddressRkeySize) {
  std::array<std::uint8_t, kAdvertBytes> wire{};
  write_advert(Advert{0x0102'0304'0506'0708, 0x1122'3344, 64}, wire);
  const std::array<std::uint8_t, kAdvertBytes> want{1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 64};
  EXPECT_EQ(wire, want);
  const Advert back = read_advert(wire);
  EXPECT_EQ(back.addr, 0x0102'0304'0506'0708u);
  EXPECT_EQ(back.rkey, 0x1122'3344u);
  EXPECT_EQ(back.size, 64u);
}

std::string ping_text(std::uint32_t ping, std::size_t size) {
  std::vector<char> buffer(size);
  fill_ping(buffer, ping);
  EXPECT_EQ(buffer.back(), '\0');
  return std::string(buffer.data());
}

// The lines rping -v printed in the interop runs, for its default size of 64.
TEST(RpingProtocol, PingTextIsRpings) {
  EXPECT_EQ(ping_text(0, 64), "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr");
  EXPECT_EQ(ping_text(4, 64), "rdma-ping-4: EFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuv");
}

TEST(RpingProtocol, LettersWrapFromZToA) {
  // Ping 57 starts at 'A' + 57 = 'z'; ping 58 starts again at 'A'.
  EXPECT_EQ(ping_text(57, 20), "rdma-ping-57: zABCD");
  EXPECT_EQ(ping_text(58, 20), "rdma-ping-58: ABCDE");
}

TEST(RpingProtocol, IsPingAcceptsOnlyThatPingsText) {
  std::vector<char> buffer(64);
  fill_ping(buffer, 7);
  EXPECT_TRUE(is_ping(buffer, 7));
  EXPECT_FALSE(is_ping(buffer, 6));
  EXPECT_FALSE(is_ping(std::span<const char>(buffer).first(kMinSize - 1), 7));
  buffer[40] ^= 1;
  EXPECT_FALSE(is_ping(buffer, 7));
  buffer[40] ^= 1;
  buffer.back() = 'x';  // no NUL at the end
  EXPECT_FALSE(is_ping(buffer, 7));
}

}  // namespace
}  // namespace fastcm::examples::rping
