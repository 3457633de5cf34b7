// The address of the peer's CM (its QP1) along a path, for the requests an active side starts:
// REQ and SIDR_REQ. Answers go back where their request came from (the received MAD's address).
#pragma once

#include <cstdint>

#include "engine/port_lookup.h"
#include "fastcm/fabric.h"
#include "fastcm/params.h"

namespace fastcm::engine {

// MADs to the peer along `path`, leaving local port `port` (fabric index `port_index`) under the
// P_Key at `pkey_index`. Pure function.
[[nodiscard]] inline MadAddress address_along(const Path& path, std::uint16_t port_index, const PortAttr& port,
                                              std::uint16_t pkey_index) noexcept {
  MadAddress a;
  a.port_index = port_index;
  a.remote_lid = path.remote_lid;
  a.pkey_index = pkey_index;
  a.sl = path.sl;
  a.grh.present = uses_grh(path, port);
  a.grh.gid_index = gid_index_of(port, path.local_gid);
  a.grh.hop_limit = path.hop_limit;
  a.grh.traffic_class = path.traffic_class;
  a.grh.flow_label = path.flow_label;
  a.grh.remote_gid = path.remote_gid;
  return a;
}

}  // namespace fastcm::engine
