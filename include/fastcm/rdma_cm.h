// rdma_cm interoperability: the service IDs of rdma_cm's port spaces and the IP header that opens
// the private data of its REQ and SIDR_REQ (IBTA Vol. 1 Annex A11 "RDMA IP CM Service", as Linux
// rdma_cm speaks it), so an rdma_cm client can connect to a fastcm listen and a fastcm client to
// an rdma_cm listener.
//
// An rdma_cm client connecting to IP address D, port P of port space S sends a REQ with service
// ID service_id(S, P) and private data = IP header (its own address and port, and D) + up to
// kMaxReqConsumerData bytes of its application's data. A fastcm listen on service_id(S, P) takes
// that port, one with service_id(S, 0) under kAllPortsMask every port of S; decode_private_data()
// then yields the peer's addresses, its port and its data.
// REP, REJ, RTU and the other messages carry no header: rdma_cm hands their private data as is.
// A port space of AF_IB addressing (RDMA_PS_IB with a native InfiniBand address) puts no header
// in the REQ either; the header is for IP-addressed connections.
//
// Thread contract: pure functions and plain data; any thread. Nothing allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>

#include "fastcm/params.h"

namespace fastcm::rdma_cm {

// ---- service IDs --------------------------------------------------------------------------------

// = enum rdma_port_space of librdmacm (RDMA_PS_*).
enum class PortSpace : std::uint16_t { ipoib = 0x0002, tcp = 0x0106, udp = 0x0111, ib = 0x013F };

// The service ID of (port space, port): the port space in bits 31..16, the port in bits 15..0, as
// Linux' rdma_get_service_id() computes it. The 0x01 high byte of TCP, UDP and IB puts their IDs
// in Annex A11's range 0x0000000001xxxxxx (the byte after it is the IP protocol: 0x06 TCP,
// 0x11 UDP, 0x3F "any"); IPoIB's IDs (0x00000000 0002xxxx) lie outside that range.
[[nodiscard]] constexpr std::uint64_t service_id(PortSpace port_space, std::uint16_t port) noexcept {
  return std::uint64_t{static_cast<std::uint16_t>(port_space)} << 16 | port;
}

// The service mask that matches every port of one port space (librdmacm's RDMA_IB_IP_PS_MASK):
// listen with service_id(space, 0) under it.
inline constexpr std::uint64_t kAllPortsMask = 0xFFFF'FFFF'FFFF'0000;

struct ServiceAddress {
  PortSpace port_space = PortSpace::tcp;
  std::uint16_t port = 0;

  friend constexpr bool operator==(const ServiceAddress&, const ServiceAddress&) = default;
};

// The port space and port of an rdma_cm service ID; nullopt when `sid` is not one: a bit above 31
// set, or bits 31..16 naming no port space above.
[[nodiscard]] constexpr std::optional<ServiceAddress> parse_service_id(std::uint64_t sid) noexcept {
  if ((sid >> 32) != 0) return std::nullopt;
  const auto space = static_cast<std::uint16_t>(sid >> 16);
  for (const PortSpace known : {PortSpace::ipoib, PortSpace::tcp, PortSpace::udp, PortSpace::ib}) {
    if (space == static_cast<std::uint16_t>(known)) {
      return ServiceAddress{known, static_cast<std::uint16_t>(sid)};
    }
  }
  return std::nullopt;
}

// ---- the private-data IP header ------------------------------------------------------------------

// Bytes of the header: version (1), IP version (1), source port (2), source and destination
// addresses (16 each).
inline constexpr std::size_t kIpHeaderSize = 36;
// What is left for the application's data after the header.
inline constexpr std::size_t kMaxReqConsumerData = kMaxReqPrivateData - kIpHeaderSize;          // 56
inline constexpr std::size_t kMaxSidrReqConsumerData = kMaxSidrReqPrivateData - kIpHeaderSize;  // 180

enum class IpVersion : std::uint8_t { v4 = 4, v6 = 6 };

using Ipv4Address = std::array<std::uint8_t, 4>;   // network byte order, as in struct in_addr
using Ipv6Address = std::array<std::uint8_t, 16>;  // as in struct in6_addr

// The header's fields in host terms. Addresses keep the wire's 16-byte form: an IPv4 address sits
// in bytes 12..15 (Linux writes zeros before it and ignores them on receive; decoding keeps
// whatever arrived). The destination port is not here: it is the service ID's.
struct IpHeader {
  IpVersion ip_version = IpVersion::v4;
  std::uint16_t src_port = 0;  // the sender's port, host order
  Ipv6Address src_addr{};      // the sender's address
  Ipv6Address dst_addr{};      // the address the sender connects to

  [[nodiscard]] static constexpr IpHeader ipv4(const Ipv4Address& src, const Ipv4Address& dst,
                                               std::uint16_t src_port) noexcept {
    IpHeader h;
    h.ip_version = IpVersion::v4;
    h.src_port = src_port;
    for (std::size_t i = 0; i < 4; ++i) {
      h.src_addr[12 + i] = src[i];
      h.dst_addr[12 + i] = dst[i];
    }
    return h;
  }
  [[nodiscard]] static constexpr IpHeader ipv6(const Ipv6Address& src, const Ipv6Address& dst,
                                               std::uint16_t src_port) noexcept {
    return IpHeader{IpVersion::v6, src_port, src, dst};
  }
  // The IPv4 addresses (bytes 12..15 of the 16-byte fields); meaningful when ip_version is v4.
  [[nodiscard]] constexpr Ipv4Address src_ipv4() const noexcept { return last4(src_addr); }
  [[nodiscard]] constexpr Ipv4Address dst_ipv4() const noexcept { return last4(dst_addr); }

  friend constexpr bool operator==(const IpHeader&, const IpHeader&) = default;

 private:
  [[nodiscard]] static constexpr Ipv4Address last4(const Ipv6Address& a) noexcept {
    return {a[12], a[13], a[14], a[15]};
  }
};

enum class HeaderStatus : std::uint8_t {
  ok = 0,
  buffer_too_small,  // encode: `out` is shorter than kIpHeaderSize + the consumer data
  too_short,         // decode: fewer than kIpHeaderSize bytes of private data
  bad_version,       // decode: the header's version byte is not 0 (Linux answers -EINVAL)
  bad_ip_version,    // the IP version is neither 4 nor 6 (Linux answers -EAFNOSUPPORT)
};

[[nodiscard]] constexpr std::string_view to_string(HeaderStatus s) noexcept {
  switch (s) {
    case HeaderStatus::ok: return "ok";
    case HeaderStatus::buffer_too_small: return "buffer_too_small";
    case HeaderStatus::too_short: return "too_short";
    case HeaderStatus::bad_version: return "bad_version";
    case HeaderStatus::bad_ip_version: return "bad_ip_version";
  }
  return "unknown";
}

// Writes `header` (version 0, reserved bits zero) and then `consumer_data` at the front of `out`,
// and sets `used` to kIpHeaderSize + consumer_data.size(); bytes of `out` past that are left as
// they were. Pass out.first(used) (or a zeroed out of the message's full size) as the REQ's or
// SIDR_REQ's private data. Errors: bad_ip_version (header.ip_version is neither v4 nor v6),
// buffer_too_small; on error nothing is written and `used` is 0. `out` and `consumer_data` must
// not overlap.
[[nodiscard]] HeaderStatus encode_private_data(const IpHeader& header,
                                               std::span<const std::uint8_t> consumer_data,
                                               std::span<std::uint8_t> out, std::size_t& used) noexcept;

// Reads the header at the front of a received REQ's or SIDR_REQ's private data. On success
// `header` holds it and `consumer_data` views every byte after it, within `private_data` (the CM
// carries private data at its full length, so this includes the zero fill after what the peer
// sent). Errors, checked in this order: too_short, bad_version, bad_ip_version; on error `header`
// and `consumer_data` are left as they were.
[[nodiscard]] HeaderStatus decode_private_data(std::span<const std::uint8_t> private_data, IpHeader& header,
                                               std::span<const std::uint8_t>& consumer_data) noexcept;

}  // namespace fastcm::rdma_cm
