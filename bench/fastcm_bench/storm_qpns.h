// How the storm names its connections on the wire: connection i's client QP is
// kClientQpnBase + i (wrapping after kQpnSpan, far below 2^23 and long after the QP's connection is
// gone); the server's QP for it is the client's with kServerQpnBit set (also for an rdma_cm
// client, whose QPNs are its own). The listen reads a connection's number back from the REQ's QPN
// (ReqLedger). REQs from outside the storm (--flood-rate's flood and its recovery probe) use QPNs
// with kServerQpnBit set, which no storm client uses: the listen accepts them without the ledger.
#pragma once

#include <cstdint>
#include <optional>

#include "fastcm/types.h"

namespace fastcm::bench {

inline constexpr Qpn kServerQpnBit = 0x80'0000;
inline constexpr Qpn kClientQpnBase = 0x100;
inline constexpr std::uint64_t kQpnSpan = kServerQpnBit - kClientQpnBase;

[[nodiscard]] constexpr Qpn client_qpn(std::uint64_t connection) noexcept {
  return kClientQpnBase + static_cast<Qpn>(connection % kQpnSpan);
}

// The number of the connection whose client QP is `qpn` (the first of those that share it, in a
// run longer than kQpnSpan); nullopt for a QPN the storm never gives out.
[[nodiscard]] constexpr std::optional<std::uint64_t> connection_of(Qpn qpn) noexcept {
  if (qpn < kClientQpnBase || qpn >= kServerQpnBit) return std::nullopt;
  return qpn - kClientQpnBase;
}

// The flood's REQ `n` (wrapping after kFloodQpnSpan, above the 2 million of a 10 s flood at
// 200,000 per second) and the recovery probe's attempt `n`.
inline constexpr Qpn kFloodQpnSpan = 0x40'0000;
[[nodiscard]] constexpr Qpn flood_qpn(std::uint64_t n) noexcept {
  return kServerQpnBit | static_cast<Qpn>(n % kFloodQpnSpan);
}
[[nodiscard]] constexpr Qpn probe_qpn(std::uint64_t n) noexcept {
  return kServerQpnBit | kFloodQpnSpan | static_cast<Qpn>(n % kFloodQpnSpan);
}
// Whether `qpn` is one of the two above (a REQ from outside the storm).
[[nodiscard]] constexpr bool outside_storm(Qpn qpn) noexcept { return (qpn & kServerQpnBit) != 0; }

}  // namespace fastcm::bench
