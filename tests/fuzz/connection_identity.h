// What a received CM message must name before it may change a live connection: the oracle of the
// engine-ingress fuzz target's identity invariant (IBTA Vol. 1 chapter 12, issue 13).
//
// A message matches a connection when it names the connection's whole identity, as far as its
// fields carry it, and comes from the connection's path:
//  - our comm ID (the message's remote comm ID; SIDR_REP: its request ID);
//  - the peer's comm ID (its local comm ID) once we know it: the active side learns it from the
//    REP, so a REJ or MRA answering our REQ, or the first REP, cannot be checked for it; a REJ with
//    local comm ID 0 answers a REQ the peer made no endpoint for (req_sent, mra_req_rcvd);
//  - the QPN where carried: DREQ and LAP name our QPN, a REP names the peer's (once known);
//  - the source: the LID of the connection's primary or alternate path's far end, or on the
//    passive side the LID its REQ came from (the fabric stamped it: that sender is the peer), and
//    the connection's P_Key.
// A REQ or a REP also changes a connection it does not name when it says the connection's remote
// QP connected again (stale connection, 12.9.8.3): then it must claim the connection's remote QPN
// and CA GUID and come from its path.
//
// Matching::ours_only checks only our comm ID (what Linux's cm.c does), to fuzz the other
// invariants on an engine that does not match whole identities.
//
// Thread contract: pure functions over caller-owned values.
#pragma once

#include <string_view>
#include <type_traits>
#include <variant>

#include "engine/mad/codec.h"
#include "fastcm/connection_info.h"
#include "fastcm/fabric.h"

namespace fastcm::fuzz {

enum class Matching : std::uint8_t { whole_identity, ours_only };

// Where a received MAD came from, as the receiving port saw it.
struct MadSource {
  Lid lid = 0;
  PKey pkey = 0;
};

// `req_source`: the LID a passive endpoint's REQ came from, 0 when none is known (LID 0 is
// reserved, no port has it).
[[nodiscard]] inline bool from_path(const ConnectionInfo& c, Lid req_source, MadSource s) noexcept {
  const auto on = [s](const Path& p) { return s.lid == p.remote_lid && s.pkey == p.pkey; };
  return on(c.primary) || (c.alternate && on(*c.alternate)) ||
         (req_source != 0 && s.lid == req_source && s.pkey == c.primary.pkey);
}

namespace detail {

[[nodiscard]] inline bool in(std::string_view state,
                             std::initializer_list<std::string_view> states) noexcept {
  for (const std::string_view s : states) {
    if (s == state) return true;
  }
  return false;
}

// The states in which a matching message of type M may change the endpoint (a superset of the
// transitions of the chapter-12 state diagrams: a receiver may still ignore it).
template <typename M>
[[nodiscard]] bool may_change(std::string_view state) noexcept {
  using namespace std::string_view_literals;
  if constexpr (std::is_same_v<M, mad::Mra>) {
    return in(state, {"req_sent"sv, "mra_req_rcvd"sv, "rep_sent"sv, "mra_rep_rcvd"sv,
                      "established"sv});
  } else if constexpr (std::is_same_v<M, mad::Rej>) {
    return !in(state, {"idle"sv, "timewait"sv, "sidr_req_sent"sv, "sidr_req_rcvd"sv});
  } else if constexpr (std::is_same_v<M, mad::Rep>) {
    return in(state, {"req_sent"sv, "mra_req_rcvd"sv});
  } else if constexpr (std::is_same_v<M, mad::Rtu>) {
    return in(state, {"rep_sent"sv, "mra_rep_rcvd"sv});
  } else if constexpr (std::is_same_v<M, mad::Dreq>) {
    return in(state, {"rep_sent"sv, "mra_rep_rcvd"sv, "rep_rcvd"sv, "mra_rep_sent"sv,
                      "established"sv, "dreq_sent"sv});
  } else if constexpr (std::is_same_v<M, mad::Drep>) {
    return in(state, {"dreq_sent"sv, "dreq_rcvd"sv});  // dreq_rcvd: crossed DREQs
  } else if constexpr (std::is_same_v<M, mad::Lap> || std::is_same_v<M, mad::Apr>) {
    return state == "established"sv;
  } else if constexpr (std::is_same_v<M, mad::SidrRep>) {
    return state == "sidr_req_sent"sv;
  } else {
    return false;  // REQ, SIDR_REQ and ClassPortInfo never change an existing endpoint by name
  }
}

}  // namespace detail

// True when `msg`, received from `source`, names the connection `c` (its IDs as they were before
// the message; `req_source` as for from_path), whatever its state.
[[nodiscard]] inline bool names(const ConnectionInfo& c, Lid req_source, const mad::AnyMessage& msg,
                                MadSource source, Matching matching) noexcept {
  const bool whole = matching == Matching::whole_identity;
  const auto theirs = [&](std::uint32_t id) {
    return !whole || c.remote_comm_id == 0 || id == c.remote_comm_id;
  };
  return std::visit(
      [&]<typename M>(const M& m) {
        if (whole && !from_path(c, req_source, source)) return false;
        if constexpr (std::is_same_v<M, mad::SidrRep>) {
          return m.request_id == c.local_comm_id;
        } else if constexpr (requires { m.remote_comm_id; }) {
          if (m.remote_comm_id != c.local_comm_id) return false;
          bool named = theirs(m.local_comm_id);
          if constexpr (std::is_same_v<M, mad::Rej>) {
            named = named || (m.local_comm_id == 0 &&
                              detail::in(to_string(c.state), {"req_sent", "mra_req_rcvd"}));
          }
          if constexpr (std::is_same_v<M, mad::Rep>) {
            named = named && (!whole || c.remote_qpn == 0 || m.local_qpn == c.remote_qpn);
          }
          if constexpr (requires { m.remote_qpn_eecn; }) {
            named = named && (!whole || m.remote_qpn_eecn == c.local_qpn);
          }
          return named;
        } else {
          return false;  // REQ, SIDR_REQ and ClassPortInfo name no existing endpoint
        }
      },
      msg);
}

// names(), and the message may change the connection in its state `c.state`.
[[nodiscard]] inline bool may_change_by_name(const ConnectionInfo& c, Lid req_source,
                                             const mad::AnyMessage& msg, MadSource source,
                                             Matching matching) noexcept {
  const bool valid_in_state =
      std::visit([&]<typename M>(const M&) { return detail::may_change<M>(to_string(c.state)); }, msg);
  return valid_in_state && names(c, req_source, msg, source, matching);
}

// True when `msg` (a REQ or a REP) from `source` says that `c`'s remote QP connected again.
[[nodiscard]] inline bool claims_stale(const ConnectionInfo& c, Lid req_source,
                                       const mad::AnyMessage& msg, MadSource source,
                                       Matching matching) noexcept {
  return std::visit(
      [&]<typename M>(const M& m) {
        if constexpr (std::is_same_v<M, mad::Req> || std::is_same_v<M, mad::Rep>) {
          // Known from the REQ (passive) or the REP (active), whatever its value (a REP may name
          // QP 0); before, the endpoint has no remote QP to claim.
          const bool known = c.remote_qpn != 0 ||
                             !detail::in(to_string(c.state), {"idle", "req_sent", "mra_req_rcvd",
                                                              "sidr_req_sent", "sidr_req_rcvd"});
          return known && m.local_qpn == c.remote_qpn &&
                 m.local_ca_guid == c.remote_ca_guid &&
                 (matching == Matching::ours_only || from_path(c, req_source, source));
        } else {
          return false;
        }
      },
      msg);
}

}  // namespace fastcm::fuzz
