// Basic InfiniBand identifiers shared by the public API, the codec and the fabrics.
// All values are held in host byte order; the codec converts at the wire.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstdint>

namespace fastcm {

using Guid = std::uint64_t;  // node (CA) or port GUID
using Lid = std::uint16_t;   // local identifier
using Qpn = std::uint32_t;   // queue pair number, 24 bits on the wire
using PKey = std::uint16_t;  // partition key, top bit = full membership
using QKey = std::uint32_t;

// A 128-bit GID in wire order (byte 0 is the most significant byte of the subnet prefix).
struct Gid {
  std::array<std::uint8_t, 16> raw{};

  // Subnet prefix (bytes 0-7) and interface ID (bytes 8-15) read as big-endian integers.
  [[nodiscard]] constexpr std::uint64_t subnet_prefix() const noexcept { return read_be64(0); }
  [[nodiscard]] constexpr std::uint64_t interface_id() const noexcept { return read_be64(8); }
  [[nodiscard]] static constexpr Gid from_parts(std::uint64_t prefix, std::uint64_t iid) noexcept {
    Gid g;
    for (int i = 0; i < 8; ++i) {
      g.raw[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(prefix >> (56 - 8 * i));
      g.raw[static_cast<std::size_t>(8 + i)] = static_cast<std::uint8_t>(iid >> (56 - 8 * i));
    }
    return g;
  }
  friend constexpr auto operator<=>(const Gid&, const Gid&) = default;
  // Two 64-bit compares, inlined: the defaulted operator calls libc's memcmp, about 1% of a
  // storm's CPU (a handshake compares several GIDs).
  friend constexpr bool operator==(const Gid& a, const Gid& b) noexcept {
    const auto x = std::bit_cast<std::array<std::uint64_t, 2>>(a.raw);
    const auto y = std::bit_cast<std::array<std::uint64_t, 2>>(b.raw);
    return ((x[0] ^ y[0]) | (x[1] ^ y[1])) == 0;
  }

 private:
  [[nodiscard]] constexpr std::uint64_t read_be64(std::size_t at) const noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i) v = (v << 8) | raw[at + i];
    return v;
  }
};

}  // namespace fastcm
