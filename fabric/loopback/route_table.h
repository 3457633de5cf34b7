// The loopback switch's forwarding table: which port owns a destination LID or GID.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "fastcm/fabric.h"

namespace fastcm::loopback {

// A destination: the fabric-wide port index, and the index of the matched GID in that port's GID
// table (0 for a LID route).
struct Route {
  std::uint32_t port = 0;
  std::uint8_t gid_index = 0;
};

// Built once from validated port attributes; read-only afterwards, so lookups are safe from any
// number of threads at once and never allocate.
class RouteTable {
 public:
  // `ports` in fabric-wide order; LID ranges and GIDs must be unique (LoopbackConfig::validate).
  explicit RouteTable(std::span<const PortAttr> ports);

  // The InfiniBand port whose LID range holds `lid`; nullopt for LID 0, multicast and permissive
  // LIDs, and LIDs no port owns.
  // Inline: one table read on every sent MAD.
  [[nodiscard]] std::optional<Route> by_lid(Lid lid) const noexcept {
    if (lid >= lid_owner_.size() || lid_owner_[lid] == kNoPort) return std::nullopt;
    return Route{.port = lid_owner_[lid] - 1, .gid_index = 0};
  }

  // The port whose GID table holds `gid`; nullopt when none does.
  [[nodiscard]] std::optional<Route> by_gid(const Gid& gid) const noexcept;

 private:
  static constexpr std::uint32_t kNoPort = 0;  // lid_owner_ holds fabric-wide port index + 1
  std::vector<std::uint32_t> lid_owner_;       // indexed by LID, 0..0xbfff
  std::vector<std::pair<Gid, Route>> gids_;    // sorted by GID
};

}  // namespace fastcm::loopback
