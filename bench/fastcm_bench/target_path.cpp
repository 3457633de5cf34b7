#include "bench/fastcm_bench/target_path.h"

#include <algorithm>

#include "fabric/roce_udp/rocev2_frame.h"

namespace fastcm::bench {

namespace {

constexpr PKey kDefaultPKey = 0xFFFF;

// The port's GID a RoCE REQ to `remote` leaves from: `source`'s when the port has it, else the
// first of the same kind as `remote` (RoCE v2 over IPv4 needs an IPv4-mapped source), else GID 0.
Gid roce_source_gid(const PortAttr& port, const Gid& remote, const std::optional<IpAddress>& source) {
  const auto gids = port.gids();
  if (gids.empty()) return Gid{};
  if (source) {
    const auto own = std::find(gids.begin(), gids.end(), source->gid());
    if (own != gids.end()) return *own;
  }
  const auto same_kind = std::find_if(gids.begin(), gids.end(), [&](const Gid& g) {
    return roce::is_ipv4_mapped(g) == roce::is_ipv4_mapped(remote) && g != Gid{};
  });
  return same_kind != gids.end() ? *same_kind : gids.front();
}

}  // namespace

std::optional<Path> target_path(const PortAttr& local, const Target& target,
                                const std::optional<IpAddress>& source_ip, std::string& error) {
  const bool roce = local.link_layer == LinkLayer::ethernet;
  if (!target.gid) {
    error = "the target needs a GID (--target-gid, or on RoCE --target-ip)";
    return std::nullopt;
  }
  if (roce && target.lid) {
    error = "--target-lid: port " + std::to_string(local.port_num) +
            " is RoCE (Ethernet), which has no LIDs; name the listen by its GID alone";
    return std::nullopt;
  }
  if (!roce && !target.lid) {
    error = "port " + std::to_string(local.port_num) +
            " is InfiniBand: without an SA query the REQ needs both the listen's LID "
            "(--target-lid) and its GID (--target-gid)";
    return std::nullopt;
  }
  Path p;
  p.local_lid = local.lid;
  p.remote_lid = roce ? local.lid : *target.lid;
  p.remote_gid = *target.gid;
  p.local_gid = roce ? roce_source_gid(local, p.remote_gid, source_ip)
                     : (local.gids().empty() ? Gid{} : local.gids().front());
  p.hop_limit = roce ? kRoceHopLimit : 0;
  p.subnet_local = p.hop_limit <= 1;
  p.mtu = local.active_mtu;
  p.port = local.port_num;
  p.pkey = local.pkeys().empty() ? kDefaultPKey : local.pkeys().front();
  return p;
}

}  // namespace fastcm::bench
