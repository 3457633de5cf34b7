// The client role's path to another process's listen. Without a subnet manager's path record
// (the tool makes no SA query) the REQ's primary path is built from the local port's attributes
// and the target the command line names; the fields it assumes:
// - local LID, GID: the port's base LID and its GID at index 0; on RoCE the port's GID of
//   --source-ip when it has one, else its first GID of the target's kind (IPv4-mapped or not);
// - remote LID, GID: --target-lid and --target-gid (or --target-ip's GID); on RoCE both LIDs are
//   the port's (0: RoCE has none);
// - P_Key: the port's P_Key at index 0 (0xffff, the default partition, when the table is empty);
// - MTU: the local port's active MTU (the remote's is not known; a listen on a port with a
//   smaller MTU answers REJ 26 "invalid MTU" with its own);
// - rate 0 ("port current": a REQ can never be faster than the listen's port), SL 0, traffic
//   class 0, flow label 0, packet life time 0 (4.096 us, a one-switch fabric: it sets the CM's
//   retry waits and time-wait);
// - InfiniBand: hop limit 0 and subnet local (no GRH), as a path record inside one subnet;
//   RoCE: hop limit 64 and not subnet local (every RoCE MAD carries a GRH), as Linux' rdma_cm
//   forms a RoCE route (its Subnet Local bit is set exactly when the hop limit is 1 or less).
#pragma once

#include <optional>
#include <string>

#include "bench/fastcm_bench/ip_address.h"
#include "bench/fastcm_bench/options.h"
#include "fastcm/fabric.h"
#include "fastcm/params.h"

namespace fastcm::bench {

inline constexpr std::uint8_t kRoceHopLimit = 64;

// The path from `local` to `target`. Returns nullopt with `error` set when the target does not
// fit the port's link layer: InfiniBand needs --target-lid and a GID; RoCE takes no LID.
// Thread contract: pure.
[[nodiscard]] std::optional<Path> target_path(const PortAttr& local, const Target& target,
                                              const std::optional<IpAddress>& source_ip,
                                              std::string& error);

}  // namespace fastcm::bench
