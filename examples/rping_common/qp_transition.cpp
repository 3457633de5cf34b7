#include "examples/rping_common/qp_transition.h"

#include <cstring>

namespace fastcm::examples {

namespace {

static_assert(qp_mask::state == IBV_QP_STATE && qp_mask::access_flags == IBV_QP_ACCESS_FLAGS &&
              qp_mask::pkey_index == IBV_QP_PKEY_INDEX && qp_mask::port == IBV_QP_PORT &&
              qp_mask::qkey == IBV_QP_QKEY && qp_mask::av == IBV_QP_AV &&
              qp_mask::path_mtu == IBV_QP_PATH_MTU && qp_mask::timeout == IBV_QP_TIMEOUT &&
              qp_mask::retry_cnt == IBV_QP_RETRY_CNT && qp_mask::rnr_retry == IBV_QP_RNR_RETRY &&
              qp_mask::rq_psn == IBV_QP_RQ_PSN && qp_mask::max_qp_rd_atomic == IBV_QP_MAX_QP_RD_ATOMIC &&
              qp_mask::alt_path == IBV_QP_ALT_PATH && qp_mask::min_rnr_timer == IBV_QP_MIN_RNR_TIMER &&
              qp_mask::sq_psn == IBV_QP_SQ_PSN && qp_mask::max_dest_rd_atomic == IBV_QP_MAX_DEST_RD_ATOMIC &&
              qp_mask::path_mig_state == IBV_QP_PATH_MIG_STATE && qp_mask::dest_qpn == IBV_QP_DEST_QPN,
              "fastcm::qp_mask bits are enum ibv_qp_attr_mask's");
static_assert(static_cast<int>(QpState::rts) == IBV_QPS_RTS && static_cast<int>(QpState::rtr) == IBV_QPS_RTR &&
              static_cast<int>(QpState::init) == IBV_QPS_INIT, "fastcm::QpState is enum ibv_qp_state");

const char* state_name(QpState s) {
  switch (s) {
    case QpState::reset: return "RESET";
    case QpState::init: return "INIT";
    case QpState::rtr: return "RTR";
    case QpState::rts: return "RTS";
  }
  return "?";
}

bool to_verbs(const VerbsContext& verbs, const AhAttr& in, const PortAttr& port, ibv_ah_attr& out,
              std::string& error) {
  out = ibv_ah_attr{};
  out.dlid = in.dlid;
  out.sl = in.sl;
  out.src_path_bits = in.src_path_bits;
  out.static_rate = in.static_rate;
  out.is_global = in.is_global ? 1 : 0;
  out.port_num = in.port_num;
  if (!in.is_global) return true;
  const auto gids = port.gids();
  if (in.sgid_index >= gids.size()) {
    error = "source GID index " + std::to_string(in.sgid_index) + " outside the port's GID list";
    return false;
  }
  const std::optional<std::uint8_t> device_index = verbs.gid_index(in.port_num, gids[in.sgid_index]);
  if (!device_index) {
    error = "the connection's source GID is not in the device's GID table";
    return false;
  }
  std::memcpy(out.grh.dgid.raw, in.dgid.raw.data(), sizeof out.grh.dgid.raw);
  out.grh.flow_label = in.flow_label;
  out.grh.sgid_index = *device_index;
  out.grh.hop_limit = in.hop_limit;
  out.grh.traffic_class = in.traffic_class;
  return true;
}

}  // namespace

bool transition_qp(const VerbsContext& verbs, ibv_qp* qp, const QpAttr& attr, const PortAttr& port,
                   std::string& error) {
  ibv_qp_attr v{};
  v.qp_state = static_cast<ibv_qp_state>(attr.qp_state);
  v.path_mtu = static_cast<ibv_mtu>(attr.path_mtu);
  v.path_mig_state = static_cast<ibv_mig_state>(attr.path_mig_state);
  v.qkey = attr.qkey;
  v.rq_psn = attr.rq_psn;
  v.sq_psn = attr.sq_psn;
  v.dest_qp_num = attr.dest_qp_num;
  v.qp_access_flags = attr.qp_access_flags;
  v.pkey_index = attr.pkey_index;
  v.alt_pkey_index = attr.alt_pkey_index;
  v.max_rd_atomic = attr.max_rd_atomic;
  v.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  v.min_rnr_timer = attr.min_rnr_timer;
  v.port_num = attr.port_num;
  v.timeout = attr.timeout;
  v.retry_cnt = attr.retry_cnt;
  v.rnr_retry = attr.rnr_retry;
  v.alt_port_num = attr.alt_port_num;
  v.alt_timeout = attr.alt_timeout;
  const std::string to = std::string("to ") + state_name(attr.qp_state) + ": ";
  if ((attr.mask & qp_mask::av) != 0 && !to_verbs(verbs, attr.ah_attr, port, v.ah_attr, error)) {
    error = to + error;
    return false;
  }
  if ((attr.mask & qp_mask::alt_path) != 0 && !to_verbs(verbs, attr.alt_ah_attr, port, v.alt_ah_attr, error)) {
    error = to + "alternate path: " + error;
    return false;
  }
  const int rc = ibv_modify_qp(qp, &v, static_cast<int>(attr.mask));
  if (rc != 0) {
    error = to + "ibv_modify_qp: " + std::strerror(rc);
    return false;
  }
  return true;
}

}  // namespace fastcm::examples
