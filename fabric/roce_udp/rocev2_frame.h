// RoCEv2 framing of GSI (QP1) MADs: Ethernet / IPv4 or IPv6 / UDP 4791 / BTH / DETH /
// 256-byte MAD / ICRC (IBTA Vol. 1 Annex A17), built into and parsed from caller buffers.
//
// Thread contract for everything here: pure functions over caller-owned memory; nothing
// allocates, blocks or keeps state, so any thread may call them at any time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fabric/roce_udp/icrc.h"
#include "fastcm/types.h"

namespace fastcm::roce {

inline constexpr std::uint16_t kRocev2UdpPort = 4791;
inline constexpr std::uint8_t kUdSendOnlyOpcode = 0x64;
inline constexpr QKey kGsiQKey = 0x80010000;
inline constexpr Qpn kGsiQpn = 1;

inline constexpr std::size_t kEthernetHeaderSize = 14;
inline constexpr std::size_t kIpv4HeaderSize = 20;  // as built: no options
inline constexpr std::size_t kIpv6HeaderSize = 40;
inline constexpr std::size_t kUdpHeaderSize = 8;
inline constexpr std::size_t kBthSize = 12;
inline constexpr std::size_t kDethSize = 8;
inline constexpr std::size_t kMadSize = 256;
inline constexpr std::size_t kUdpPayloadSize = kBthSize + kDethSize + kMadSize + kIcrcSize;

using MacAddress = std::array<std::uint8_t, 6>;

// One side of the packet. A GID of the IPv4-mapped form ::ffff:a.b.c.d stands for the IPv4
// address a.b.c.d (as RoCEv2 GID tables hold it); any other GID is an IPv6 address.
struct RoceEndpoint {
  MacAddress mac{};
  Gid gid{};
  friend constexpr bool operator==(const RoceEndpoint&, const RoceEndpoint&) = default;
};

// The per-packet transport fields. QPNs and the PSN are 24 bits on the wire.
struct RoceGsiHeader {
  std::uint16_t udp_src_port = 0;  // RoCEv2 uses it as flow entropy; the destination is 4791
  PKey pkey = 0xFFFF;
  Qpn dest_qp = kGsiQpn;
  Qpn src_qp = kGsiQpn;
  std::uint32_t psn = 0;
  QKey qkey = kGsiQKey;
  friend constexpr bool operator==(const RoceGsiHeader&, const RoceGsiHeader&) = default;
};

[[nodiscard]] constexpr bool is_ipv4_mapped(const Gid& gid) noexcept {
  for (std::size_t i = 0; i < 10; ++i) {
    if (gid.raw[i] != 0) return false;
  }
  return gid.raw[10] == 0xFF && gid.raw[11] == 0xFF;
}

// The IPv4-mapped GID ::ffff:a.b.c.d of a host-order IPv4 address.
[[nodiscard]] constexpr Gid ipv4_mapped_gid(std::uint32_t ipv4) noexcept {
  Gid g;
  g.raw[10] = 0xFF;
  g.raw[11] = 0xFF;
  for (std::size_t i = 0; i < 4; ++i)
    g.raw[12 + i] = static_cast<std::uint8_t>(ipv4 >> (24 - 8 * i));
  return g;
}

[[nodiscard]] constexpr std::size_t rocev2_frame_size(bool ipv4) noexcept {
  return kEthernetHeaderSize + (ipv4 ? kIpv4HeaderSize : kIpv6HeaderSize) + kUdpHeaderSize +
         kUdpPayloadSize;
}
inline constexpr std::size_t kMaxRocev2FrameSize = rocev2_frame_size(false);

// Writes one frame carrying `mad` from `src` to `dst` into the front of `out` and returns its
// length (rocev2_frame_size of the address family). Fixed fields: no VLAN tag; IPv4 with TOS 0,
// ID 0, DF, TTL 64, a correct header checksum and UDP checksum 0; IPv6 with traffic class 0, flow
// label 0, hop limit 64 and the mandatory UDP checksum (RFC 8200 pseudo-header); BTH opcode UD
// SEND_ONLY with SE, M, pad count, TVer, FECN/BECN and AckReq all 0; a correct ICRC.
// Errors: returns 0 and leaves `out` in an unspecified state when `out` is shorter than the
// frame, when exactly one of the two GIDs is IPv4-mapped, or when dest_qp, src_qp or psn does not
// fit 24 bits.
[[nodiscard]] std::size_t build_rocev2_frame(const RoceEndpoint& src, const RoceEndpoint& dst,
                                             const RoceGsiHeader& header,
                                             std::span<const std::uint8_t, kMadSize> mad,
                                             std::span<std::uint8_t> out) noexcept;

// Why a frame was refused, in the order the parser checks.
enum class FrameErrc : std::uint8_t {
  ok = 0,
  truncated,           // the bytes end before a fixed header or before the IP length's end
  not_ipv4_or_ipv6,    // EtherType (after at most one 802.1Q tag) is neither IPv4 nor IPv6
  bad_ip_header,       // wrong version, IHL < 5, total length < IHL, or an IPv4 fragment
  bad_ip_checksum,     // IPv4 header checksum does not verify
  not_udp_4791,        // not UDP (IPv6 extension headers included), or destination port != 4791
  bad_udp_length,      // UDP length differs from what the IP header leaves for it
  bad_udp_checksum,    // a non-zero UDP checksum does not verify (zero means "none")
  not_ud_send_only,    // the BTH opcode is not 0x64
  bad_payload_length,  // UDP payload is not BTH + DETH + 256-byte MAD + ICRC
  bad_bth,             // pad count or transport header version is not 0
  bad_icrc,            // well formed, but the ICRC does not match: the frame fields ARE filled
};

[[nodiscard]] std::string_view to_string(FrameErrc e) noexcept;

// The pieces build_rocev2_frame() and parse_rocev2_frame() are made of, for transports that put
// only the UDP payload on the wire (a UDP socket) and need the headers the ICRC covers.

// Writes the IP header (no options or extension headers) and UDP header of a GSI packet from
// src:src_port to dst:dst_port into the front of `out` and returns their length (28 for IPv4, 48
// for IPv6). Fixed fields as build_rocev2_frame() writes them, except that both checksums stay 0:
// the ICRC masks them. Errors: returns 0 when `out` is too short or exactly one GID is
// IPv4-mapped.
[[nodiscard]] std::size_t write_ip_udp_headers(const Gid& src, const Gid& dst,
                                               std::uint16_t src_port, std::uint16_t dst_port,
                                               std::span<std::uint8_t> out) noexcept;

inline constexpr std::size_t kGsiHeadersSize = kBthSize + kDethSize;

// Writes the BTH, DETH and `mad` (not the ICRC) into `out`; header.udp_src_port is not used.
// Errors: returns false, writing nothing, when dest_qp, src_qp or psn does not fit 24 bits.
[[nodiscard]] bool write_gsi_payload(const RoceGsiHeader& header,
                                     std::span<const std::uint8_t, kMadSize> mad,
                                     std::span<std::uint8_t, kGsiHeadersSize + kMadSize> out) noexcept;

// A UDP payload read as BTH / DETH / MAD / ICRC. `mad` points into the parsed bytes.
struct GsiPayload {
  FrameErrc errc{};
  RoceGsiHeader header{};  // udp_src_port stays 0: the payload does not hold it
  std::span<const std::uint8_t> mad{};
  std::uint32_t icrc = 0;  // as received, read least significant byte first
};

// Parses one UDP payload. Any QPN, P_Key and Q_Key are accepted; the ICRC is read, not checked.
// Errors (errc, every other field default-valued): not_ud_send_only when the first byte is not
// opcode 0x64, bad_payload_length when the size is not BTH + DETH + MAD + ICRC, bad_bth when the
// pad count or transport header version is not 0. Never reads outside `udp_payload`.
[[nodiscard]] GsiPayload parse_gsi_payload(std::span<const std::uint8_t> udp_payload) noexcept;

// The fields of a parsed frame. `mad` points into the parsed buffer (kMadSize bytes), so it lives
// as long as that buffer; the struct itself owns nothing.
struct ParsedFrame {
  RoceEndpoint src{};
  RoceEndpoint dst{};
  RoceGsiHeader header{};
  std::uint16_t vlan_tci = 0;  // 0 when the frame carries no 802.1Q tag
  std::span<const std::uint8_t> mad{};
  std::uint32_t icrc = 0;  // read least significant byte first, like compute_icrc() returns it
};

struct FrameParse {
  FrameErrc errc = FrameErrc::ok;
  ParsedFrame frame{};  // meaningful when errc is ok or bad_icrc, default-valued otherwise
  [[nodiscard]] bool ok() const noexcept { return errc == FrameErrc::ok; }
};

// Parses and validates one Ethernet frame. Bytes after the end the IP header declares (Ethernet
// padding or a captured FCS) are ignored. Any QPN and Q_Key are accepted: routing on them is the
// caller's business. A frame whose ICRC is wrong comes back as bad_icrc with every field filled,
// so tools can still show it; a receive path must drop anything not ok().
// Errors: the first failing check as a FrameErrc; never reads outside `frame`.
[[nodiscard]] FrameParse parse_rocev2_frame(std::span<const std::uint8_t> frame) noexcept;

}  // namespace fastcm::roce
