#include "fabric/roce_udp/rocev2_frame.h"

#include <rte_ip.h>

#include <algorithm>
#include <cstring>

namespace fastcm::roce {
namespace {

constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr std::uint16_t kEtherTypeVlan = 0x8100;
constexpr std::size_t kVlanTagSize = 4;
constexpr std::uint8_t kIpProtoUdp = 17;
constexpr std::uint8_t kDefaultHopLimit = 64;
constexpr std::uint16_t kIpv4DontFragment = 0x4000;
constexpr std::uint16_t kIpv4FragmentBits = 0x3FFF;  // MF flag and fragment offset
constexpr std::uint32_t kMax24 = 0xFFFFFF;
constexpr std::uint8_t kBthPadAndTver = 0x3F;

// BTH and DETH offsets (IBTA Vol. 1 9.2, 9.3).
constexpr std::size_t kBthPkey = 2;
constexpr std::size_t kBthDestQp = 5;
constexpr std::size_t kBthPsn = 9;
constexpr std::size_t kDethSrcQp = 5;

void put16(std::uint8_t* p, std::uint16_t v) noexcept {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
void put24(std::uint8_t* p, std::uint32_t v) noexcept {
  p[0] = static_cast<std::uint8_t>(v >> 16);
  p[1] = static_cast<std::uint8_t>(v >> 8);
  p[2] = static_cast<std::uint8_t>(v);
}
void put32(std::uint8_t* p, std::uint32_t v) noexcept {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  put24(p + 1, v);
}
std::uint16_t get16(const std::uint8_t* p) noexcept {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}
std::uint32_t get24(const std::uint8_t* p) noexcept {
  return (static_cast<std::uint32_t>(p[0]) << 16) | (static_cast<std::uint32_t>(p[1]) << 8) | p[2];
}
std::uint32_t get32(const std::uint8_t* p) noexcept {
  return (static_cast<std::uint32_t>(p[0]) << 24) | get24(p + 1);
}
std::uint32_t get32_le(const std::uint8_t* p) noexcept {
  return p[0] | (static_cast<std::uint32_t>(p[1]) << 8) | (static_cast<std::uint32_t>(p[2]) << 16) |
         (static_cast<std::uint32_t>(p[3]) << 24);
}

// DPDK's checksum helpers read their headers through these packed structs; their results are
// in the byte order of the memory they summed, so they are stored with memcpy, not put16.
const rte_ipv4_hdr* as_ipv4(const std::uint8_t* p) noexcept {
  return reinterpret_cast<const rte_ipv4_hdr*>(p);
}
const rte_ipv6_hdr* as_ipv6(const std::uint8_t* p) noexcept {
  return reinterpret_cast<const rte_ipv6_hdr*>(p);
}
void store_checksum(std::uint8_t* p, std::uint16_t raw) noexcept {
  std::memcpy(p, &raw, 2);
}

// RFC 1071 verification: the one's-complement sum of the pseudo-header and the whole datagram,
// checksum field included, is all ones when the checksum is right.
bool udp_checksum_verifies(std::uint16_t pseudo_sum,
                           std::span<const std::uint8_t> datagram) noexcept {
  std::uint32_t sum = std::uint32_t{pseudo_sum} + rte_raw_cksum(datagram.data(), datagram.size());
  sum = (sum & 0xFFFFU) + (sum >> 16);
  return sum == 0xFFFFU;
}

void write_ipv4_header(std::uint8_t* ip, const Gid& src, const Gid& dst) noexcept {
  ip[0] = 0x45;  // version 4, IHL 5
  ip[1] = 0;     // TOS
  put16(ip + 2, static_cast<std::uint16_t>(kIpv4HeaderSize + kUdpHeaderSize + kUdpPayloadSize));
  put16(ip + 4, 0);  // identification: unused with DF
  put16(ip + 6, kIpv4DontFragment);
  ip[8] = kDefaultHopLimit;
  ip[9] = kIpProtoUdp;
  put16(ip + 10, 0);  // checksum, filled in last
  std::copy_n(src.raw.begin() + 12, 4, ip + 12);
  std::copy_n(dst.raw.begin() + 12, 4, ip + 16);
}

void write_ipv6_header(std::uint8_t* ip, const Gid& src, const Gid& dst) noexcept {
  put32(ip, 0x60000000U);  // version 6, traffic class 0, flow label 0
  put16(ip + 4, static_cast<std::uint16_t>(kUdpHeaderSize + kUdpPayloadSize));
  ip[6] = kIpProtoUdp;
  ip[7] = kDefaultHopLimit;
  std::copy(src.raw.begin(), src.raw.end(), ip + 8);
  std::copy(dst.raw.begin(), dst.raw.end(), ip + 24);
}

}  // namespace

std::string_view to_string(FrameErrc e) noexcept {
  switch (e) {
    case FrameErrc::ok:
      return "ok";
    case FrameErrc::truncated:
      return "truncated";
    case FrameErrc::not_ipv4_or_ipv6:
      return "not_ipv4_or_ipv6";
    case FrameErrc::bad_ip_header:
      return "bad_ip_header";
    case FrameErrc::bad_ip_checksum:
      return "bad_ip_checksum";
    case FrameErrc::not_udp_4791:
      return "not_udp_4791";
    case FrameErrc::bad_udp_length:
      return "bad_udp_length";
    case FrameErrc::bad_udp_checksum:
      return "bad_udp_checksum";
    case FrameErrc::not_ud_send_only:
      return "not_ud_send_only";
    case FrameErrc::bad_payload_length:
      return "bad_payload_length";
    case FrameErrc::bad_bth:
      return "bad_bth";
    case FrameErrc::bad_icrc:
      return "bad_icrc";
  }
  return "unknown";
}

std::size_t write_ip_udp_headers(const Gid& src, const Gid& dst, std::uint16_t src_port,
                                 std::uint16_t dst_port, std::span<std::uint8_t> out) noexcept {
  const bool ipv4 = is_ipv4_mapped(src);
  if (ipv4 != is_ipv4_mapped(dst)) return 0;
  const std::size_t ip_header = ipv4 ? kIpv4HeaderSize : kIpv6HeaderSize;
  if (out.size() < ip_header + kUdpHeaderSize) return 0;
  std::uint8_t* const ip = out.data();
  if (ipv4) {
    write_ipv4_header(ip, src, dst);
  } else {
    write_ipv6_header(ip, src, dst);
  }
  std::uint8_t* const udp = ip + ip_header;
  put16(udp, src_port);
  put16(udp + 2, dst_port);
  put16(udp + 4, static_cast<std::uint16_t>(kUdpHeaderSize + kUdpPayloadSize));
  put16(udp + 6, 0);
  return ip_header + kUdpHeaderSize;
}

bool write_gsi_payload(const RoceGsiHeader& header, std::span<const std::uint8_t, kMadSize> mad,
                       std::span<std::uint8_t, kGsiHeadersSize + kMadSize> out) noexcept {
  if (header.dest_qp > kMax24 || header.src_qp > kMax24 || header.psn > kMax24) return false;
  std::uint8_t* const bth = out.data();
  std::fill_n(bth, kBthSize, std::uint8_t{0});
  bth[0] = kUdSendOnlyOpcode;
  put16(bth + kBthPkey, header.pkey);
  put24(bth + kBthDestQp, header.dest_qp);
  put24(bth + kBthPsn, header.psn);

  std::uint8_t* const deth = bth + kBthSize;
  put32(deth, header.qkey);
  deth[4] = 0;
  put24(deth + kDethSrcQp, header.src_qp);
  std::copy(mad.begin(), mad.end(), deth + kDethSize);
  return true;
}

GsiPayload parse_gsi_payload(std::span<const std::uint8_t> udp_payload) noexcept {
  GsiPayload p;
  if (!udp_payload.empty() && udp_payload[0] != kUdSendOnlyOpcode) {
    p.errc = FrameErrc::not_ud_send_only;
    return p;
  }
  if (udp_payload.size() != kUdpPayloadSize) {
    p.errc = FrameErrc::bad_payload_length;
    return p;
  }
  const std::uint8_t* bth = udp_payload.data();
  if ((bth[1] & kBthPadAndTver) != 0) {
    p.errc = FrameErrc::bad_bth;
    return p;
  }
  p.header.pkey = get16(bth + kBthPkey);
  p.header.dest_qp = get24(bth + kBthDestQp);
  p.header.psn = get24(bth + kBthPsn);
  const std::uint8_t* deth = bth + kBthSize;
  p.header.qkey = get32(deth);
  p.header.src_qp = get24(deth + kDethSrcQp);
  p.mad = udp_payload.subspan(kGsiHeadersSize, kMadSize);
  p.icrc = get32_le(bth + kGsiHeadersSize + kMadSize);
  return p;
}

std::size_t build_rocev2_frame(const RoceEndpoint& src, const RoceEndpoint& dst,
                               const RoceGsiHeader& header,
                               std::span<const std::uint8_t, kMadSize> mad,
                               std::span<std::uint8_t> out) noexcept {
  const bool ipv4 = is_ipv4_mapped(src.gid);
  const std::size_t size = rocev2_frame_size(ipv4);
  if (out.size() < size) return 0;

  std::uint8_t* const eth = out.data();
  std::copy(dst.mac.begin(), dst.mac.end(), eth);
  std::copy(src.mac.begin(), src.mac.end(), eth + 6);
  put16(eth + 12, ipv4 ? kEtherTypeIpv4 : kEtherTypeIpv6);

  std::uint8_t* const ip = eth + kEthernetHeaderSize;
  const std::size_t headers = write_ip_udp_headers(src.gid, dst.gid, header.udp_src_port,
                                                   kRocev2UdpPort, out.subspan(kEthernetHeaderSize));
  if (headers == 0) return 0;
  std::uint8_t* const payload = ip + headers;
  if (!write_gsi_payload(header, mad, std::span<std::uint8_t, kGsiHeadersSize + kMadSize>(
                                          payload, kGsiHeadersSize + kMadSize))) {
    return 0;
  }

  // The ICRC masks both checksums, so it goes first and they are computed over it. It cannot
  // fail: the headers just written are well formed and long enough.
  const std::size_t ip_length = size - kEthernetHeaderSize;
  if (!write_icrc(out.subspan(kEthernetHeaderSize, ip_length))) return 0;
  if (ipv4) {
    store_checksum(ip + 10, rte_ipv4_cksum(as_ipv4(ip)));
  } else {
    store_checksum(ip + headers - 2, rte_ipv6_udptcp_cksum(as_ipv6(ip), ip + kIpv6HeaderSize));
  }
  return size;
}

FrameParse parse_rocev2_frame(std::span<const std::uint8_t> frame) noexcept {
  FrameParse result;
  const auto fail = [&result](FrameErrc e) {
    result = FrameParse{};
    result.errc = e;
    return result;
  };
  ParsedFrame& f = result.frame;

  if (frame.size() < kEthernetHeaderSize) return fail(FrameErrc::truncated);
  std::copy_n(frame.begin(), 6, f.dst.mac.begin());
  std::copy_n(frame.begin() + 6, 6, f.src.mac.begin());
  std::size_t offset = 12;
  std::uint16_t ethertype = get16(frame.data() + offset);
  if (ethertype == kEtherTypeVlan) {
    if (frame.size() < kEthernetHeaderSize + kVlanTagSize) return fail(FrameErrc::truncated);
    f.vlan_tci = get16(frame.data() + offset + 2);
    offset += kVlanTagSize;
    ethertype = get16(frame.data() + offset);
  }
  offset += 2;
  const auto after_eth = frame.subspan(offset);

  std::span<const std::uint8_t> ip_packet;
  std::size_t ip_header = 0;
  if (ethertype == kEtherTypeIpv4) {
    if (after_eth.size() < kIpv4HeaderSize) return fail(FrameErrc::truncated);
    const std::uint8_t* ip = after_eth.data();
    ip_header = static_cast<std::size_t>(ip[0] & 0x0FU) * 4U;
    const std::size_t total = get16(ip + 2);
    if ((ip[0] >> 4U) != 4 || ip_header < kIpv4HeaderSize || total < ip_header) {
      return fail(FrameErrc::bad_ip_header);
    }
    if (after_eth.size() < total) return fail(FrameErrc::truncated);
    if ((get16(ip + 6) & kIpv4FragmentBits) != 0) return fail(FrameErrc::bad_ip_header);
    if (rte_ipv4_cksum(as_ipv4(ip)) != 0) return fail(FrameErrc::bad_ip_checksum);
    if (ip[9] != kIpProtoUdp) return fail(FrameErrc::not_udp_4791);
    ip_packet = after_eth.first(total);
    f.src.gid = ipv4_mapped_gid(get32(ip + 12));
    f.dst.gid = ipv4_mapped_gid(get32(ip + 16));
  } else if (ethertype == kEtherTypeIpv6) {
    if (after_eth.size() < kIpv6HeaderSize) return fail(FrameErrc::truncated);
    const std::uint8_t* ip = after_eth.data();
    if ((ip[0] >> 4U) != 6) return fail(FrameErrc::bad_ip_header);
    ip_header = kIpv6HeaderSize;
    const std::size_t total = kIpv6HeaderSize + get16(ip + 4);
    if (after_eth.size() < total) return fail(FrameErrc::truncated);
    if (ip[6] != kIpProtoUdp) return fail(FrameErrc::not_udp_4791);
    ip_packet = after_eth.first(total);
    std::copy_n(ip + 8, 16, f.src.gid.raw.begin());
    std::copy_n(ip + 24, 16, f.dst.gid.raw.begin());
  } else {
    return fail(FrameErrc::not_ipv4_or_ipv6);
  }

  const auto datagram = ip_packet.subspan(ip_header);
  if (datagram.size() < kUdpHeaderSize) return fail(FrameErrc::truncated);
  const std::uint8_t* udp = datagram.data();
  if (get16(udp + 2) != kRocev2UdpPort) return fail(FrameErrc::not_udp_4791);
  if (std::size_t{get16(udp + 4)} != datagram.size()) return fail(FrameErrc::bad_udp_length);
  if (get16(udp + 6) != 0) {
    const std::uint16_t pseudo = ethertype == kEtherTypeIpv4
                                     ? rte_ipv4_phdr_cksum(as_ipv4(ip_packet.data()), 0)
                                     : rte_ipv6_phdr_cksum(as_ipv6(ip_packet.data()), 0);
    if (!udp_checksum_verifies(pseudo, datagram)) return fail(FrameErrc::bad_udp_checksum);
  }
  const GsiPayload payload = parse_gsi_payload(datagram.subspan(kUdpHeaderSize));
  if (payload.errc != FrameErrc::ok) return fail(payload.errc);
  f.header = payload.header;
  f.header.udp_src_port = get16(udp);
  f.mad = payload.mad;
  f.icrc = payload.icrc;

  const auto icrc = compute_icrc(ip_packet.first(ip_packet.size() - kIcrcSize));
  if (icrc != f.icrc) result.errc = FrameErrc::bad_icrc;
  return result;
}

}  // namespace fastcm::roce
