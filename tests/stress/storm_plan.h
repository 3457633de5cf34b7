// What each connection of the storm does, decided by its number alone so both sides agree without
// talking: the ports and service it uses, its QPNs, the private data that ties every REQ and REP
// to it, and each side's plan for the endpoint.
//
// Thread contract: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "tests/stress/stress_env.h"

namespace fastcm::stress {

// Client ports cycle fastest, then server ports: every one of the 16 port pairs carries REQs.
[[nodiscard]] constexpr std::size_t client_port_of(std::uint32_t conn) noexcept {
  return conn % kPorts;
}
[[nodiscard]] constexpr std::size_t server_port_of(std::uint32_t conn) noexcept {
  return conn / kPorts % kPorts;
}

// One connection in ten asks for a service the churn thread makes appear and disappear.
[[nodiscard]] constexpr std::uint64_t service_of(std::uint32_t conn) noexcept {
  return conn % 10 == 9 ? kChurnServiceBase + conn / 10 % kChurnServices : kMainService;
}

// Unique QPNs per connection and side: the remote-QPN indexes never see a reuse.
[[nodiscard]] constexpr Qpn client_qpn(std::uint32_t conn) noexcept {
  return 0x10'0000 + (conn & 0xF'FFFF);
}
[[nodiscard]] constexpr Qpn server_qpn(std::uint32_t conn) noexcept {
  return 0x80'0000 | client_qpn(conn);
}

enum ClientPlan : std::uint8_t {
  complete,         // the client thread destroys it once the attempt ended (DREQ if established)
  complete_inline,  // the callback that ends the attempt destroys it (DREQ/DREP/nothing)
  abandon_now,      // destroyed right after send_req (REJ timeout to the server)
  abandon_later,    // destroyed by the client thread once a callback started, or soon anyway
  abandon_in_callback,  // destroyed by the reaper while its rep_received callback waits for it
};

[[nodiscard]] constexpr ClientPlan client_plan(std::uint32_t conn) noexcept {
  switch (conn * 7 % 20) {
    case 0:
      return abandon_now;
    case 1:
    case 2:
      return abandon_later;
    case 3:
    case 4:
      return abandon_in_callback;
    default:
      return conn % 2 == 0 ? complete : complete_inline;
  }
}

enum ServerPlan : std::uint8_t {
  accept,                 // REP; waits for the client's DREQ
  accept_and_disconnect,  // REP; destroys at RTU (the server sends the DREQ)
  reject,                 // consumer REJ, then destroyed
  destroy_at_req,         // destroyed inside the REQ callback without an answer (REJ)
  reaper_at_req,          // handed to the reaper inside the REQ callback, which waits for it
  reaper_later,           // handed to the reaper without waiting
};

[[nodiscard]] constexpr ServerPlan server_plan(std::uint32_t conn) noexcept {
  switch (conn * 11 % 20) {
    case 0:
    case 1:
    case 2:
      return reject;
    case 3:
      return destroy_at_req;
    case 4:
      return reaper_at_req;
    case 5:
      return reaper_later;
    case 6:
    case 7:
    case 8:
      return accept_and_disconnect;
    default:
      return accept;
  }
}

// Terminal events: destroyed inside the callback for even connections, by the reaper for odd ones.
[[nodiscard]] constexpr bool destroy_inline(std::uint32_t conn) noexcept { return conn % 2 == 0; }

// Private data of a REQ (client QPN) and of its REP (server QPN): a magic word, the connection
// number and the QPN, so a message delivered to the wrong endpoint is caught.
inline constexpr std::uint32_t kReqMagic = 0x5175'0ECA;
inline constexpr std::uint32_t kRepMagic = 0x5175'0E9A;
using Tag = std::array<std::uint8_t, 12>;

[[nodiscard]] inline Tag make_tag(std::uint32_t magic, std::uint32_t conn, Qpn qpn) {
  Tag tag{};
  const std::array<std::uint32_t, 3> words{magic, conn, qpn};
  std::memcpy(tag.data(), words.data(), tag.size());
  return tag;
}

// The connection number a tag names, or nullopt when the data is not a well-formed `magic` tag.
[[nodiscard]] inline std::optional<std::uint32_t> read_tag(std::span<const std::uint8_t> data,
                                                           std::uint32_t magic,
                                                           Qpn (*qpn_of)(std::uint32_t)) {
  if (data.size() < Tag{}.size()) return std::nullopt;
  std::array<std::uint32_t, 3> words{};
  std::memcpy(words.data(), data.data(), Tag{}.size());
  if (words[0] != magic || words[2] != qpn_of(words[1])) return std::nullopt;
  return words[1];
}

}  // namespace fastcm::stress
