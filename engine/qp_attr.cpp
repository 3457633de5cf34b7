// QP attributes for INIT, RTR and RTS from what the endpoint negotiated, capped to the CA's limits;
// and the negotiated parameters read back.
#include <algorithm>

#include "engine/cm_timeouts.h"
#include "engine/port_lookup.h"
#include "engine/protocol.h"
#include "engine/req_terms.h"

namespace fastcm::engine {

namespace {

bool has_paths(CepState s) noexcept {
  return s != CepState::idle && s != CepState::timewait && s != CepState::sidr_req_sent &&
         s != CepState::sidr_req_rcvd;
}

// RTR needs the peer's QPN and the PSN our receive queue starts from. The active side chose that
// PSN in its REQ and learns the peer's QPN from the REP; the passive side learns the QPN from the
// REQ but chooses its receive PSN only in its REP (RepParams::starting_psn), so before send_rep
// it has no rq_psn to give. (Linux' ib_cm answers RTR there with a PSN of 0; rdma_cm then writes
// in the PSN it is about to send, which the engine cannot know.)
bool knows_peer_qp(const Cep& cep) noexcept {
  switch (cep.state) {
    case CepState::rep_sent:
    case CepState::mra_rep_rcvd: return !cep.active;
    case CepState::rep_rcvd:
    case CepState::mra_rep_sent: return cep.active;
    case CepState::established:
    case CepState::dreq_sent:
    case CepState::dreq_rcvd: return true;
    default: return false;
  }
}

// RTS: as RTR, the passive side once its REP is out, the active side once the REP is in.
bool may_send(const Cep& cep) noexcept { return knows_peer_qp(cep); }

AhAttr address_vector(const Path& path, const PortAttr& port) noexcept {
  AhAttr ah;
  ah.dlid = path.remote_lid;
  ah.sl = path.sl;
  ah.static_rate = path.rate;
  ah.port_num = port.port_num;
  ah.is_global = uses_grh(path, port);
  if (ah.is_global) {
    ah.dgid = path.remote_gid;
    ah.flow_label = path.flow_label;
    ah.hop_limit = path.hop_limit;
    ah.traffic_class = path.traffic_class;
    ah.sgid_index = gid_index_of(port, path.local_gid);
  }
  // Source path bits select our LID within the port's LMC range.
  ah.src_path_bits = static_cast<std::uint8_t>((path.local_lid - port.lid) & ((1u << port.lmc) - 1));
  return ah;
}

// The QP's local ACK timeout along `path`: a round trip plus the ACK delay of the peer's CA, which
// answers our requests. The active side has it from the REP's target ACK delay; the passive side
// has the REQ's (or LAP's) local ACK timeout, which its sender computed with its own CA's delay
// and from which the path's packet life time was derived as one less (as Linux' cm_rep_handler
// and cm_init_av_by_path do).
std::uint8_t qp_ack_timeout(const Cep& cep, const Path& path) noexcept {
  if (cep.active) return local_ack_timeout(cep.target_ack_delay, path.packet_life_time);
  return static_cast<std::uint8_t>(std::min<unsigned>(path.packet_life_time + 1u, mad::kMaxTimeoutExponent));
}

// The alternate path, in RTR and again in RTS (after a LAP loads one on a connected QP).
void set_alternate_path(QpAttr& out, const Cep& cep, const Path& alternate, const PortAttr& port) noexcept {
  out.mask |= qp_mask::alt_path;
  out.alt_ah_attr = address_vector(alternate, port);
  out.alt_port_num = port.port_num;
  out.alt_pkey_index = cep.peer.pkey_index;
  out.alt_timeout = qp_ack_timeout(cep, alternate);
}

}  // namespace

Status Protocol::init_qp_attr(Id id, QpState state, QpAttr& out) const noexcept {
  const Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (!has_paths(cep->state)) return Status::invalid_state;
  const PortAttr& local_port = port(cep->port_index);
  const bool rc = cep->qp_type != QpType::uc;
  out = QpAttr{};
  out.qp_state = state;
  switch (state) {
    case QpState::init:
      out.mask = qp_mask::state | qp_mask::access_flags | qp_mask::pkey_index | qp_mask::port;
      out.qp_access_flags = qp_access::local_write | qp_access::remote_write;
      if (rc && cep->responder_resources > 0) out.qp_access_flags |= qp_access::remote_read | qp_access::remote_atomic;
      out.pkey_index = cep->peer.pkey_index;
      out.port_num = local_port.port_num;
      return Status::ok;
    case QpState::rtr:
      if (!knows_peer_qp(*cep)) return Status::invalid_state;
      out.mask = qp_mask::state | qp_mask::av | qp_mask::path_mtu | qp_mask::dest_qpn | qp_mask::rq_psn;
      out.ah_attr = address_vector(cep->primary, local_port);
      out.path_mtu = cep->mtu;
      out.dest_qp_num = cep->remote_qpn;
      out.rq_psn = cep->remote_psn;
      if (rc) {
        out.mask |= qp_mask::max_dest_rd_atomic | qp_mask::min_rnr_timer;
        out.max_dest_rd_atomic = std::min(cep->responder_resources, local_port.ca.max_qp_rd_atom);
        out.min_rnr_timer = 0;  // the IBTA encoding of the longest wait (655.36 ms), as the kernel CM
      }
      if (cep->has_alternate) set_alternate_path(out, *cep, table_.alternates(*cep).alternate, local_port);
      return Status::ok;
    case QpState::rts:
      if (!may_send(*cep)) return Status::invalid_state;
      out.mask = qp_mask::state | qp_mask::sq_psn;
      out.sq_psn = cep->local_psn;
      if (rc) {
        out.mask |= qp_mask::timeout | qp_mask::retry_cnt | qp_mask::rnr_retry | qp_mask::max_qp_rd_atomic;
        out.timeout = qp_ack_timeout(*cep, cep->primary);
        out.retry_cnt = cep->retry_count;
        out.rnr_retry = cep->rnr_retry_count;
        out.max_rd_atomic = std::min(cep->initiator_depth, local_port.ca.max_qp_init_rd_atom);
      }
      if (cep->has_alternate) {
        set_alternate_path(out, *cep, table_.alternates(*cep).alternate, local_port);
        out.mask |= qp_mask::path_mig_state;
        out.path_mig_state = MigState::rearm;
      }
      return Status::ok;
    case QpState::reset: break;
  }
  return Status::invalid_argument;
}

Status Protocol::connection_info(Id id, ConnectionInfo& out) const noexcept {
  const Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  out = ConnectionInfo{};
  static_cast<ReqTerms&>(out) = held_terms(*cep);
  out.state = cep->state;
  out.active = cep->active;
  out.local_comm_id = cep->local_comm_id;
  out.remote_comm_id = cep->remote_comm_id;
  out.remote_ca_guid = cep->remote_ca_guid;
  out.service_id = cep->service_id;
  out.local_qpn = cep->local_qpn;
  out.remote_qpn = cep->remote_qpn;
  out.port = port(cep->port_index).port_num;
  out.mtu = cep->mtu;
  out.local_psn = cep->local_psn;
  out.remote_psn = cep->remote_psn;
  out.primary = cep->primary;
  if (cep->has_alternate) out.alternate = table_.alternates(*cep).alternate;
  return Status::ok;
}

}  // namespace fastcm::engine
