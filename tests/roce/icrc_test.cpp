// The ICRC against a frame computed by RoCE hardware, and against a bitwise CRC-32 over a
// masked copy built here from the Annex A17 rules, so zlib's CRC and our masking are each
// checked by something that does not share their code.
#include "fabric/roce_udp/icrc.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "sample_frames.h"

namespace fastcm::roce {
namespace {

// A RoCEv2 CNP (opcode 0x81, IPv4, 16 bytes of padding) captured on a Mellanox ConnectX-4 Lx,
// as published in scapy's RoCE regression tests (test/contrib/roce.uts). The NIC computed the
// ICRC in the last 4 bytes; note TOS 0xc2 and BECN set in resv8a, both masked fields.
constexpr std::array<std::uint8_t, 74> kConnectX4CnpFrame = {
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45,
    0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01,
    0x0a, 0x00, 0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff,
    0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a};

// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), one bit at a time.
std::uint32_t reference_crc32(const std::vector<std::uint8_t>& bytes) {
  std::uint32_t crc = 0xFFFFFFFFU;
  for (const std::uint8_t b : bytes) {
    crc ^= b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320U & (0U - (crc & 1U)));
  }
  return ~crc;
}

// Byte offsets within the IP packet (IP header at 0) that Annex A17 replaces by ones, with the
// bits of each byte that are variant: IPv6 byte 0 keeps its version nibble.
struct MaskedByte {
  std::size_t offset;
  std::uint8_t bits;
};

std::vector<MaskedByte> variant_bytes(bool ipv4) {
  const std::size_t udp = ipv4 ? 20 : 40;
  std::vector<MaskedByte> m;
  if (ipv4) {
    m = {{1, 0xFF}, {8, 0xFF}, {10, 0xFF}, {11, 0xFF}};  // TOS, TTL, header checksum
  } else {
    m = {{0, 0x0F}, {1, 0xFF}, {2, 0xFF}, {3, 0xFF}, {7, 0xFF}};  // class, flow label, hops
  }
  m.push_back({udp + 6, 0xFF});  // UDP checksum
  m.push_back({udp + 7, 0xFF});
  m.push_back({udp + 8 + 4, 0xFF});  // BTH resv8a
  return m;
}

std::uint32_t reference_icrc(std::vector<std::uint8_t> ip_packet, bool ipv4) {
  for (const MaskedByte& m : variant_bytes(ipv4)) ip_packet[m.offset] |= m.bits;
  std::vector<std::uint8_t> covered(8, 0xFF);  // the LRH stand-in
  covered.insert(covered.end(), ip_packet.begin(), ip_packet.end());
  return reference_crc32(covered);
}

// The IP packet of a frame built by the codec, without Ethernet header and ICRC.
std::vector<std::uint8_t> built_ip_packet(bool ipv4) {
  const auto frame = ipv4 ? test::build_frame(test::ipv4_endpoint(1), test::ipv4_endpoint(2),
                                              test::sample_header(), test::cm_req_mad(0x01020304))
                          : test::build_frame(test::ipv6_endpoint(1), test::ipv6_endpoint(2),
                                              test::sample_header(), test::cm_req_mad(0x01020304));
  return {frame.begin() + static_cast<std::ptrdiff_t>(kEthernetHeaderSize),
          frame.end() - static_cast<std::ptrdiff_t>(kIcrcSize)};
}

TEST(Icrc, MatchesTheIcrcAConnectX4ComputedOnACapturedCnp) {
  const std::span<const std::uint8_t> frame(kConnectX4CnpFrame);
  const auto ip_packet =
      frame.subspan(kEthernetHeaderSize, frame.size() - kEthernetHeaderSize - kIcrcSize);
  const auto icrc = compute_icrc(ip_packet);
  ASSERT_TRUE(icrc.has_value());
  // Carried least significant byte first: 82 fd 00 2a.
  EXPECT_EQ(*icrc, 0x2A00FD82U);
}

TEST(Icrc, ReferenceCrcOfTheLrhStandInIsTheSeedLinuxRxeStartsFrom) {
  // rxe_icrc.c seeds its running (uncomplemented) CRC with 0xdebb20e3 for the 8 bytes of ones.
  EXPECT_EQ(~reference_crc32(std::vector<std::uint8_t>(8, 0xFF)), 0xDEBB20E3U);
  EXPECT_EQ(reference_crc32({'1', '2', '3', '4', '5', '6', '7', '8', '9'}), 0xCBF43926U);
}

TEST(Icrc, AgreesWithTheBitwiseReferenceOnTheHardwareFrame) {
  const std::vector<std::uint8_t> ip_packet(kConnectX4CnpFrame.begin() + 14,
                                            kConnectX4CnpFrame.end() - 4);
  EXPECT_EQ(reference_icrc(ip_packet, true), 0x2A00FD82U);
}

class IcrcPerFamily : public ::testing::TestWithParam<bool> {};

TEST_P(IcrcPerFamily, AgreesWithTheBitwiseReferenceOnBuiltFrames) {
  const bool ipv4 = GetParam();
  const auto ip_packet = built_ip_packet(ipv4);
  EXPECT_EQ(compute_icrc(ip_packet), reference_icrc(ip_packet, ipv4));
}

// CRC-32 catches every single-bit error, so flipping any covered bit must change the ICRC and
// flipping a variant bit must not: this pins the exact extent of every mask.
TEST_P(IcrcPerFamily, EveryInvariantBitIsCoveredAndNoVariantBitIs) {
  const bool ipv4 = GetParam();
  const auto ip_packet = built_ip_packet(ipv4);
  const auto original = compute_icrc(ip_packet);
  ASSERT_TRUE(original.has_value());
  std::vector<std::uint8_t> variant(ip_packet.size(), 0);
  for (const MaskedByte& m : variant_bytes(ipv4)) variant[m.offset] = m.bits;

  for (std::size_t byte = 0; byte < ip_packet.size(); ++byte) {
    for (unsigned bit = 0; bit < 8; ++bit) {
      auto flipped = ip_packet;
      const auto mask = static_cast<std::uint8_t>(1U << bit);
      flipped[byte] ^= mask;
      const bool is_variant = (variant[byte] & mask) != 0;
      EXPECT_EQ(compute_icrc(flipped) == original, is_variant) << "byte " << byte << " bit " << bit;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ipv4AndIpv6, IcrcPerFamily, ::testing::Values(true, false),
                         test::family_name);

TEST(Icrc, RefusesWhatIsNotAnIpPacketLongEnoughForTheHeaders) {
  EXPECT_FALSE(compute_icrc({}).has_value());
  auto ipv4 = built_ip_packet(true);
  auto ipv6 = built_ip_packet(false);
  // Exactly IP header + UDP + BTH is enough; one byte less is not.
  EXPECT_TRUE(compute_icrc(std::span(ipv4).first(20 + 8 + 12)).has_value());
  EXPECT_FALSE(compute_icrc(std::span(ipv4).first(20 + 8 + 11)).has_value());
  EXPECT_TRUE(compute_icrc(std::span(ipv6).first(40 + 8 + 12)).has_value());
  EXPECT_FALSE(compute_icrc(std::span(ipv6).first(40 + 8 + 11)).has_value());
  ipv4[0] = 0x44;  // IHL 4
  EXPECT_FALSE(compute_icrc(ipv4).has_value());
  ipv6[0] = 0x50;  // version 5
  EXPECT_FALSE(compute_icrc(ipv6).has_value());
}

}  // namespace
}  // namespace fastcm::roce
