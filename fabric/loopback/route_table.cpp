#include "fabric/loopback/route_table.h"

#include <algorithm>

namespace fastcm::loopback {
namespace {
constexpr std::size_t kUnicastLids = 0xc000;  // LIDs 0..0xbfff; multicast and permissive above
}  // namespace

RouteTable::RouteTable(std::span<const PortAttr> ports) : lid_owner_(kUnicastLids, kNoPort) {
  for (std::size_t p = 0; p < ports.size(); ++p) {
    const PortAttr& a = ports[p];
    const auto port = static_cast<std::uint32_t>(p);
    if (a.link_layer == LinkLayer::infiniband) {
      const std::size_t first = a.lid;
      const std::size_t count = std::size_t{1} << a.lmc;
      std::fill_n(lid_owner_.begin() + static_cast<std::ptrdiff_t>(first), count, port + 1);
    }
    const auto gids = a.gids();
    for (std::size_t i = 0; i < gids.size(); ++i) {
      gids_.emplace_back(gids[i], Route{.port = port, .gid_index = static_cast<std::uint8_t>(i)});
    }
  }
  std::sort(gids_.begin(), gids_.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
}

std::optional<Route> RouteTable::by_gid(const Gid& gid) const noexcept {
  const auto it = std::lower_bound(gids_.begin(), gids_.end(), gid,
                                   [](const auto& entry, const Gid& g) { return entry.first < g; });
  if (it == gids_.end() || it->first != gid) return std::nullopt;
  return it->second;
}

}  // namespace fastcm::loopback
