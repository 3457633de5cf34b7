// How the storm names its connections on the wire: connection i's client QP is
// kClientQpnBase + i (wrapping after kQpnSpan, far below 2^23 and long after the QP's connection is
// gone); the server's QP for it is the client's with kServerQpnBit set (also for an rdma_cm
// client, whose QPNs are its own). The listen reads a connection's number back from the REQ's QPN
// (ReqLedger).
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

}  // namespace fastcm::bench
