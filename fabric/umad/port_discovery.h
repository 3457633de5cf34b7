// Finding a device's ports and their attributes for the umad fabric: libibumad (umad_get_ca) for
// what every umad device has, libibverbs for what only a verbs device knows (GID types, MTU, CA
// limits), sysfs and UmadConfig's fallbacks where there is no verbs device (ibsim's simulated
// CA: umad only, GID 0 only, no MTU or GID types).
//
// Thread contract: any thread; blocks on sysfs reads and device opens (control path only).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fabric/umad/umad_fabric.h"
#include "fastcm/fabric.h"

namespace fastcm::umad {

enum class GidType : std::uint8_t { ib, roce_v1, roce_v2 };

// What PortAttr's GID table cannot hold: where entry i of PortAttr::gid_table sits in the HCA's
// table (RoCE tables have holes, which PortAttr's compact table skips) and its type.
struct GidEntryInfo {
  std::uint8_t hw_index = 0;
  GidType type = GidType::ib;
};

struct DiscoveredPort {
  PortAttr attr;
  std::array<GidEntryInfo, kMaxPortGids> gid_info{};
  PortAttrSources sources;
};

// Finds `config.device` (or the first CA) and the ports `config.ports` (or every active one).
// Returns false with `error` set to one line (cause and fix) when the device or a port is missing
// or a named port is not active.
[[nodiscard]] bool discover_ports(const UmadConfig& config, std::string& device, std::vector<DiscoveredPort>& out,
                                  std::string& error);

}  // namespace fastcm::umad
