// The CM codes an application reads from events and connection info, as IBTA Vol. 1 chapter 12
// numbers them: REJ reasons, the message a REJ or MRA names, APR and SIDR_REP statuses, the CM
// messages as counter indexes, and the states of a connection endpoint. The C API (fastcm/fastcm.h) gives each value the same number
// under a FASTCM_ name (capi/ checks every one at compile time).
//
// Thread contract: plain values and pure functions; any thread. to_string returns a name with
// static storage, NUL-terminated (the C API hands it out as a C string), "unknown" for a value
// outside the enum.
#pragma once

#include <cstdint>
#include <string_view>

namespace fastcm {

// Table 109: REJ reasons (RejParams::reason, RejReceived::reason).
enum class RejReason : std::uint16_t {
  no_qp = 1,
  no_eec = 2,
  no_resources = 3,
  timeout = 4,
  unsupported_req = 5,
  invalid_comm_id = 6,
  invalid_comm_instance = 7,
  invalid_service_id = 8,
  invalid_transport_type = 9,
  stale_conn = 10,
  rdc_not_exist = 11,
  invalid_gid = 12,
  invalid_lid = 13,
  invalid_sl = 14,
  invalid_traffic_class = 15,
  invalid_hop_limit = 16,
  invalid_packet_rate = 17,
  invalid_alt_gid = 18,
  invalid_alt_lid = 19,
  invalid_alt_sl = 20,
  invalid_alt_traffic_class = 21,
  invalid_alt_hop_limit = 22,
  invalid_alt_packet_rate = 23,
  port_cm_redirect = 24,
  port_redirect = 25,
  invalid_mtu = 26,
  insufficient_resp_resources = 27,
  consumer_reject = 28,
  invalid_rnr_retry = 29,
  duplicate_local_comm_id = 30,
  invalid_class_version = 31,
  invalid_flow_label = 32,
  invalid_alt_flow_label = 33,
  vendor_option_not_supported = 35,
};

// Which message a REJ rejects or an MRA acknowledges (RejReceived::message_rejected; 2 bits on the
// wire, 3 is reserved).
enum class MessageKind : std::uint8_t { req = 0, rep = 1, lap_or_none = 2 };

// Table 117: APR "AP Status" (AprParams::status, AprReceived::status).
enum class AprStatus : std::uint8_t {
  success = 0,
  invalid_comm_id = 1,
  unsupported = 2,
  rejected = 3,
  redirect = 4,
  is_current = 5,
  invalid_qpn_eecn = 6,
  invalid_lid = 7,
  invalid_gid = 8,
  invalid_flow_label = 9,
  invalid_traffic_class = 10,
  invalid_hop_limit = 11,
  invalid_packet_rate = 12,
  invalid_sl = 13,
};

// Table 121: SIDR_REP status (SidrRepParams::status, SidrRepReceived::status).
enum class SidrStatus : std::uint8_t {
  success = 0,
  service_id_unsupported = 1,
  rejected = 2,
  no_qp = 3,
  redirect = 4,
  class_version_unsupported = 5,
};

// The CM attributes in wire order of their IDs, as counter indexes (PortCounters::of).
enum class CmMessageKind : std::uint8_t {
  class_port_info, req, mra, rej, rep, rtu, dreq, drep, sidr_req, sidr_rep, lap, apr, count_
};

// The states of a connection endpoint (the chapter-12 state diagrams; ConnectionInfo::state).
enum class CepState : std::uint8_t {
  idle,            // created, nothing sent; or back from time-wait
  req_sent,
  req_rcvd,
  mra_req_sent,    // passive: we MRA'd the REQ
  mra_req_rcvd,    // active: the peer MRA'd our REQ
  rep_sent,
  rep_rcvd,
  mra_rep_sent,    // active: we MRA'd the REP
  mra_rep_rcvd,    // passive: the peer MRA'd our REP
  established,
  dreq_sent,
  dreq_rcvd,
  timewait,
  sidr_req_sent,
  sidr_req_rcvd,
};

[[nodiscard]] constexpr std::string_view to_string(RejReason r) noexcept {
  switch (r) {
    case RejReason::no_qp: return "no_qp";
    case RejReason::no_eec: return "no_eec";
    case RejReason::no_resources: return "no_resources";
    case RejReason::timeout: return "timeout";
    case RejReason::unsupported_req: return "unsupported_req";
    case RejReason::invalid_comm_id: return "invalid_comm_id";
    case RejReason::invalid_comm_instance: return "invalid_comm_instance";
    case RejReason::invalid_service_id: return "invalid_service_id";
    case RejReason::invalid_transport_type: return "invalid_transport_type";
    case RejReason::stale_conn: return "stale_conn";
    case RejReason::rdc_not_exist: return "rdc_not_exist";
    case RejReason::invalid_gid: return "invalid_gid";
    case RejReason::invalid_lid: return "invalid_lid";
    case RejReason::invalid_sl: return "invalid_sl";
    case RejReason::invalid_traffic_class: return "invalid_traffic_class";
    case RejReason::invalid_hop_limit: return "invalid_hop_limit";
    case RejReason::invalid_packet_rate: return "invalid_packet_rate";
    case RejReason::invalid_alt_gid: return "invalid_alt_gid";
    case RejReason::invalid_alt_lid: return "invalid_alt_lid";
    case RejReason::invalid_alt_sl: return "invalid_alt_sl";
    case RejReason::invalid_alt_traffic_class: return "invalid_alt_traffic_class";
    case RejReason::invalid_alt_hop_limit: return "invalid_alt_hop_limit";
    case RejReason::invalid_alt_packet_rate: return "invalid_alt_packet_rate";
    case RejReason::port_cm_redirect: return "port_cm_redirect";
    case RejReason::port_redirect: return "port_redirect";
    case RejReason::invalid_mtu: return "invalid_mtu";
    case RejReason::insufficient_resp_resources: return "insufficient_resp_resources";
    case RejReason::consumer_reject: return "consumer_reject";
    case RejReason::invalid_rnr_retry: return "invalid_rnr_retry";
    case RejReason::duplicate_local_comm_id: return "duplicate_local_comm_id";
    case RejReason::invalid_class_version: return "invalid_class_version";
    case RejReason::invalid_flow_label: return "invalid_flow_label";
    case RejReason::invalid_alt_flow_label: return "invalid_alt_flow_label";
    case RejReason::vendor_option_not_supported: return "vendor_option_not_supported";
  }
  return "unknown";
}

[[nodiscard]] constexpr std::string_view to_string(MessageKind k) noexcept {
  switch (k) {
    case MessageKind::req: return "req";
    case MessageKind::rep: return "rep";
    case MessageKind::lap_or_none: return "lap_or_none";
  }
  return "unknown";
}

[[nodiscard]] constexpr std::string_view to_string(AprStatus s) noexcept {
  switch (s) {
    case AprStatus::success: return "success";
    case AprStatus::invalid_comm_id: return "invalid_comm_id";
    case AprStatus::unsupported: return "unsupported";
    case AprStatus::rejected: return "rejected";
    case AprStatus::redirect: return "redirect";
    case AprStatus::is_current: return "is_current";
    case AprStatus::invalid_qpn_eecn: return "invalid_qpn_eecn";
    case AprStatus::invalid_lid: return "invalid_lid";
    case AprStatus::invalid_gid: return "invalid_gid";
    case AprStatus::invalid_flow_label: return "invalid_flow_label";
    case AprStatus::invalid_traffic_class: return "invalid_traffic_class";
    case AprStatus::invalid_hop_limit: return "invalid_hop_limit";
    case AprStatus::invalid_packet_rate: return "invalid_packet_rate";
    case AprStatus::invalid_sl: return "invalid_sl";
  }
  return "unknown";
}

[[nodiscard]] constexpr std::string_view to_string(SidrStatus s) noexcept {
  switch (s) {
    case SidrStatus::success: return "success";
    case SidrStatus::service_id_unsupported: return "service_id_unsupported";
    case SidrStatus::rejected: return "rejected";
    case SidrStatus::no_qp: return "no_qp";
    case SidrStatus::redirect: return "redirect";
    case SidrStatus::class_version_unsupported: return "class_version_unsupported";
  }
  return "unknown";
}

[[nodiscard]] constexpr std::string_view to_string(CmMessageKind k) noexcept {
  switch (k) {
    case CmMessageKind::class_port_info: return "class_port_info";
    case CmMessageKind::req: return "req";
    case CmMessageKind::mra: return "mra";
    case CmMessageKind::rej: return "rej";
    case CmMessageKind::rep: return "rep";
    case CmMessageKind::rtu: return "rtu";
    case CmMessageKind::dreq: return "dreq";
    case CmMessageKind::drep: return "drep";
    case CmMessageKind::sidr_req: return "sidr_req";
    case CmMessageKind::sidr_rep: return "sidr_rep";
    case CmMessageKind::lap: return "lap";
    case CmMessageKind::apr: return "apr";
    case CmMessageKind::count_: break;
  }
  return "unknown";
}

[[nodiscard]] constexpr std::string_view to_string(CepState s) noexcept {
  switch (s) {
    case CepState::idle: return "idle";
    case CepState::req_sent: return "req_sent";
    case CepState::req_rcvd: return "req_rcvd";
    case CepState::mra_req_sent: return "mra_req_sent";
    case CepState::mra_req_rcvd: return "mra_req_rcvd";
    case CepState::rep_sent: return "rep_sent";
    case CepState::rep_rcvd: return "rep_rcvd";
    case CepState::mra_rep_sent: return "mra_rep_sent";
    case CepState::mra_rep_rcvd: return "mra_rep_rcvd";
    case CepState::established: return "established";
    case CepState::dreq_sent: return "dreq_sent";
    case CepState::dreq_rcvd: return "dreq_rcvd";
    case CepState::timewait: return "timewait";
    case CepState::sidr_req_sent: return "sidr_req_sent";
    case CepState::sidr_req_rcvd: return "sidr_req_rcvd";
  }
  return "unknown";
}

}  // namespace fastcm
