// Per-port traffic counters of the loopback fabric, as a snapshot.
#pragma once

#include <cstdint>

namespace fastcm::loopback {

// Each field counts MADs since the fabric was built. A snapshot is read field by field while
// traffic may flow, so the fields are each exact but not mutually consistent until traffic stops.
struct PortCounters {
  // Counted at the sending port.
  std::uint64_t sent = 0;              // accepted by send_burst (whatever became of them)
  std::uint64_t no_route = 0;          // no port owns the destination LID or GID
  std::uint64_t invalid_address = 0;   // pkey_index or GRH gid_index outside this port's tables
  std::uint64_t dropped_by_fault = 0;  // lost by a fault rule
  std::uint64_t duplicated = 0;        // MADs a fault rule sent twice (each counts once)
  std::uint64_t delayed = 0;           // MADs a fault rule held back (delay or reorder)
  // Counted at the receiving port.
  std::uint64_t delivered = 0;           // handed to the receiver by recv_burst
  std::uint64_t dropped_queue_full = 0;  // arrived while the receive queue was full
  std::uint64_t dropped_invalid = 0;     // rejected by QP1: destination QP not 1, Q_Key not the
                                         // GSI Q_Key, or P_Key not in this port's table

  friend constexpr bool operator==(const PortCounters&, const PortCounters&) = default;
};

}  // namespace fastcm::loopback
