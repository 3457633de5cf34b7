// The C API's enums against the C++ ones they mirror: every value checked at compile time (the C++
// enums hold the definitions), and the C names of the values through the C++ to_string.
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#include "capi/boundary.h"
#include "fastcm/cm_enums.h"
#include "fastcm/counters.h"
#include "fastcm/engine.h"
#include "fastcm/event.h"
#include "fastcm/fastcm.h"
#include "fastcm/qp_attr.h"
#include "fastcm/log.h"
#include "fastcm/settings.h"
#include "fastcm/status.h"
#include "fastcm/version.h"

namespace fastcm::capi {
namespace {

#define FASTCM_SAME(c_value, cpp_value) \
  static_assert(static_cast<long long>(c_value) == static_cast<long long>(cpp_value), #c_value)

FASTCM_SAME(FASTCM_LOG_OFF, LogLevel::off);
FASTCM_SAME(FASTCM_LOG_ERROR, LogLevel::error);
FASTCM_SAME(FASTCM_LOG_WARNING, LogLevel::warning);
FASTCM_SAME(FASTCM_LOG_NOTICE, LogLevel::notice);
FASTCM_SAME(FASTCM_LOG_INFO, LogLevel::info);
FASTCM_SAME(FASTCM_LOG_DEBUG, LogLevel::debug);
FASTCM_SAME(FASTCM_FABRIC_LOOPBACK, FabricType::loopback);
FASTCM_SAME(FASTCM_FABRIC_UMAD, FabricType::umad);
FASTCM_SAME(FASTCM_FABRIC_UDP, FabricType::udp);
FASTCM_SAME(FASTCM_OK, Status::ok);
FASTCM_SAME(FASTCM_ERR_STALE_ID, Status::stale_id);
FASTCM_SAME(FASTCM_ERR_INVALID_STATE, Status::invalid_state);
FASTCM_SAME(FASTCM_ERR_INVALID_ARGUMENT, Status::invalid_argument);
FASTCM_SAME(FASTCM_ERR_NO_RESOURCES, Status::no_resources);
FASTCM_SAME(FASTCM_ERR_SERVICE_IN_USE, Status::service_in_use);
FASTCM_SAME(FASTCM_ERR_WOULD_DEADLOCK, Status::would_deadlock);
FASTCM_SAME(FASTCM_ERR_NOT_SUPPORTED, Status::not_supported);

FASTCM_SAME(FASTCM_REJ_NO_QP, RejReason::no_qp);
FASTCM_SAME(FASTCM_REJ_NO_EEC, RejReason::no_eec);
FASTCM_SAME(FASTCM_REJ_NO_RESOURCES, RejReason::no_resources);
FASTCM_SAME(FASTCM_REJ_TIMEOUT, RejReason::timeout);
FASTCM_SAME(FASTCM_REJ_UNSUPPORTED_REQ, RejReason::unsupported_req);
FASTCM_SAME(FASTCM_REJ_INVALID_COMM_ID, RejReason::invalid_comm_id);
FASTCM_SAME(FASTCM_REJ_INVALID_COMM_INSTANCE, RejReason::invalid_comm_instance);
FASTCM_SAME(FASTCM_REJ_INVALID_SERVICE_ID, RejReason::invalid_service_id);
FASTCM_SAME(FASTCM_REJ_INVALID_TRANSPORT_TYPE, RejReason::invalid_transport_type);
FASTCM_SAME(FASTCM_REJ_STALE_CONN, RejReason::stale_conn);
FASTCM_SAME(FASTCM_REJ_RDC_NOT_EXIST, RejReason::rdc_not_exist);
FASTCM_SAME(FASTCM_REJ_INVALID_GID, RejReason::invalid_gid);
FASTCM_SAME(FASTCM_REJ_INVALID_LID, RejReason::invalid_lid);
FASTCM_SAME(FASTCM_REJ_INVALID_SL, RejReason::invalid_sl);
FASTCM_SAME(FASTCM_REJ_INVALID_TRAFFIC_CLASS, RejReason::invalid_traffic_class);
FASTCM_SAME(FASTCM_REJ_INVALID_HOP_LIMIT, RejReason::invalid_hop_limit);
FASTCM_SAME(FASTCM_REJ_INVALID_PACKET_RATE, RejReason::invalid_packet_rate);
FASTCM_SAME(FASTCM_REJ_INVALID_ALT_GID, RejReason::invalid_alt_gid);
FASTCM_SAME(FASTCM_REJ_INVALID_ALT_LID, RejReason::invalid_alt_lid);
FASTCM_SAME(FASTCM_REJ_INVALID_ALT_SL, RejReason::invalid_alt_sl);
FASTCM_SAME(FASTCM_REJ_INVALID_ALT_TRAFFIC_CLASS, RejReason::invalid_alt_traffic_class);
FASTCM_SAME(FASTCM_REJ_INVALID_ALT_HOP_LIMIT, RejReason::invalid_alt_hop_limit);
FASTCM_SAME(FASTCM_REJ_INVALID_ALT_PACKET_RATE, RejReason::invalid_alt_packet_rate);
FASTCM_SAME(FASTCM_REJ_PORT_CM_REDIRECT, RejReason::port_cm_redirect);
FASTCM_SAME(FASTCM_REJ_PORT_REDIRECT, RejReason::port_redirect);
FASTCM_SAME(FASTCM_REJ_INVALID_MTU, RejReason::invalid_mtu);
FASTCM_SAME(FASTCM_REJ_INSUFFICIENT_RESP_RESOURCES, RejReason::insufficient_resp_resources);
FASTCM_SAME(FASTCM_REJ_CONSUMER_REJECT, RejReason::consumer_reject);
FASTCM_SAME(FASTCM_REJ_INVALID_RNR_RETRY, RejReason::invalid_rnr_retry);
FASTCM_SAME(FASTCM_REJ_DUPLICATE_LOCAL_COMM_ID, RejReason::duplicate_local_comm_id);
FASTCM_SAME(FASTCM_REJ_INVALID_CLASS_VERSION, RejReason::invalid_class_version);
FASTCM_SAME(FASTCM_REJ_INVALID_FLOW_LABEL, RejReason::invalid_flow_label);
FASTCM_SAME(FASTCM_REJ_INVALID_ALT_FLOW_LABEL, RejReason::invalid_alt_flow_label);
FASTCM_SAME(FASTCM_REJ_VENDOR_OPTION_NOT_SUPPORTED, RejReason::vendor_option_not_supported);

FASTCM_SAME(FASTCM_MESSAGE_REQ, MessageKind::req);
FASTCM_SAME(FASTCM_MESSAGE_REP, MessageKind::rep);
FASTCM_SAME(FASTCM_MESSAGE_LAP_OR_NONE, MessageKind::lap_or_none);

FASTCM_SAME(FASTCM_APR_SUCCESS, AprStatus::success);
FASTCM_SAME(FASTCM_APR_INVALID_COMM_ID, AprStatus::invalid_comm_id);
FASTCM_SAME(FASTCM_APR_UNSUPPORTED, AprStatus::unsupported);
FASTCM_SAME(FASTCM_APR_REJECTED, AprStatus::rejected);
FASTCM_SAME(FASTCM_APR_REDIRECT, AprStatus::redirect);
FASTCM_SAME(FASTCM_APR_IS_CURRENT, AprStatus::is_current);
FASTCM_SAME(FASTCM_APR_INVALID_QPN_EECN, AprStatus::invalid_qpn_eecn);
FASTCM_SAME(FASTCM_APR_INVALID_LID, AprStatus::invalid_lid);
FASTCM_SAME(FASTCM_APR_INVALID_GID, AprStatus::invalid_gid);
FASTCM_SAME(FASTCM_APR_INVALID_FLOW_LABEL, AprStatus::invalid_flow_label);
FASTCM_SAME(FASTCM_APR_INVALID_TRAFFIC_CLASS, AprStatus::invalid_traffic_class);
FASTCM_SAME(FASTCM_APR_INVALID_HOP_LIMIT, AprStatus::invalid_hop_limit);
FASTCM_SAME(FASTCM_APR_INVALID_PACKET_RATE, AprStatus::invalid_packet_rate);
FASTCM_SAME(FASTCM_APR_INVALID_SL, AprStatus::invalid_sl);

FASTCM_SAME(FASTCM_SIDR_SUCCESS, SidrStatus::success);
FASTCM_SAME(FASTCM_SIDR_SERVICE_ID_UNSUPPORTED, SidrStatus::service_id_unsupported);
FASTCM_SAME(FASTCM_SIDR_REJECTED, SidrStatus::rejected);
FASTCM_SAME(FASTCM_SIDR_NO_QP, SidrStatus::no_qp);
FASTCM_SAME(FASTCM_SIDR_REDIRECT, SidrStatus::redirect);
FASTCM_SAME(FASTCM_SIDR_CLASS_VERSION_UNSUPPORTED, SidrStatus::class_version_unsupported);

FASTCM_SAME(FASTCM_CM_CLASS_PORT_INFO, CmMessageKind::class_port_info);
FASTCM_SAME(FASTCM_CM_REQ, CmMessageKind::req);
FASTCM_SAME(FASTCM_CM_MRA, CmMessageKind::mra);
FASTCM_SAME(FASTCM_CM_REJ, CmMessageKind::rej);
FASTCM_SAME(FASTCM_CM_REP, CmMessageKind::rep);
FASTCM_SAME(FASTCM_CM_RTU, CmMessageKind::rtu);
FASTCM_SAME(FASTCM_CM_DREQ, CmMessageKind::dreq);
FASTCM_SAME(FASTCM_CM_DREP, CmMessageKind::drep);
FASTCM_SAME(FASTCM_CM_SIDR_REQ, CmMessageKind::sidr_req);
FASTCM_SAME(FASTCM_CM_SIDR_REP, CmMessageKind::sidr_rep);
FASTCM_SAME(FASTCM_CM_LAP, CmMessageKind::lap);
FASTCM_SAME(FASTCM_CM_APR, CmMessageKind::apr);
FASTCM_SAME(FASTCM_CM_MESSAGE_COUNT, CmMessageKind::count_);

FASTCM_SAME(FASTCM_CEP_IDLE, CepState::idle);
FASTCM_SAME(FASTCM_CEP_REQ_SENT, CepState::req_sent);
FASTCM_SAME(FASTCM_CEP_REQ_RCVD, CepState::req_rcvd);
FASTCM_SAME(FASTCM_CEP_MRA_REQ_SENT, CepState::mra_req_sent);
FASTCM_SAME(FASTCM_CEP_MRA_REQ_RCVD, CepState::mra_req_rcvd);
FASTCM_SAME(FASTCM_CEP_REP_SENT, CepState::rep_sent);
FASTCM_SAME(FASTCM_CEP_REP_RCVD, CepState::rep_rcvd);
FASTCM_SAME(FASTCM_CEP_MRA_REP_SENT, CepState::mra_rep_sent);
FASTCM_SAME(FASTCM_CEP_MRA_REP_RCVD, CepState::mra_rep_rcvd);
FASTCM_SAME(FASTCM_CEP_ESTABLISHED, CepState::established);
FASTCM_SAME(FASTCM_CEP_DREQ_SENT, CepState::dreq_sent);
FASTCM_SAME(FASTCM_CEP_DREQ_RCVD, CepState::dreq_rcvd);
FASTCM_SAME(FASTCM_CEP_TIMEWAIT, CepState::timewait);
FASTCM_SAME(FASTCM_CEP_SIDR_REQ_SENT, CepState::sidr_req_sent);
FASTCM_SAME(FASTCM_CEP_SIDR_REQ_RCVD, CepState::sidr_req_rcvd);

FASTCM_SAME(FASTCM_EVENT_REQ_RECEIVED, EventType::req_received);
FASTCM_SAME(FASTCM_EVENT_REQ_ERROR, EventType::req_error);
FASTCM_SAME(FASTCM_EVENT_REP_RECEIVED, EventType::rep_received);
FASTCM_SAME(FASTCM_EVENT_REP_ERROR, EventType::rep_error);
FASTCM_SAME(FASTCM_EVENT_RTU_RECEIVED, EventType::rtu_received);
FASTCM_SAME(FASTCM_EVENT_USER_ESTABLISHED, EventType::user_established);
FASTCM_SAME(FASTCM_EVENT_REJ_RECEIVED, EventType::rej_received);
FASTCM_SAME(FASTCM_EVENT_MRA_RECEIVED, EventType::mra_received);
FASTCM_SAME(FASTCM_EVENT_DREQ_RECEIVED, EventType::dreq_received);
FASTCM_SAME(FASTCM_EVENT_DREQ_ERROR, EventType::dreq_error);
FASTCM_SAME(FASTCM_EVENT_DREP_RECEIVED, EventType::drep_received);
FASTCM_SAME(FASTCM_EVENT_TIMEWAIT_EXIT, EventType::timewait_exit);
FASTCM_SAME(FASTCM_EVENT_LAP_RECEIVED, EventType::lap_received);
FASTCM_SAME(FASTCM_EVENT_LAP_ERROR, EventType::lap_error);
FASTCM_SAME(FASTCM_EVENT_APR_RECEIVED, EventType::apr_received);
FASTCM_SAME(FASTCM_EVENT_SIDR_REQ_RECEIVED, EventType::sidr_req_received);
FASTCM_SAME(FASTCM_EVENT_SIDR_REQ_ERROR, EventType::sidr_req_error);
FASTCM_SAME(FASTCM_EVENT_SIDR_REP_RECEIVED, EventType::sidr_rep_received);
FASTCM_SAME(FASTCM_EVENT_CALL_FAILED, EventType::call_failed);
FASTCM_SAME(FASTCM_CALL_SET_CONTEXT, ApiCall::set_context);
FASTCM_SAME(FASTCM_CALL_SEND_REQ, ApiCall::send_req);
FASTCM_SAME(FASTCM_CALL_SEND_REP, ApiCall::send_rep);
FASTCM_SAME(FASTCM_CALL_SEND_RTU, ApiCall::send_rtu);
FASTCM_SAME(FASTCM_CALL_SEND_REJ, ApiCall::send_rej);
FASTCM_SAME(FASTCM_CALL_SEND_MRA, ApiCall::send_mra);
FASTCM_SAME(FASTCM_CALL_SEND_DREQ, ApiCall::send_dreq);
FASTCM_SAME(FASTCM_CALL_SEND_DREP, ApiCall::send_drep);
FASTCM_SAME(FASTCM_CALL_SEND_LAP, ApiCall::send_lap);
FASTCM_SAME(FASTCM_CALL_SEND_APR, ApiCall::send_apr);
FASTCM_SAME(FASTCM_CALL_SEND_SIDR_REQ, ApiCall::send_sidr_req);
FASTCM_SAME(FASTCM_CALL_SEND_SIDR_REP, ApiCall::send_sidr_rep);
FASTCM_SAME(FASTCM_CALL_ESTABLISH, ApiCall::establish);

FASTCM_SAME(FASTCM_QP_RC, QpType::rc);
FASTCM_SAME(FASTCM_QP_UC, QpType::uc);
FASTCM_SAME(FASTCM_QP_XRC, QpType::xrc);
FASTCM_SAME(FASTCM_LINK_INFINIBAND, LinkLayer::infiniband);
FASTCM_SAME(FASTCM_LINK_ETHERNET, LinkLayer::ethernet);
FASTCM_SAME(FASTCM_THREADING_WORKERS, Threading::workers);
FASTCM_SAME(FASTCM_THREADING_CALLER, Threading::caller);
FASTCM_SAME(FASTCM_EAL_ENGINE, EalOwner::engine);
FASTCM_SAME(FASTCM_EAL_APPLICATION, EalOwner::application);
FASTCM_SAME(FASTCM_BACKLOG_DROP, BacklogPolicy::drop);
FASTCM_SAME(FASTCM_BACKLOG_REJECT, BacklogPolicy::reject);
FASTCM_SAME(FASTCM_BACKLOG_MRA, BacklogPolicy::mra);
FASTCM_SAME(FASTCM_QPS_RESET, QpState::reset);
FASTCM_SAME(FASTCM_QPS_INIT, QpState::init);
FASTCM_SAME(FASTCM_QPS_RTR, QpState::rtr);
FASTCM_SAME(FASTCM_QPS_RTS, QpState::rts);
FASTCM_SAME(FASTCM_MIG_MIGRATED, MigState::migrated);
FASTCM_SAME(FASTCM_MIG_REARM, MigState::rearm);
FASTCM_SAME(FASTCM_MIG_ARMED, MigState::armed);

FASTCM_SAME(FASTCM_QP_STATE, qp_mask::state);
FASTCM_SAME(FASTCM_QP_ACCESS_FLAGS, qp_mask::access_flags);
FASTCM_SAME(FASTCM_QP_PKEY_INDEX, qp_mask::pkey_index);
FASTCM_SAME(FASTCM_QP_PORT, qp_mask::port);
FASTCM_SAME(FASTCM_QP_QKEY, qp_mask::qkey);
FASTCM_SAME(FASTCM_QP_AV, qp_mask::av);
FASTCM_SAME(FASTCM_QP_PATH_MTU, qp_mask::path_mtu);
FASTCM_SAME(FASTCM_QP_TIMEOUT, qp_mask::timeout);
FASTCM_SAME(FASTCM_QP_RETRY_CNT, qp_mask::retry_cnt);
FASTCM_SAME(FASTCM_QP_RNR_RETRY, qp_mask::rnr_retry);
FASTCM_SAME(FASTCM_QP_RQ_PSN, qp_mask::rq_psn);
FASTCM_SAME(FASTCM_QP_MAX_QP_RD_ATOMIC, qp_mask::max_qp_rd_atomic);
FASTCM_SAME(FASTCM_QP_ALT_PATH, qp_mask::alt_path);
FASTCM_SAME(FASTCM_QP_MIN_RNR_TIMER, qp_mask::min_rnr_timer);
FASTCM_SAME(FASTCM_QP_SQ_PSN, qp_mask::sq_psn);
FASTCM_SAME(FASTCM_QP_MAX_DEST_RD_ATOMIC, qp_mask::max_dest_rd_atomic);
FASTCM_SAME(FASTCM_QP_PATH_MIG_STATE, qp_mask::path_mig_state);
FASTCM_SAME(FASTCM_QP_DEST_QPN, qp_mask::dest_qpn);
FASTCM_SAME(FASTCM_ACCESS_LOCAL_WRITE, qp_access::local_write);
FASTCM_SAME(FASTCM_ACCESS_REMOTE_WRITE, qp_access::remote_write);
FASTCM_SAME(FASTCM_ACCESS_REMOTE_READ, qp_access::remote_read);
FASTCM_SAME(FASTCM_ACCESS_REMOTE_ATOMIC, qp_access::remote_atomic);

FASTCM_SAME(FASTCM_MAX_REQ_PRIVATE_DATA, kMaxReqPrivateData);
FASTCM_SAME(FASTCM_MAX_MRA_PRIVATE_DATA, kMaxMraPrivateData);
FASTCM_SAME(FASTCM_MAX_REJ_PRIVATE_DATA, kMaxRejPrivateData);
FASTCM_SAME(FASTCM_MAX_REP_PRIVATE_DATA, kMaxRepPrivateData);
FASTCM_SAME(FASTCM_MAX_RTU_PRIVATE_DATA, kMaxRtuPrivateData);
FASTCM_SAME(FASTCM_MAX_DREQ_PRIVATE_DATA, kMaxDreqPrivateData);
FASTCM_SAME(FASTCM_MAX_DREP_PRIVATE_DATA, kMaxDrepPrivateData);
FASTCM_SAME(FASTCM_MAX_SIDR_REQ_PRIVATE_DATA, kMaxSidrReqPrivateData);
FASTCM_SAME(FASTCM_MAX_SIDR_REP_PRIVATE_DATA, kMaxSidrRepPrivateData);
FASTCM_SAME(FASTCM_MAX_LAP_PRIVATE_DATA, kMaxLapPrivateData);
FASTCM_SAME(FASTCM_MAX_APR_PRIVATE_DATA, kMaxAprPrivateData);
FASTCM_SAME(FASTCM_MAX_ADDITIONAL_INFO, kMaxAdditionalInfo);

static_assert(sizeof(fastcm_gid) == sizeof(Gid));
static_assert(sizeof(fastcm_id) == sizeof(Id::raw));
static_assert(sizeof(fastcm_port_attr::gids) / sizeof(fastcm_gid) == kMaxPortGids);
static_assert(sizeof(fastcm_port_attr::pkeys) / sizeof(std::uint16_t) == kMaxPortPKeys);

#undef FASTCM_SAME

// A C++ name as a C string: to_string returns string literals, so the data is NUL-terminated. A
// value the enum's underlying type cannot hold would wrap onto another name: "unknown" instead.
template <class Enum, class Int>
const char* name_of(Int value) noexcept {
  using Underlying = std::underlying_type_t<Enum>;
  if (!std::in_range<Underlying>(value)) return "unknown";
  return to_string(static_cast<Enum>(value)).data();
}

}  // namespace
}  // namespace fastcm::capi

using fastcm::capi::name_of;

extern "C" {

const char* fastcm_strerror(int status) noexcept {
  switch (status) {
    case FASTCM_ERR_NO_MEMORY: return "no_memory";
    case FASTCM_ERR_CREATE_FAILED: return "create_failed";
    case FASTCM_ERR_INTERNAL: return "internal";
    case FASTCM_ERR_OPEN_FAILED: return "open_failed";
    default: break;
  }
  return status >= 0 && status <= FASTCM_ERR_NOT_SUPPORTED ? name_of<fastcm::Status>(status) : "unknown";
}

const char* fastcm_version(void) noexcept { return FASTCM_VERSION_STRING; }

const char* fastcm_rej_reason_str(int reason) noexcept { return name_of<fastcm::RejReason>(reason); }
const char* fastcm_message_kind_str(int kind) noexcept { return name_of<fastcm::MessageKind>(kind); }
const char* fastcm_apr_status_str(int status) noexcept { return name_of<fastcm::AprStatus>(status); }
const char* fastcm_sidr_status_str(int status) noexcept { return name_of<fastcm::SidrStatus>(status); }
const char* fastcm_cm_message_str(int message) noexcept { return name_of<fastcm::CmMessageKind>(message); }
const char* fastcm_cep_state_str(int state) noexcept { return name_of<fastcm::CepState>(state); }
const char* fastcm_event_type_str(int type) noexcept { return name_of<fastcm::EventType>(type); }
const char* fastcm_api_call_str(int call) noexcept { return name_of<fastcm::ApiCall>(call); }

size_t fastcm_drop_reason_count(void) noexcept { return fastcm::kDropReasons; }
const char* fastcm_drop_reason_str(size_t reason) noexcept {
  return reason < fastcm::kDropReasons ? name_of<fastcm::DropReason>(reason) : nullptr;
}

}  // extern "C"
