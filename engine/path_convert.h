// Between the API's Path (seen from this side) and the wire's path fields (seen from the REQ's or
// LAP's sender), used by REQ and LAP in both directions.
#pragma once

#include <cstdint>

#include "engine/cm_timeouts.h"
#include "engine/mad/cm_messages.h"
#include "fastcm/params.h"

namespace fastcm::engine {

// The sender's wire fields for `path`.
[[nodiscard]] constexpr mad::PathFields to_wire_path(const Path& path, std::uint8_t ca_ack_delay) noexcept {
  mad::PathFields w;
  w.local_port_lid = path.local_lid;
  w.remote_port_lid = path.remote_lid;
  w.local_port_gid = path.local_gid;
  w.remote_port_gid = path.remote_gid;
  w.flow_label = path.flow_label;
  w.packet_rate = path.rate;
  w.traffic_class = path.traffic_class;
  w.hop_limit = path.hop_limit;
  w.sl = path.sl;
  w.subnet_local = path.subnet_local;
  w.local_ack_timeout = local_ack_timeout(ca_ack_delay, path.packet_life_time);
  return w;
}

// The receiver's Path from the sender's wire fields: local and remote swap sides.
[[nodiscard]] constexpr Path from_wire_path(const mad::PathFields& w, std::uint8_t port_num, PKey pkey,
                                            std::uint8_t mtu) noexcept {
  Path p;
  p.local_lid = w.remote_port_lid;
  p.remote_lid = w.local_port_lid;
  p.local_gid = w.remote_port_gid;
  p.remote_gid = w.local_port_gid;
  p.flow_label = w.flow_label;
  p.traffic_class = w.traffic_class;
  p.hop_limit = w.hop_limit;
  p.sl = w.sl;
  p.mtu = mtu;
  p.rate = w.packet_rate;
  p.packet_life_time = packet_life_time_from_ack_timeout(w.local_ack_timeout);
  p.port = port_num;
  p.pkey = pkey;
  p.subnet_local = w.subnet_local;
  return p;
}

// A REQ carries an alternate path when any of its addressing fields is set.
[[nodiscard]] constexpr bool has_path(const mad::PathFields& w) noexcept {
  return w.remote_port_lid != 0 || w.local_port_lid != 0 || w.remote_port_gid != Gid{} ||
         w.local_port_gid != Gid{};
}

}  // namespace fastcm::engine
