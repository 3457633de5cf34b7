// The RoCEv2 invariant CRC (ICRC, IBTA Vol. 1 Annex A17): the CRC-32 that ends every RoCEv2
// packet and covers only the fields no router may rewrite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace fastcm::roce {

inline constexpr std::size_t kIcrcSize = 4;

// Computes the ICRC of `ip_packet`, which runs from the first byte of its IPv4 or IPv6 header
// (chosen by the version nibble) up to, not including, the ICRC itself. The CRC is the Ethernet
// CRC-32 over: 8 bytes of 0xFF standing for the InfiniBand LRH; the IP header with the variant
// fields set to all ones (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow label, hop
// limit); the UDP header with its checksum set to all ones; the BTH with resv8a (FECN/BECN) set
// to all ones; then the rest of the packet unchanged. The value is sent least significant byte
// first, like an Ethernet FCS.
//
// Thread contract: pure function over the caller's bytes, no allocation.
// Errors: std::nullopt when the version nibble is neither 4 nor 6, an IPv4 IHL is below 5, or the
// buffer is too short to hold the IP header, a UDP header and a BTH. It does not check that the
// packet is UDP or that lengths agree: the frame parser does that.
[[nodiscard]] std::optional<std::uint32_t> compute_icrc(
    std::span<const std::uint8_t> ip_packet) noexcept;

// Computes the ICRC of `ip_packet` without its last kIcrcSize bytes and stores it in them, least
// significant byte first. Errors: false, nothing written, when the span is shorter than
// kIcrcSize or compute_icrc() refuses the rest. Thread contract: as compute_icrc().
[[nodiscard]] bool write_icrc(std::span<std::uint8_t> ip_packet) noexcept;

}  // namespace fastcm::roce
