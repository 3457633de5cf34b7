// What an endpoint has negotiated so far, readable at any time (Engine::connection_info).
#pragma once

#include <cstdint>
#include <optional>

#include "fastcm/cm_enums.h"
#include "fastcm/params.h"
#include "fastcm/types.h"

namespace fastcm {

// Its ReqTerms are this side's: as sent on the active side, the REQ's crosswise on the passive side
// (our responder resources are the peer's initiator depth, our local timeout its remote one); once
// a REP is sent or received, what it settled (responder resources, initiator depth, flow control,
// SRQ, and on the active side the REP's RNR retry count and ECE vendor ID).
struct ConnectionInfo : ReqTerms {
  CepState state = CepState::idle;  // to_string(state) names it
  bool active = false;             // this side sent the REQ
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  Guid remote_ca_guid = 0;
  std::uint64_t service_id = 0;
  Qpn local_qpn = 0;
  Qpn remote_qpn = 0;
  std::uint8_t port = 0;           // local port number
  std::uint8_t mtu = 0;            // MTU code
  std::uint32_t local_psn = 0;     // our send PSN
  std::uint32_t remote_psn = 0;    // the peer's send PSN (our receive PSN)
  Path primary;
  std::optional<Path> alternate;
};

}  // namespace fastcm
