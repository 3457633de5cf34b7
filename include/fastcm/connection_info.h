// What an endpoint has negotiated so far, readable at any time (Engine::connection_info).
#pragma once

#include <cstdint>
#include <optional>

#include "fastcm/cm_enums.h"
#include "fastcm/params.h"
#include "fastcm/types.h"

namespace fastcm {

struct ConnectionInfo {
  CepState state = CepState::idle;  // to_string(state) names it
  bool active = false;             // this side sent the REQ
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  Guid remote_ca_guid = 0;
  std::uint64_t service_id = 0;
  Qpn local_qpn = 0;
  Qpn remote_qpn = 0;
  QpType qp_type = QpType::rc;
  std::uint8_t port = 0;           // local port number
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  std::uint8_t retry_count = 0;
  std::uint8_t rnr_retry_count = 0;
  std::uint8_t mtu = 0;            // MTU code
  std::uint32_t local_psn = 0;     // our send PSN
  std::uint32_t remote_psn = 0;    // the peer's send PSN (our receive PSN)
  bool flow_control = false;
  bool srq = false;
  std::uint32_t ece_vendor_id = 0;
  Path primary;
  std::optional<Path> alternate;
};

}  // namespace fastcm
