// The CM class's ClassPortInfo attribute (IBTA Vol. 1 13.4.8.1, Table 146): what this CM
// answers when a peer or a management tool asks what it supports.
#include <cstdint>

#include "engine/protocol.h"

namespace fastcm::engine {

namespace {

// Class-specific CapabilityMask bits (8-15) of the CM class: the connection types this CM serves.
// Bit positions as IsReliableConnectionCapable (9), IsReliableDatagramCapable (10),
// IsUnreliableConnectionCapable (12) and IsSIDRCapable (13) in linux-rdma/opensm
// include/iba/ib_cm_types.h (ib_cm_cap_mask_t) and in LiteEth's RoCEv2 CM. RD is not served; the
// generic bits 0-1 (traps, Get/Set Notice) stay clear: the CM sends no traps.
constexpr std::uint16_t kCapReliableConnection = 1u << 9;
constexpr std::uint16_t kCapUnreliableConnection = 1u << 12;
constexpr std::uint16_t kCapSidr = 1u << 13;

// RespTimeValue, 4.096 µs · 2^18 ≈ 1.07 s: the engine answers ClassPortInfo itself on its receive
// path, so this only has to cover queueing in a busy shard. 18 is the subnet timeout opensm gives
// its own agents (OSM_DEFAULT_SUBNET_TIMEOUT, "~1sec").
constexpr std::uint8_t kRespTimeValue = 18;

constexpr mad::ClassPortInfo cm_class_port_info() noexcept {
  mad::ClassPortInfo cpi;  // base version 1, class version 2, no redirection, no trap target
  cpi.capability_mask = kCapReliableConnection | kCapUnreliableConnection | kCapSidr;
  cpi.resp_time_value = kRespTimeValue;
  return cpi;
}

}  // namespace

void Protocol::on_class_port_info(MadBuf& buf, const mad::MadHeader& hdr, const mad::ClassPortInfo&) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  mad::MadHeader resp = mad::cm_header(mad::Method::get_resp, mad::AttrId::class_port_info,
                                       hdr.transaction_id, hdr.attribute_modifier);
  switch (hdr.method) {
    case mad::Method::get: break;
    case mad::Method::set:
      // Nothing here is settable: the writable components are the trap target's, and this CM
      // sends no traps. The answer carries the unchanged attribute (13.4.7: invalid field code 3,
      // "the method/attribute combination is not supported").
      resp.status = static_cast<std::uint16_t>(mad::MadStatus::unsupported_method_attr);
      break;
    case mad::Method::get_resp:
    case mad::Method::send: return drop(port_index, DropReason::out_of_state);  // we never send a Get
  }
  send_reply(buf.packet.addr, resp, cm_class_port_info());
}

}  // namespace fastcm::engine
