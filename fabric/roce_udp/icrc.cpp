#include "fabric/roce_udp/icrc.h"

#include <zlib.h>

#include <algorithm>
#include <array>

namespace fastcm::roce {
namespace {

constexpr std::size_t kIpv4MinHeader = 20;
constexpr std::size_t kIpv4MaxHeader = 60;
constexpr std::size_t kIpv6Header = 40;
constexpr std::size_t kUdpHeader = 8;
constexpr std::size_t kBth = 12;
constexpr std::size_t kLrhStandIn = 8;

// Masked offsets, relative to the start of their header.
constexpr std::size_t kIpv4Tos = 1;
constexpr std::size_t kIpv4Ttl = 8;
constexpr std::size_t kIpv4Checksum = 10;
constexpr std::size_t kIpv6Hop = 7;
constexpr std::size_t kUdpChecksum = 6;
constexpr std::size_t kBthResv8a = 4;

}  // namespace

std::optional<std::uint32_t> compute_icrc(std::span<const std::uint8_t> ip_packet) noexcept {
  if (ip_packet.empty()) return std::nullopt;
  const unsigned version = ip_packet[0] >> 4U;
  std::size_t ip_header = 0;
  if (version == 4) {
    ip_header = static_cast<std::size_t>(ip_packet[0] & 0x0FU) * 4U;
    if (ip_header < kIpv4MinHeader) return std::nullopt;
  } else if (version == 6) {
    ip_header = kIpv6Header;
  } else {
    return std::nullopt;
  }
  const std::size_t masked_len = ip_header + kUdpHeader + kBth;
  if (ip_packet.size() < masked_len) return std::nullopt;

  // The masked headers are rewritten in a copy so the caller's frame stays const.
  std::array<std::uint8_t, kIpv4MaxHeader + kUdpHeader + kBth> masked{};
  std::copy_n(ip_packet.begin(), masked_len, masked.begin());
  if (version == 4) {
    masked[kIpv4Tos] = 0xFF;
    masked[kIpv4Ttl] = 0xFF;
    masked[kIpv4Checksum] = 0xFF;
    masked[kIpv4Checksum + 1] = 0xFF;
  } else {
    // Version stays; the 8-bit traffic class and 20-bit flow label behind it become ones.
    masked[0] |= 0x0FU;
    masked[1] = 0xFF;
    masked[2] = 0xFF;
    masked[3] = 0xFF;
    masked[kIpv6Hop] = 0xFF;
  }
  masked[ip_header + kUdpChecksum] = 0xFF;
  masked[ip_header + kUdpChecksum + 1] = 0xFF;
  masked[ip_header + kUdpHeader + kBthResv8a] = 0xFF;

  constexpr std::array<std::uint8_t, kLrhStandIn> lrh{0xFF, 0xFF, 0xFF, 0xFF,
                                                      0xFF, 0xFF, 0xFF, 0xFF};
  uLong crc = crc32_z(0, lrh.data(), lrh.size());
  crc = crc32_z(crc, masked.data(), masked_len);
  // zlib treats a null buffer as "return the initial value", so an empty tail is skipped.
  const auto rest = ip_packet.subspan(masked_len);
  if (!rest.empty()) crc = crc32_z(crc, rest.data(), rest.size());
  return static_cast<std::uint32_t>(crc);
}

bool write_icrc(std::span<std::uint8_t> ip_packet) noexcept {
  if (ip_packet.size() < kIcrcSize) return false;
  const std::size_t covered = ip_packet.size() - kIcrcSize;
  const std::optional<std::uint32_t> icrc = compute_icrc(ip_packet.first(covered));
  if (!icrc) return false;
  for (std::size_t i = 0; i < kIcrcSize; ++i) {
    ip_packet[covered + i] = static_cast<std::uint8_t>(*icrc >> (8 * i));
  }
  return true;
}

}  // namespace fastcm::roce
