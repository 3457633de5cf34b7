// Encoded quantities of the CM wire format, converted to and from units that carry their name.
#pragma once

#include <cstdint>

namespace fastcm::mad {

// IBTA timeouts (CM response timeout, local ACK timeout, MRA service timeout, packet life time) are
// 4.096 µs · 2^t for a 5-bit exponent t.
inline constexpr std::uint8_t kMaxTimeoutExponent = 31;

[[nodiscard]] constexpr std::uint64_t timeout_exponent_to_ns(std::uint8_t exponent) noexcept {
  return std::uint64_t{4096} << (exponent > kMaxTimeoutExponent ? kMaxTimeoutExponent : exponent);
}

// The smallest exponent whose timeout is at least `ns` (31 when even that is shorter).
[[nodiscard]] constexpr std::uint8_t ns_to_timeout_exponent(std::uint64_t ns) noexcept {
  std::uint8_t t = 0;
  while (t < kMaxTimeoutExponent && timeout_exponent_to_ns(t) < ns) ++t;
  return t;
}

// Path MTU codes (the PortInfo MTU encoding used by the REQ): 1 = 256 bytes ... 5 = 4096 bytes.
enum class MtuCode : std::uint8_t { mtu_256 = 1, mtu_512 = 2, mtu_1024 = 3, mtu_2048 = 4, mtu_4096 = 5 };

[[nodiscard]] constexpr bool is_valid_mtu_code(std::uint64_t raw) noexcept { return raw >= 1 && raw <= 5; }

// 0 for a code outside 1..5.
[[nodiscard]] constexpr std::uint32_t mtu_code_to_bytes(std::uint8_t code) noexcept {
  return is_valid_mtu_code(code) ? (std::uint32_t{128} << code) : 0;
}

// The largest MTU code not above `bytes` (0 when below 256).
[[nodiscard]] constexpr std::uint8_t mtu_bytes_to_code(std::uint32_t bytes) noexcept {
  std::uint8_t code = 0;
  while (code < 5 && mtu_code_to_bytes(static_cast<std::uint8_t>(code + 1)) <= bytes) ++code;
  return code;
}

// Static rate codes (IBTA PathRecord Rate / CM Packet Rate): 0 means "port current rate", 1 is
// reserved, 2..25 name link rates that are not in numeric order (2 = 2.5 Gb/s, 3 = 10 Gb/s, ...,
// 25 = 1600 Gb/s, the newest the kernel knows as IB_RATE_1600_GBPS).
inline constexpr std::uint8_t kMaxPacketRateCode = 25;

[[nodiscard]] constexpr bool is_valid_packet_rate(std::uint64_t raw) noexcept {
  return raw != 1 && raw <= kMaxPacketRateCode;
}

// Link rate in Mb/s of a rate code; 0 for "port current" or an invalid code.
[[nodiscard]] constexpr std::uint32_t packet_rate_to_mbps(std::uint8_t code) noexcept {
  constexpr std::uint32_t kMbps[kMaxPacketRateCode + 1] = {
      0,      0,      2500,   10000,  30000,  5000,   20000,  40000,  60000,
      80000,  120000, 14000,  56000,  112000, 168000, 25000,  100000, 200000,
      300000, 28000,  50000,  400000, 600000, 800000, 1200000, 1600000};
  return code <= kMaxPacketRateCode ? kMbps[code] : 0;
}

}  // namespace fastcm::mad
