// Building and parsing RoCEv2 GSI frames: byte-exact headers, round trips over IPv4 and IPv6,
// and a typed error (never a crash) for every kind of broken frame.
#include "fabric/roce_udp/rocev2_frame.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sample_frames.h"

namespace fastcm::roce {
namespace {

using test::build_frame;
using test::cm_req_mad;
using test::ipv4_endpoint;
using test::ipv6_endpoint;
using test::sample_header;

using Bytes = std::vector<std::uint8_t>;

// Offsets in a frame without VLAN tag.
constexpr std::size_t kIp = 14;
constexpr std::size_t kUdp4 = kIp + 20;
constexpr std::size_t kUdp6 = kIp + 40;

// RFC 1071 sum of big-endian 16-bit words, folded; written here apart from the DPDK helpers the
// codec uses.
std::uint32_t ones_complement_sum(const std::uint8_t* p, std::size_t len, std::uint32_t sum = 0) {
  for (std::size_t i = 0; i + 1 < len; i += 2) sum += (std::uint32_t{p[i]} << 8) | p[i + 1];
  if (len % 2 != 0) sum += std::uint32_t{p[len - 1]} << 8;
  while (sum > 0xFFFFU) sum = (sum & 0xFFFFU) + (sum >> 16);
  return sum;
}

void fix_ipv4_checksum(Bytes& f) {
  f[kIp + 10] = 0;
  f[kIp + 11] = 0;
  const auto ck = static_cast<std::uint16_t>(~ones_complement_sum(&f[kIp], 20));
  f[kIp + 10] = static_cast<std::uint8_t>(ck >> 8);
  f[kIp + 11] = static_cast<std::uint8_t>(ck);
}

std::uint16_t get16(const Bytes& f, std::size_t at) {
  return static_cast<std::uint16_t>((f[at] << 8) | f[at + 1]);
}
void put16(Bytes& f, std::size_t at, std::uint16_t v) {
  f[at] = static_cast<std::uint8_t>(v >> 8);
  f[at + 1] = static_cast<std::uint8_t>(v);
}

// IPv6 pseudo-header (RFC 8200 8.1): addresses, upper-layer length, next header 17.
bool ipv6_udp_checksum_verifies(const Bytes& f) {
  const std::size_t udp_len = f.size() - kUdp6;
  std::uint32_t sum = ones_complement_sum(&f[kIp + 8], 32);
  sum += static_cast<std::uint32_t>(udp_len) + 17U;
  sum = ones_complement_sum(&f[kUdp6], udp_len, sum);
  return sum == 0xFFFFU;
}

Bytes v4_frame() {
  return build_frame(ipv4_endpoint(1), ipv4_endpoint(2), sample_header(), cm_req_mad(7));
}
Bytes v6_frame() {
  return build_frame(ipv6_endpoint(1), ipv6_endpoint(2), sample_header(), cm_req_mad(7));
}

FrameErrc parse_errc(const Bytes& f) {
  return parse_rocev2_frame(f).errc;
}

class FramePerFamily : public ::testing::TestWithParam<bool> {
 protected:
  bool ipv4() const { return GetParam(); }
  RoceEndpoint endpoint(std::uint8_t host) const {
    return ipv4() ? ipv4_endpoint(host) : ipv6_endpoint(host);
  }
  Bytes frame() const { return ipv4() ? v4_frame() : v6_frame(); }
};

TEST_P(FramePerFamily, RoundTripsEveryField) {
  RoceGsiHeader h = sample_header();
  h.pkey = 0x8001;
  h.dest_qp = 0xFEDCBA;
  h.src_qp = 0x123456;
  h.qkey = 0x11223344;
  const auto mad = cm_req_mad(0xCAFEF00D);
  const Bytes f = build_frame(endpoint(1), endpoint(9), h, mad);
  ASSERT_EQ(f.size(), rocev2_frame_size(ipv4()));

  const FrameParse p = parse_rocev2_frame(f);
  ASSERT_EQ(p.errc, FrameErrc::ok) << to_string(p.errc);
  EXPECT_EQ(p.frame.src, endpoint(1));
  EXPECT_EQ(p.frame.dst, endpoint(9));
  EXPECT_EQ(p.frame.header, h);
  EXPECT_EQ(p.frame.vlan_tci, 0);
  ASSERT_EQ(p.frame.mad.size(), kMadSize);
  EXPECT_TRUE(std::equal(mad.begin(), mad.end(), p.frame.mad.begin()));
  EXPECT_EQ(p.frame.mad.data(), f.data() + f.size() - kIcrcSize - kMadSize);  // zero-copy
  const std::size_t i = f.size() - 4;
  const std::uint32_t carried = std::uint32_t{f[i]} | (std::uint32_t{f[i + 1]} << 8) |
                                (std::uint32_t{f[i + 2]} << 16) | (std::uint32_t{f[i + 3]} << 24);
  EXPECT_EQ(p.frame.icrc, carried);
}

TEST_P(FramePerFamily, BuildRefusesTooSmallBuffersMixedFamiliesAndWideValues) {
  const auto mad = cm_req_mad(1);
  Bytes out(rocev2_frame_size(ipv4()) - 1);
  EXPECT_EQ(build_rocev2_frame(endpoint(1), endpoint(2), sample_header(), mad, out), 0U);
  out.resize(kMaxRocev2FrameSize);
  const RoceEndpoint other = ipv4() ? ipv6_endpoint(2) : ipv4_endpoint(2);
  EXPECT_EQ(build_rocev2_frame(endpoint(1), other, sample_header(), mad, out), 0U);
  EXPECT_EQ(build_rocev2_frame(other, endpoint(1), sample_header(), mad, out), 0U);
  for (int field = 0; field < 3; ++field) {
    RoceGsiHeader h = sample_header();
    (field == 0 ? h.dest_qp : field == 1 ? h.src_qp : h.psn) = 0x1000000;
    EXPECT_EQ(build_rocev2_frame(endpoint(1), endpoint(2), h, mad, out), 0U) << field;
  }
}

TEST_P(FramePerFamily, EveryCutShortFrameIsTruncated) {
  const Bytes f = frame();
  for (std::size_t len = 0; len < f.size(); ++len) {
    EXPECT_EQ(parse_errc(Bytes(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len))),
              FrameErrc::truncated)
        << len;
  }
}

TEST_P(FramePerFamily, BytesAfterTheIpPacketAreIgnored) {
  Bytes f = frame();
  f.insert(f.end(), {0xDE, 0xAD, 0xBE, 0xEF});  // e.g. an FCS kept by the capture
  EXPECT_EQ(parse_errc(f), FrameErrc::ok);
}

TEST_P(FramePerFamily, ParsesBehindOneVlanTag) {
  Bytes f = frame();
  f.insert(f.begin() + 12, {0x81, 0x00, 0x60, 0x05});  // priority 3, VLAN 5
  const FrameParse p = parse_rocev2_frame(f);
  ASSERT_EQ(p.errc, FrameErrc::ok) << to_string(p.errc);
  EXPECT_EQ(p.frame.vlan_tci, 0x6005);
  EXPECT_EQ(p.frame.header, sample_header());
}

TEST_P(FramePerFamily, ACorruptedMadIsCaughtAndStillDescribed) {
  Bytes f = frame();
  f[f.size() - kIcrcSize - 100] ^= 0x01;
  if (!ipv4()) {
    // The mandatory IPv6 UDP checksum sees it first; without a checksum the ICRC must.
    EXPECT_EQ(parse_errc(f), FrameErrc::bad_udp_checksum);
    put16(f, kUdp6 + 6, 0);
  }
  const FrameParse p = parse_rocev2_frame(f);
  EXPECT_EQ(p.errc, FrameErrc::bad_icrc);
  EXPECT_EQ(p.frame.header, sample_header());
  EXPECT_EQ(p.frame.mad.size(), kMadSize);
}

TEST_P(FramePerFamily, ACorruptedIcrcIsCaught) {
  Bytes f = frame();
  f.back() ^= 0x80;
  if (!ipv4()) put16(f, kUdp6 + 6, 0);  // the UDP checksum also covers the ICRC
  EXPECT_EQ(parse_errc(f), FrameErrc::bad_icrc);
}

TEST_P(FramePerFamily, RewritingVariantFieldsKeepsTheFrameValid) {
  Bytes f = frame();
  f[kIp + (ipv4() ? 8 : 7)] = 3;  // TTL / hop limit, as a router would
  const std::size_t bth = (ipv4() ? kUdp4 : kUdp6) + 8;
  f[bth + 4] = 0x40;  // BECN, as a congested switch would
  if (ipv4()) {
    f[kIp + 1] = 0xB8;  // DSCP 46
    fix_ipv4_checksum(f);
  } else {
    f[kIp] = 0x6B;  // traffic class and flow label
    f[kIp + 2] = 0x12;
    put16(f, kUdp6 + 6, 0);  // the UDP checksum is not invariant: a zero one is accepted
  }
  EXPECT_EQ(parse_errc(f), FrameErrc::ok);
}

TEST_P(FramePerFamily, OtherTransportsAreNotUdSendOnly) {
  Bytes f = frame();
  f[(ipv4() ? kUdp4 : kUdp6) + 8] = 0x04;  // RC SEND_ONLY
  if (!ipv4()) put16(f, kUdp6 + 6, 0);
  EXPECT_EQ(parse_errc(f), FrameErrc::not_ud_send_only);
}

TEST_P(FramePerFamily, RandomMutationsNeverEscapeTheFrame) {
  std::mt19937 rng(12345);  // fixed seed: reproducible
  const Bytes good = frame();
  for (int round = 0; round < 20000; ++round) {
    Bytes f = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) f[rng() % f.size()] = static_cast<std::uint8_t>(rng());
    f.resize(rng() % (f.size() + 1));
    const FrameParse p = parse_rocev2_frame(f);
    if (p.errc == FrameErrc::ok || p.errc == FrameErrc::bad_icrc) {
      ASSERT_EQ(p.frame.mad.size(), kMadSize);
      ASSERT_GE(p.frame.mad.data(), f.data());
      ASSERT_LE(p.frame.mad.data() + kMadSize, f.data() + f.size());
    } else {
      ASSERT_TRUE(p.frame.mad.empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ipv4AndIpv6, FramePerFamily, ::testing::Values(true, false),
                         test::family_name);

TEST(Rocev2Frame, Ipv4HeadersAreByteExact) {
  const Bytes f = v4_frame();
  ASSERT_EQ(f.size(), 322U);
  const Bytes eth = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00};
  EXPECT_EQ(Bytes(f.begin(), f.begin() + 14), eth);
  const Bytes ip_fixed = {0x45, 0x00, 0x01, 0x34, 0x00, 0x00, 0x40, 0x00, 64, 17};
  EXPECT_EQ(Bytes(f.begin() + kIp, f.begin() + kIp + 10), ip_fixed);
  const Bytes addrs = {10, 0, 0, 1, 10, 0, 0, 2};
  EXPECT_EQ(Bytes(f.begin() + kIp + 12, f.begin() + kIp + 20), addrs);
  EXPECT_EQ(ones_complement_sum(&f[kIp], 20), 0xFFFFU);
  const Bytes udp = {0xC1, 0x23, 0x12, 0xB7, 0x01, 0x20, 0x00, 0x00};  // no checksum over IPv4
  EXPECT_EQ(Bytes(f.begin() + kUdp4, f.begin() + kUdp4 + 8), udp);
  const Bytes bth_deth = {0x64, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0xAB,
                          0xCD, 0xEF, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
  EXPECT_EQ(Bytes(f.begin() + kUdp4 + 8, f.begin() + kUdp4 + 28), bth_deth);
  const auto mad = cm_req_mad(7);
  EXPECT_TRUE(std::equal(mad.begin(), mad.end(), f.begin() + kUdp4 + 28));
}

TEST(Rocev2Frame, Ipv6HeadersAreByteExactWithAVerifyingUdpChecksum) {
  const Bytes f = v6_frame();
  ASSERT_EQ(f.size(), 342U);
  EXPECT_EQ(get16(f, 12), 0x86DD);
  const Bytes ip_fixed = {0x60, 0x00, 0x00, 0x00, 0x01, 0x20, 17, 64};
  EXPECT_EQ(Bytes(f.begin() + kIp, f.begin() + kIp + 8), ip_fixed);
  const Gid src = ipv6_endpoint(1).gid;
  const Gid dst = ipv6_endpoint(2).gid;
  EXPECT_TRUE(std::equal(src.raw.begin(), src.raw.end(), f.begin() + kIp + 8));
  EXPECT_TRUE(std::equal(dst.raw.begin(), dst.raw.end(), f.begin() + kIp + 24));
  EXPECT_EQ(get16(f, kUdp6 + 2), kRocev2UdpPort);
  EXPECT_EQ(get16(f, kUdp6 + 4), 288);
  EXPECT_NE(get16(f, kUdp6 + 6), 0);
  EXPECT_TRUE(ipv6_udp_checksum_verifies(f));
}

TEST(Rocev2Frame, Ipv4MappedGidsAreRecognized) {
  EXPECT_TRUE(is_ipv4_mapped(ipv4_mapped_gid(0xC0A80001)));
  EXPECT_EQ(ipv4_mapped_gid(0xC0A80001).interface_id(), 0x0000FFFFC0A80001ULL);
  EXPECT_FALSE(is_ipv4_mapped(ipv6_endpoint(1).gid));
  EXPECT_FALSE(is_ipv4_mapped(Gid{}));
}

TEST(Rocev2Frame, EachBrokenHeaderGetsItsOwnError) {
  struct Case {
    const char* what;
    bool ipv4;
    void (*mutate)(Bytes&);
    FrameErrc expected;
  };
  const Case cases[] = {
      {"ARP ethertype", true, [](Bytes& f) { put16(f, 12, 0x0806); }, FrameErrc::not_ipv4_or_ipv6},
      {"IPv6 payload in an IPv4 ethertype", true, [](Bytes& f) { f[kIp] = 0x65; },
       FrameErrc::bad_ip_header},
      {"IHL below 5", true,
       [](Bytes& f) {
         f[kIp] = 0x44;
         fix_ipv4_checksum(f);
       },
       FrameErrc::bad_ip_header},
      {"total length below IHL", true,
       [](Bytes& f) {
         put16(f, kIp + 2, 19);
         fix_ipv4_checksum(f);
       },
       FrameErrc::bad_ip_header},
      {"IPv4 fragment", true,
       [](Bytes& f) {
         put16(f, kIp + 6, 0x2000);
         fix_ipv4_checksum(f);
       },
       FrameErrc::bad_ip_header},
      {"IPv4 header checksum", true, [](Bytes& f) { f[kIp + 8] = 1; }, FrameErrc::bad_ip_checksum},
      {"IPv4 TCP", true,
       [](Bytes& f) {
         f[kIp + 9] = 6;
         fix_ipv4_checksum(f);
       },
       FrameErrc::not_udp_4791},
      {"IPv4 to port 4790", true, [](Bytes& f) { put16(f, kUdp4 + 2, 4790); },
       FrameErrc::not_udp_4791},
      {"UDP length short", true, [](Bytes& f) { put16(f, kUdp4 + 4, 287); },
       FrameErrc::bad_udp_length},
      {"UDP length long", true, [](Bytes& f) { put16(f, kUdp4 + 4, 289); },
       FrameErrc::bad_udp_length},
      {"payload 4 bytes short", true,
       [](Bytes& f) {
         put16(f, kIp + 2, 304);
         fix_ipv4_checksum(f);
         put16(f, kUdp4 + 4, 284);
       },
       FrameErrc::bad_payload_length},
      {"empty UDP payload", true,
       [](Bytes& f) {
         put16(f, kIp + 2, 28);
         fix_ipv4_checksum(f);
         put16(f, kUdp4 + 4, 8);
       },
       FrameErrc::bad_payload_length},
      {"pad count 1", true, [](Bytes& f) { f[kUdp4 + 9] = 0x10; }, FrameErrc::bad_bth},
      {"transport version 1", true, [](Bytes& f) { f[kUdp4 + 9] = 0x01; }, FrameErrc::bad_bth},
      {"IPv6 version 4", false, [](Bytes& f) { f[kIp] = 0x40; }, FrameErrc::bad_ip_header},
      {"IPv6 hop-by-hop header", false, [](Bytes& f) { f[kIp + 6] = 0; }, FrameErrc::not_udp_4791},
      {"IPv6 payload length beyond the frame", false, [](Bytes& f) { put16(f, kIp + 4, 289); },
       FrameErrc::truncated},
      {"IPv6 to port 4790", false, [](Bytes& f) { put16(f, kUdp6 + 2, 4790); },
       FrameErrc::not_udp_4791},
      {"IPv6 UDP checksum", false, [](Bytes& f) { f[kUdp6 + 7] ^= 1; },
       FrameErrc::bad_udp_checksum},
  };
  for (const Case& c : cases) {
    Bytes f = c.ipv4 ? v4_frame() : v6_frame();
    c.mutate(f);
    const FrameParse p = parse_rocev2_frame(f);
    EXPECT_EQ(p.errc, c.expected) << c.what << ": got " << to_string(p.errc);
    EXPECT_TRUE(p.frame.mad.empty()) << c.what;
  }
}

TEST(Rocev2Frame, RandomBytesAreNeverAFrame) {
  std::mt19937 rng(777);
  for (int round = 0; round < 5000; ++round) {
    Bytes f(rng() % 400);
    for (auto& b : f) b = static_cast<std::uint8_t>(rng());
    EXPECT_NE(parse_errc(f), FrameErrc::ok);
  }
}

TEST(Rocev2Frame, ErrorsHaveNames) {
  EXPECT_EQ(to_string(FrameErrc::bad_icrc), "bad_icrc");
  EXPECT_EQ(to_string(FrameErrc::not_udp_4791), "not_udp_4791");
  EXPECT_EQ(to_string(static_cast<FrameErrc>(200)), "unknown");
}

}  // namespace
}  // namespace fastcm::roce
