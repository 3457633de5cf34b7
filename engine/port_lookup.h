// Lookups in a port's tables that sending, receiving and QP attributes share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

#include "fastcm/fabric.h"
#include "fastcm/params.h"

namespace fastcm::engine {

// The index of port number `port_num` among the fabric's ports.
[[nodiscard]] inline std::optional<std::uint16_t> port_index_of(std::span<const PortAttr> ports,
                                                                std::uint8_t port_num) noexcept {
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].port_num == port_num) return static_cast<std::uint16_t>(i);
  }
  return std::nullopt;
}

// The P_Key table index of `pkey` (membership bit ignored: a full and a limited member of one
// partition share the low 15 bits).
[[nodiscard]] inline std::optional<std::uint16_t> pkey_index_of(const PortAttr& port, PKey pkey) noexcept {
  const auto keys = port.pkeys();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if ((keys[i] & 0x7FFF) == (pkey & 0x7FFF)) return static_cast<std::uint16_t>(i);
  }
  return std::nullopt;
}

// The GID table index of `gid`, or 0 (the default GID) when the port does not have it.
[[nodiscard]] inline std::uint8_t gid_index_of(const PortAttr& port, const Gid& gid) noexcept {
  const auto gids = port.gids();
  const auto it = std::find(gids.begin(), gids.end(), gid);
  return static_cast<std::uint8_t>(it == gids.end() ? 0 : it - gids.begin());
}

// Whether packets along `path` carry a GRH: always on RoCE, and on InfiniBand when the path leaves
// the subnet.
[[nodiscard]] inline bool uses_grh(const Path& path, const PortAttr& port) noexcept {
  return !path.subnet_local || path.hop_limit > 1 || port.link_layer == LinkLayer::ethernet;
}

}  // namespace fastcm::engine
