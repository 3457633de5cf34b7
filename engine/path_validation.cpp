// Checks of a received REQ's paths against the receiving port, as rows of IBTA Vol. 1 Table 109.
//
// Every rule's ARI is a value of the rejecting port that the sender could use instead, in the
// field's own encoding: the ARI column of Table 109, laid out as Solaris' ibcm_copy_addl_rej()
// reads it (a GID in 16 bytes, a LID in 2 big-endian bytes, an 8-bit field in one byte, a narrower
// field in the top bits of byte 0). Linux sends the port's GID at index 0 with "invalid GID".
//
// Reasons never produced, because no value of the field can be wrong for a port described by
// PortAttr: invalid SL (14/20: every 4-bit SL exists; PortAttr has no SL-to-VL table), invalid
// traffic class (15/21) and invalid flow label (32/33): any 8-bit class and 20-bit label is legal.
#include "engine/path_validation.h"

#include <algorithm>
#include <array>
#include <span>

#include "engine/mad/units.h"
#include "engine/path_convert.h"

namespace fastcm::engine {

namespace {

using mad::RejReason;

// The primary path and the alternate differ only in which reason code of a pair they fail with.
enum class PathRole : std::uint8_t { primary = 0, alternate = 1 };

// What a path rule looks at. The path's fields are the sender's view: "remote port" is ours.
struct PathView {
  const mad::PathFields& path;
  PKey partition_key;  // the REQ's, shared by both paths
  const PortAttr& port;
};

// ---- ARI: a value this port accepts -------------------------------------------------------------

PathRejection with_ari(RejReason reason, std::span<const std::uint8_t> ari) noexcept {
  PathRejection r;
  r.reason = reason;
  std::copy(ari.begin(), ari.end(), r.ari.begin());
  r.ari_length = static_cast<std::uint8_t>(ari.size());
  return r;
}

// The port's default GID (index 0), as Linux sends it; no ARI when the port has no GID.
PathRejection acceptable_gid(RejReason reason, const PortAttr& port) noexcept {
  const auto gids = port.gids();
  if (gids.empty()) return with_ari(reason, {});
  return with_ari(reason, gids.front().raw);
}

// The port's base LID, big-endian.
PathRejection acceptable_lid(RejReason reason, const PortAttr& port) noexcept {
  const std::array<std::uint8_t, 2> ari{static_cast<std::uint8_t>(port.lid >> 8),
                                        static_cast<std::uint8_t>(port.lid)};
  return with_ari(reason, ari);
}

// Any hop limit above 1 crosses a router; the largest survives the longest route.
inline constexpr std::uint8_t kMaxHopLimit = 0xFF;

PathRejection acceptable_hop_limit(RejReason reason, const PortAttr& /*port*/) noexcept {
  const std::array<std::uint8_t, 1> ari{kMaxHopLimit};
  return with_ari(reason, ari);
}

// The port's active rate: a 6-bit rate code in bits 7..2 of byte 0.
PathRejection acceptable_rate(RejReason reason, const PortAttr& port) noexcept {
  const std::array<std::uint8_t, 1> ari{static_cast<std::uint8_t>(port.active_rate << 2)};
  return with_ari(reason, ari);
}

// The port's active MTU: a 4-bit MTU code in bits 7..4 of byte 0.
PathRejection acceptable_mtu(RejReason reason, const PortAttr& port) noexcept {
  const std::array<std::uint8_t, 1> ari{static_cast<std::uint8_t>(port.active_mtu << 4)};
  return with_ari(reason, ari);
}

// ---- Rules: true when the path can be used from the port ----------------------------------------

// A path uses a GRH when it is not subnet local, when its hop limit is above 1, and always on RoCE.
bool uses_grh(const PathView& v) noexcept {
  return !v.path.subnet_local || v.path.hop_limit > 1 || v.port.link_layer == LinkLayer::ethernet;
}

// Without a GRH nothing addresses a GID, so only a GRH path names one that must be ours.
bool gid_is_ours(const PathView& v) noexcept {
  const auto gids = v.port.gids();
  return !uses_grh(v) || std::find(gids.begin(), gids.end(), v.path.remote_port_gid) != gids.end();
}

// IBTA 10.9.3: two P_Keys match when their low 15 bits are equal, non-zero (0x0000 and 0x8000 are
// invalid), and at least one of the two is a full member (top bit set).
bool pkeys_match(PKey ours, PKey theirs) noexcept {
  constexpr PKey kBase = 0x7FFF;
  constexpr PKey kFull = 0x8000;
  const bool same_partition = (ours & kBase) == (theirs & kBase) && (ours & kBase) != 0;
  return same_partition && ((ours | theirs) & kFull) != 0;
}

// Table 109 has no P_Key reason. Linux' cm_init_av_by_path() fails, per path, on a partition key
// missing from that path's port, and cm_req_handler() answers any such failure with "invalid GID"
// (alternate: "invalid alternate GID"): we do the same, so a peer learns at once rather than after
// its REQ retries time out.
bool partition_is_ours(const PathView& v) noexcept {
  const auto keys = v.port.pkeys();
  return std::any_of(keys.begin(), keys.end(),
                     [&](PKey ours) { return pkeys_match(ours, v.partition_key); });
}

// On InfiniBand a subnet-local path names one of the LIDs the port owns: [lid, lid + 2^LMC).
// Ethernet ports have no LIDs. On a routed path the LIDs are not ours to check: each side's LIDs
// live in its own subnet, and Linux sends the permissive LID 0xFFFF there.
bool lid_is_ours(const PathView& v) noexcept {
  if (v.port.link_layer == LinkLayer::ethernet || !v.path.subnet_local) return true;
  constexpr unsigned kMaxLmc = 7;  // PortInfo:LMC is 3 bits
  const std::uint32_t first = v.port.lid;
  const std::uint32_t end = first + (std::uint32_t{1} << std::min<unsigned>(v.port.lmc, kMaxLmc));
  return v.path.remote_port_lid >= first && v.path.remote_port_lid < end;
}

// A routed path's packets cross a router, and a router discards a packet that arrives with a hop
// limit of 0 or 1 (the GRH follows IPv6, RFC 8200). Linux sets Subnet Local exactly when the hop
// limit is 1 or less (cm_format_req), so it never sends such a routed path. The converse, a
// subnet-local path with a hop limit above 1, only adds a GRH inside the subnet and is accepted.
bool hop_limit_leaves_subnet(const PathView& v) noexcept {
  return v.path.subnet_local || v.path.hop_limit > 1;
}

// A path cannot be faster than the port's link. Rate codes are not ordered, so compare in Mb/s.
// Code 0 ("port current") is 0 Mb/s and always fits; a port with no known rate constrains nothing.
bool rate_within_port(const PathView& v) noexcept {
  const std::uint32_t port_mbps = mad::packet_rate_to_mbps(v.port.active_rate);
  return port_mbps == 0 || mad::packet_rate_to_mbps(v.path.packet_rate) <= port_mbps;
}

// One row of Table 109 as applied to a path: its primary and alternate codes, the test, the ARI.
struct PathRule {
  std::array<RejReason, 2> reasons;  // indexed by PathRole
  bool (*accepts)(const PathView&) noexcept;
  PathRejection (*reject)(RejReason, const PortAttr&) noexcept;
};

// In the order a path is checked: whether the port is the path's end at all (GID, partition, LID),
// then whether the path's packets can reach it (hop limit), then the speed (packet rate).
constexpr std::array<PathRule, 5> kPathRules{{
    // 12/18 Invalid (Alternate) GID
    {{RejReason::invalid_gid, RejReason::invalid_alt_gid}, gid_is_ours, acceptable_gid},
    // 12/18 again for the partition key, as Linux answers it
    {{RejReason::invalid_gid, RejReason::invalid_alt_gid}, partition_is_ours, acceptable_gid},
    // 13/19 Invalid (Alternate) LID
    {{RejReason::invalid_lid, RejReason::invalid_alt_lid}, lid_is_ours, acceptable_lid},
    // 16/22 Invalid (Alternate) Hop Limit
    {{RejReason::invalid_hop_limit, RejReason::invalid_alt_hop_limit}, hop_limit_leaves_subnet,
     acceptable_hop_limit},
    // 17/23 Invalid (Alternate) Packet Rate
    {{RejReason::invalid_packet_rate, RejReason::invalid_alt_packet_rate}, rate_within_port,
     acceptable_rate},
}};

std::optional<PathRejection> first_path_failure(const PathView& v, PathRole role) noexcept {
  for (const PathRule& rule : kPathRules) {
    if (!rule.accepts(v)) return rule.reject(rule.reasons[static_cast<std::size_t>(role)], v.port);
  }
  return std::nullopt;
}

// Table 109 row 26: the REQ's path MTU (one for both paths) must fit the port's active MTU. A port
// with no valid MTU code constrains nothing.
bool mtu_within_port(const mad::Req& req, const PortAttr& port) noexcept {
  return !mad::is_valid_mtu_code(port.active_mtu) ||
         static_cast<std::uint8_t>(req.path_packet_payload_mtu) <= port.active_mtu;
}

}  // namespace

// Everything the primary connection needs (its path, then the MTU) before the optional alternate:
// a sender whose alternate alone is rejected can retry without it.
std::optional<PathRejection> validate_req_paths(const mad::Req& req,
                                                const PortAttr& port) noexcept {
  if (auto bad = first_path_failure({req.primary, req.partition_key, port}, PathRole::primary)) {
    return bad;
  }
  if (!mtu_within_port(req, port)) return acceptable_mtu(RejReason::invalid_mtu, port);
  if (!has_path(req.alternate)) return std::nullopt;
  return first_path_failure({req.alternate, req.partition_key, port}, PathRole::alternate);
}

}  // namespace fastcm::engine
