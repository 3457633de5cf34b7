// How long the CM waits, from the encoded timeouts of chapter 12 (all 4.096 µs · 2^t exponents).
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/mad/units.h"

namespace fastcm::engine {

// The wait for the answer to a request: the round trip over the path plus the time the peer said
// it needs to answer (REQ: remote CM response timeout; REP: the REQ's local CM response timeout).
[[nodiscard]] constexpr std::uint64_t response_wait_ns(std::uint8_t packet_life_time,
                                                       std::uint8_t response_timeout) noexcept {
  return 2 * mad::timeout_exponent_to_ns(packet_life_time) + mad::timeout_exponent_to_ns(response_timeout);
}

// The wait after an MRA: the service time the peer asked for plus one packet life time.
[[nodiscard]] constexpr std::uint64_t mra_wait_ns(std::uint8_t packet_life_time,
                                                  std::uint8_t service_timeout) noexcept {
  return mad::timeout_exponent_to_ns(service_timeout) + mad::timeout_exponent_to_ns(packet_life_time);
}

// The local ACK timeout of a path (the REQ's "local ACK timeout" field): a round trip of packet
// life times plus the CA's ACK delay, rounded up to an exponent.
[[nodiscard]] constexpr std::uint8_t local_ack_timeout(std::uint8_t ca_ack_delay,
                                                       std::uint8_t packet_life_time) noexcept {
  return mad::ns_to_timeout_exponent(2 * mad::timeout_exponent_to_ns(packet_life_time) +
                                     mad::timeout_exponent_to_ns(ca_ack_delay));
}

// The packet life time a passive side infers from a received local ACK timeout (the inverse of
// local_ack_timeout for a CA ACK delay below the packet life time).
[[nodiscard]] constexpr std::uint8_t packet_life_time_from_ack_timeout(std::uint8_t ack_timeout) noexcept {
  return static_cast<std::uint8_t>(std::max(ack_timeout, std::uint8_t{1}) - 1);
}

// When the engine MRAs on the application's behalf: `fraction` of the peer's wait.
[[nodiscard]] constexpr std::uint64_t auto_mra_delay_ns(double fraction, std::uint8_t peer_timeout) noexcept {
  return static_cast<std::uint64_t>(fraction * static_cast<double>(mad::timeout_exponent_to_ns(peer_timeout)));
}

}  // namespace fastcm::engine
