// Connection establishment (IBTA Vol. 1 12.6): REQ, REJ, REP and RTU, received and sent (MRA is in
// mra_handlers.cpp).
#include <algorithm>

#include "engine/cm_timeouts.h"
#include "engine/path_address.h"
#include "engine/path_convert.h"
#include "engine/path_validation.h"
#include "engine/port_lookup.h"
#include "engine/private_data.h"
#include "engine/protocol.h"
#include "engine/req_terms.h"

namespace fastcm::engine {

namespace {

bool valid_req_params(const ReqParams& p) noexcept {
  return fits<kMaxReqPrivateData>(p.private_data) && p.qpn < (1u << 24) && p.starting_psn < (1u << 24) &&
         p.remote_cm_response_timeout <= 31 && p.local_cm_response_timeout <= 31 && p.retry_count <= 7 &&
         p.rnr_retry_count <= 7 && p.max_cm_retries <= 15 && mad::is_valid_mtu_code(p.primary.mtu) &&
         p.ece_vendor_id < (1u << 24);
}

}  // namespace

// ---- active side: REQ ------------------------------------------------------------------------

Status Protocol::send_req(Id id, const ReqParams& p) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::idle) return Status::invalid_state;
  const auto port_index = port_index_of(env_.ports, p.primary.port);
  if (!valid_req_params(p) || !port_index) return Status::invalid_argument;
  const PortAttr& local_port = port(*port_index);
  const auto pkey_index = pkey_index_of(local_port, p.primary.pkey);
  if (!pkey_index) return Status::invalid_argument;
  if (p.alternate && p.alternate->port != p.primary.port) return Status::not_supported;

  mad::Req req;
  put_terms(req, p);
  req.local_comm_id = cep->local_comm_id;
  req.service_id = p.service_id;
  req.local_ca_guid = local_port.node_guid;
  req.local_qpn = p.qpn;
  req.starting_psn = p.starting_psn;
  req.partition_key = p.primary.pkey;
  req.path_packet_payload_mtu = static_cast<mad::MtuCode>(p.primary.mtu);
  req.primary = to_wire_path(p.primary, local_port.ca.local_ca_ack_delay);
  if (p.alternate) req.alternate = to_wire_path(*p.alternate, local_port.ca.local_ca_ack_delay);
  copy_into(req.private_data, p.private_data);

  cep->active = true;
  cep->port_index = *port_index;
  cep->service_id = p.service_id;
  cep->local_qpn = p.qpn;
  hold_terms(*cep, p, TermsSide::sender);
  cep->remote_psn = p.starting_psn;  // a REQ's Starting PSN is what we expect to receive
  cep->mtu = p.primary.mtu;
  cep->primary = p.primary;
  cep->has_alternate = p.alternate.has_value();
  if (p.alternate) table_.alternates(*cep).alternate = *p.alternate;
  cep->peer = address_along(p.primary, *port_index, local_port, *pkey_index);
  cep->transaction_id = next_tid_++ << 32 | cep->local_comm_id;
  if (!send_and_keep(*cep, req)) return Status::no_resources;
  cep->state = CepState::req_sent;
  cep->retries_left = p.max_cm_retries;
  cep->retry_timeout_ns = response_wait_ns(p.primary.packet_life_time, p.remote_cm_response_timeout);
  arm_timer(*cep, CepTimer::retransmit, cep->retry_timeout_ns);
  return Status::ok;
}

// ---- passive side: REQ -----------------------------------------------------------------------

void Protocol::on_req(MadBuf& buf, const mad::MadHeader& hdr, const mad::Req& req) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  const PortAttr& local_port = port(port_index);

  // A retransmitted REQ: answer with what we already sent, if anything (12.9.8.1).
  if (Cep* dup = dup_reqs_.find({req.local_comm_id, req.local_ca_guid})) {
    // Only from where the REQ came: a copy from elsewhere would make us resend our answer to the
    // peer, whose reply to an answer it no longer expects can end the connection.
    if (const std::optional<DropReason> why = address_mismatch(*dup, buf.packet.addr)) return drop(port_index, *why);
    ++message_counters(port_index, hdr.attribute_id).duplicate;
    switch (dup->state) {
      case CepState::mra_req_sent:
      case CepState::rep_sent:
      case CepState::mra_rep_rcvd: resend(*dup); break;
      case CepState::timewait:
        reject_unknown(buf, hdr.transaction_id, req.local_comm_id, dup->local_comm_id,
                       mad::MessageKind::req, mad::RejReason::stale_conn, {});
        break;
      default: drop(port_index, DropReason::duplicate); break;  // req_rcvd: the application has it
    }
    return;
  }

  // A REQ from a remote QP that one of the engine's endpoints is connected to (RemoteQpns). If the
  // endpoint is another shard's, that shard judges the REQ: a REQ is handled by the shard it
  // arrives at, so a copy that reached another port than its first copy comes here while the
  // endpoint and its duplicate entry are there. If it is ours, the peer lost that connection:
  // reject the new one as stale and tear the old one down (12.9.8.3.2), also when the old one is
  // already in time-wait.
  const auto judge_elsewhere_or_stale = [&](Id old) {
    if (pass_req(buf, old)) return;
    reject_unknown(buf, hdr.transaction_id, req.local_comm_id, 0, mad::MessageKind::req,
                   mad::RejReason::stale_conn, {});
    env_.outbox.notify_stale(old, buf);
  };
  if (const std::optional<Id> old = env_.remote_qpns.find({req.local_qpn, req.local_ca_guid})) {
    return judge_elsewhere_or_stale(*old);
  }

  const Listen* listen = env_.listens.match(req.service_id, local_port.port_num);
  if (listen == nullptr) {
    reject_unknown(buf, hdr.transaction_id, req.local_comm_id, 0, mad::MessageKind::req,
                   mad::RejReason::invalid_service_id, {});
    return;
  }
  if (const auto bad = validate_req_paths(req, local_port)) {
    reject_unknown(buf, hdr.transaction_id, req.local_comm_id, 0, mad::MessageKind::req, bad->reason,
                   std::span<const std::uint8_t>(bad->ari).first(bad->ari_length));
    return;
  }
  // The source's and the listen's half-open handshakes, judged by where the REQ came from.
  const HalfOpenBudget::Admission admission = env_.half_open.admit(buf.packet.addr, listen->id);
  if (admission.refused != HalfOpenBudget::Refusal::none) {
    apply_backlog_policy(buf, hdr, req, *listen,
                         admission.refused == HalfOpenBudget::Refusal::source ? DropReason::source_budget
                                                                              : DropReason::listen_budget);
    return;
  }
  const auto unadmit = [&] { env_.half_open.settle(admission.source, listen->id, HalfOpenBudget::Settled::abandoned); };
  // A full event queue is a full backlog too: the application could not hear of this REQ.
  const EventQueue* queue = listen->params.delivery.queue;
  if ((queue != nullptr && env_.outbox.queue_full(*queue)) || !env_.listens.take_backlog(*listen)) {
    unadmit();
    apply_backlog_policy(buf, hdr, req, *listen, DropReason::backlog_full);
    return;
  }
  const auto unreserve = [&] {
    unadmit();
    env_.listens.release_backlog(listen->id);
  };
  Cep* cep = allocate_endpoint();
  if (cep == nullptr) {
    unreserve();
    // A shard holds twice its even share of the endpoints (EndpointBudget) and an even share of
    // the MAD buffers (EngineConfig::mad_buffers): when the REQs of many peers arrive at one port,
    // its shard runs out of room first, and the other shards take the rest.
    if (pass_req(buf, std::nullopt)) return;
    drop(port_index, DropReason::no_resources);
    reject_unknown(buf, hdr.transaction_id, req.local_comm_id, 0, mad::MessageKind::req,
                   mad::RejReason::no_resources, {});
    return;
  }
  // Claimed before anything can be seen of the endpoint: a copy of this REQ, or another REQ from
  // its QP, that another shard handled since the check above has claimed the QP first. That shard
  // judges this one (its owner, as above), and this endpoint never was.
  cep->remote_ca_guid = req.local_ca_guid;
  cep->remote_qpn = req.local_qpn;
  if (const std::optional<Id> first = claim_remote_qpn(*cep)) {
    free_endpoint(*cep);
    unreserve();
    return judge_elsewhere_or_stale(*first);
  }
  attach(*cep, listen->params.delivery, nullptr);
  cep->backlog = listen->id;
  cep->half_open_listen = listen->id;
  cep->half_open_source = admission.source;
  cep->unanswering_source = admission.unanswering;
  cep->port_index = port_index;
  cep->remote_comm_id = req.local_comm_id;
  cep->peer_known = true;
  cep->remote_qkey = req.local_q_key;
  cep->service_id = req.service_id;
  // Crosswise: the peer's initiator depth bounds our responder resources and vice versa.
  const ReqTerms offered = terms_of(req);
  hold_terms(*cep, offered, TermsSide::receiver);
  cep->local_psn = req.starting_psn;  // the peer receives from its Starting PSN: we send from it
  cep->mtu = static_cast<std::uint8_t>(req.path_packet_payload_mtu);
  cep->primary = from_wire_path(req.primary, local_port.port_num, req.partition_key, cep->mtu);
  cep->has_alternate = has_path(req.alternate);
  if (cep->has_alternate) {
    table_.alternates(*cep).alternate = from_wire_path(req.alternate, local_port.port_num, req.partition_key, cep->mtu);
  }
  cep->peer = buf.packet.addr;  // answer the REQ's sender where it came from
  cep->transaction_id = hdr.transaction_id;
  cep->state = CepState::req_rcvd;
  dup_reqs_.insert(*cep);
  keep_received(*cep, buf);
  if (env_.config.auto_mra_fraction > 0) {
    arm_timer(*cep, CepTimer::auto_mra,
              auto_mra_delay_ns(env_.config.auto_mra_fraction, req.remote_cm_response_timeout));
  }

  Event ev = event_of(EventType::req_received);
  ev.context = listen->params.context;
  ReqReceived& p = ev.params.emplace<ReqReceived>();
  static_cast<ReqTerms&>(p) = offered;
  p.listen_id = listen->id;
  p.service_id = req.service_id;
  p.remote_ca_guid = req.local_ca_guid;
  p.remote_qpn = req.local_qpn;
  p.remote_qkey = req.local_q_key;
  p.starting_psn = req.starting_psn;
  p.primary = cep->primary;
  if (cep->has_alternate) p.alternate = table_.alternates(*cep).alternate;
  emit(*cep, ev, &buf);
}

void Protocol::apply_backlog_policy(const MadBuf& buf, const mad::MadHeader& hdr, const mad::Req& req,
                                    const Listen& listen, DropReason why) noexcept {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  drop(port_index, why);
  switch (listen.params.backlog_policy) {
    case BacklogPolicy::drop: break;
    case BacklogPolicy::reject:
      reject_unknown(buf, hdr.transaction_id, req.local_comm_id, 0, mad::MessageKind::req,
                     mad::RejReason::no_resources, {});
      break;
    case BacklogPolicy::mra: {
      // Stateless: the peer waits the service timeout and retransmits; by then the backlog may
      // have room. No endpoint is created, so the MRA carries no local comm ID.
      mad::Mra mra;
      mra.remote_comm_id = req.local_comm_id;
      mra.message_mraed = mad::MessageKind::req;
      mra.service_timeout = env_.config.mra_service_timeout;
      send_reply(buf.packet.addr, hdr.transaction_id, mra);
      break;
    }
  }
}

// ---- REJ ---------------------------------------------------------------------------------------

Status Protocol::send_rej(Id id, const RejParams& p) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (!fits<kMaxRejPrivateData>(p.private_data) || !fits<kMaxAdditionalInfo>(p.ari)) {
    return Status::invalid_argument;
  }
  switch (cep->state) {
    case CepState::req_sent:
    case CepState::mra_req_rcvd:
    case CepState::req_rcvd:
    case CepState::mra_req_sent:
    case CepState::rep_rcvd:
    case CepState::mra_rep_sent:
    case CepState::rep_sent:
    case CepState::mra_rep_rcvd: break;
    default: return Status::invalid_state;
  }
  reject(*cep, static_cast<mad::RejReason>(p.reason), p.ari, p.private_data);
  return Status::ok;
}

void Protocol::reject(Cep& cep, mad::RejReason reason, std::span<const std::uint8_t> ari,
                      std::span<const std::uint8_t> private_data) noexcept {
  mad::Rej rej;
  rej.local_comm_id = cep.local_comm_id;
  rej.remote_comm_id = cep.remote_comm_id;
  const bool rejects_rep = cep.state == CepState::rep_rcvd || cep.state == CepState::mra_rep_sent;
  const bool rejects_nothing = cep.state == CepState::req_sent || cep.state == CepState::mra_req_rcvd ||
                               cep.state == CepState::rep_sent || cep.state == CepState::mra_rep_rcvd;
  rej.message_rejected = rejects_rep       ? mad::MessageKind::rep
                         : rejects_nothing ? mad::MessageKind::lap_or_none
                                           : mad::MessageKind::req;
  rej.reason = reason;
  copy_into(rej.ari, ari);
  rej.rejected_info_length = static_cast<std::uint8_t>(std::min(ari.size(), rej.ari.size()));
  copy_into(rej.private_data, private_data);
  cancel_timer(cep);
  leave_backlog(cep);
  settle_half_open(cep, HalfOpenBudget::Settled::abandoned);
  (void)send_and_keep(cep, rej);
  // Once our REP went out the peer may hold our ID: keep it out of reuse for a time-wait.
  if (cep.state == CepState::rep_sent || cep.state == CepState::mra_rep_rcvd) {
    enter_timewait(cep);
  } else {
    dup_reqs_.erase(cep);
    release_remote_qpn(cep);
    cep.state = CepState::idle;
  }
}

Cep* Protocol::rejected_endpoint(const mad::Rej& rej) noexcept {
  Cep* cep = table_.find_by_comm_id(rej.remote_comm_id);
  if (cep == nullptr && rej.reason == mad::RejReason::timeout && rej.rejected_info_length >= 8) {
    // An active side that times out before it learnt our ID names its REQ instead: its own comm
    // ID, and its CA GUID in the ARI — the duplicate-REQ key.
    Guid ca = 0;
    for (std::size_t i = 0; i < 8; ++i) ca = ca << 8 | rej.ari[i];
    cep = dup_reqs_.find({rej.local_comm_id, ca});
  }
  return cep;
}

bool Protocol::holds_rejected_req(const MadBuf& buf) noexcept {
  mad::Rej rej;
  return mad::decode_body(mad::ConstMadSpan(buf.packet.mad), rej).ok() && rejected_endpoint(rej) != nullptr;
}

void Protocol::on_rej(MadBuf& buf, const mad::MadHeader& hdr, const mad::Rej& rej) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = rejected_endpoint(rej);
  if (cep == nullptr) return drop(port_index, DropReason::unknown_comm_id);
  if (!from_peer(*cep, buf, {.comm_id = rej.local_comm_id})) return;
  // A REQ is rejected only by the side that received it, a REP likewise: a REJ of either sent to
  // the side that sent it is about another connection (our answer to a REP forged in the name of
  // an active endpoint, sent back to its port, names it so).
  const bool rejects_what_we_sent = (rej.message_rejected == mad::MessageKind::req && !cep->active) ||
                                    (rej.message_rejected == mad::MessageKind::rep && cep->active);
  if (rejects_what_we_sent) return drop(port_index, DropReason::out_of_state);
  switch (cep->state) {
    case CepState::req_sent:
    case CepState::mra_req_rcvd:
    case CepState::rep_sent:
    case CepState::mra_rep_rcvd:
    case CepState::req_rcvd:
    case CepState::mra_req_sent:
      cancel_timer(*cep);
      leave_backlog(*cep);
      settle_half_open(*cep, HalfOpenBudget::Settled::answered);
      if (rej.reason == mad::RejReason::stale_conn) {
        enter_timewait(*cep);
      } else {
        dup_reqs_.erase(*cep);
        release_remote_qpn(*cep);
        cep->state = CepState::idle;
      }
      break;
    case CepState::rep_rcvd:
    case CepState::mra_rep_sent:
    case CepState::dreq_sent:
      cancel_timer(*cep);
      enter_timewait(*cep);
      break;
    case CepState::established:
      // Our RTU never arrived and the passive side gave up on its REP (REJ "timeout"): the
      // connection is gone there, so leave it here too, as from rep_rcvd. A LAP exchange the
      // peer took part in shows it established, so a REJ then is out of state.
      if (cep->lap_state != LapState::idle && cep->lap_state != LapState::lap_sent) {
        return drop(port_index, DropReason::out_of_state);
      }
      cancel_timer(*cep);
      cep->lap_state = LapState::idle;
      enter_timewait(*cep);
      break;
    default:
      // The REJ we acted on already, delivered again.
      if (repeats(cep->received, buf)) {
        ++message_counters(port_index, hdr.attribute_id).duplicate;
        return drop(port_index, DropReason::duplicate);
      }
      return drop(port_index, DropReason::out_of_state);
  }
  keep_received(*cep, buf);
  Event ev = event_of(EventType::rej_received);
  ev.params.emplace<RejReceived>(RejReceived{
      .reason = static_cast<std::uint16_t>(rej.reason),
      .message_rejected = static_cast<std::uint8_t>(rej.message_rejected),
      .ari = std::span<const std::uint8_t>(buf.packet.mad).subspan(mad::kMadHeaderSize + 12, rej.rejected_info_length)});
  emit(*cep, ev, &buf);
}

// ---- REP ---------------------------------------------------------------------------------------

Status Protocol::send_rep(Id id, const RepParams& p) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::req_rcvd && cep->state != CepState::mra_req_sent) return Status::invalid_state;
  if (!fits<kMaxRepPrivateData>(p.private_data) || p.qpn >= (1u << 24) || p.starting_psn >= (1u << 24) ||
      p.target_ack_delay.value_or(0) > 31 || p.failover_accepted > 2 || p.rnr_retry_count > 7 ||
      p.ece_vendor_id >= (1u << 24)) {
    return Status::invalid_argument;
  }
  const PortAttr& local_port = port(cep->port_index);
  // Clamped, not refused: the REQ's offer (crosswise in the endpoint since on_req) and our CA's
  // limits bound what both QPs can use, so asking for more than either is asking for "as many as
  // possible" — what librdmacm's rdma_accept sends by default. Sent unclamped, the peer would set
  // up more RDMA reads and atomics in flight than its own responder, or ours, can serve.
  const std::uint8_t responder_resources =
      std::min({p.responder_resources, cep->responder_resources, local_port.ca.max_qp_rd_atom});
  const std::uint8_t initiator_depth =
      std::min({p.initiator_depth, cep->initiator_depth, local_port.ca.max_qp_init_rd_atom});
  // The active side's QP ACK timeout includes it (Table 110, Target ACK Delay): Linux sends its CA's.
  const std::uint8_t target_ack_delay = p.target_ack_delay.value_or(local_port.ca.local_ca_ack_delay);
  mad::Rep rep;
  rep.local_comm_id = cep->local_comm_id;
  rep.remote_comm_id = cep->remote_comm_id;
  rep.local_qpn = p.qpn;
  rep.starting_psn = p.starting_psn;
  rep.responder_resources = responder_resources;
  rep.initiator_depth = initiator_depth;
  rep.target_ack_delay = target_ack_delay;
  rep.failover_accepted = static_cast<mad::FailoverAccepted>(p.failover_accepted);
  rep.end_to_end_flow_control = p.flow_control;
  rep.rnr_retry_count = p.rnr_retry_count;
  rep.srq = p.srq;
  rep.local_ca_guid = local_port.node_guid;
  rep.set_vendor_id(p.ece_vendor_id);
  copy_into(rep.private_data, p.private_data);
  if (!send_and_keep(*cep, rep)) return Status::no_resources;
  cep->local_qpn = p.qpn;
  cep->remote_psn = p.starting_psn;
  cep->responder_resources = responder_resources;
  cep->initiator_depth = initiator_depth;
  cep->target_ack_delay = target_ack_delay;
  // rnr_retry_count stays the REQ's: the REP's count is the one the active side retries with.
  cep->flow_control = p.flow_control;
  cep->srq = p.srq;
  leave_backlog(*cep);
  cep->state = CepState::rep_sent;
  // A source that never answers gets this REP once: duplicates of its REQ still get it again.
  cep->retries_left = cep->unanswering_source ? 0 : cep->max_cm_retries;
  cep->retry_timeout_ns = response_wait_ns(cep->primary.packet_life_time, cep->remote_cm_response_timeout);
  arm_timer(*cep, CepTimer::retransmit, cep->retry_timeout_ns);
  return Status::ok;
}

void Protocol::on_rep(MadBuf& buf, const mad::MadHeader& hdr, const mad::Rep& rep) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = table_.find_by_comm_id(rep.remote_comm_id);
  if (cep == nullptr) {
    drop(port_index, DropReason::unknown_comm_id);
    reject_unknown(buf, hdr.transaction_id, rep.local_comm_id, rep.remote_comm_id, mad::MessageKind::rep,
                   mad::RejReason::invalid_comm_id, {});
    return;
  }
  if (!from_peer(*cep, buf,
                 {.comm_id = rep.local_comm_id, .their_qpn = rep.local_qpn, .their_ca_guid = rep.local_ca_guid})) {
    return;
  }
  switch (cep->state) {
    case CepState::req_sent:
    case CepState::mra_req_rcvd: break;
    case CepState::rep_rcvd:
    case CepState::mra_rep_sent:
    case CepState::established:
      // Only an active side, whose REQ it answers, can see a REP again.
      if (!cep->active) return drop(port_index, DropReason::out_of_state);
      // A retransmitted REP: our RTU (or MRA) was lost; send it again (12.9.8.2).
      ++message_counters(port_index, hdr.attribute_id).duplicate;
      if (cep->state == CepState::mra_rep_sent) {
        resend(*cep);
      } else if (cep->state == CepState::established) {
        resend_rtu(*cep);
      } else {
        drop(port_index, DropReason::duplicate);  // rep_rcvd: the application has it
      }
      return;
    default: return drop(port_index, DropReason::out_of_state);
  }
  // The same remote QP connected to us twice: the older connection is stale (12.9.8.3.1). REJ
  // the REP (hence rep_rcvd: the REJ names it) and tear the old connection down, as for a REQ.
  cep->remote_comm_id = rep.local_comm_id;
  cep->remote_qpn = rep.local_qpn;
  cep->remote_ca_guid = rep.local_ca_guid;
  cep->peer_known = true;
  if (const std::optional<Id> old = claim_remote_qpn(*cep)) {
    cep->state = CepState::rep_rcvd;
    reject(*cep, mad::RejReason::stale_conn, {}, {});
    env_.outbox.notify_stale(*old, buf);
    Event ev = event_of(EventType::rej_received);
    RejReceived& p = ev.params.emplace<RejReceived>();
    p.reason = static_cast<std::uint16_t>(mad::RejReason::stale_conn);
    p.message_rejected = static_cast<std::uint8_t>(mad::MessageKind::rep);
    emit(*cep, ev, nullptr);
    return;
  }
  cancel_timer(*cep);
  cep->remote_qkey = rep.local_q_key;
  cep->local_psn = rep.starting_psn;
  // Crosswise, as for the REQ on the passive side.
  cep->initiator_depth = rep.responder_resources;
  cep->responder_resources = rep.initiator_depth;
  cep->target_ack_delay = rep.target_ack_delay;
  cep->rnr_retry_count = rep.rnr_retry_count;
  cep->flow_control = rep.end_to_end_flow_control;
  cep->srq = rep.srq;
  cep->ece_vendor_id = rep.vendor_id();
  cep->transaction_id = hdr.transaction_id;
  cep->state = CepState::rep_rcvd;
  keep_received(*cep, buf);
  if (env_.config.auto_mra_fraction > 0) {
    arm_timer(*cep, CepTimer::auto_mra,
              auto_mra_delay_ns(env_.config.auto_mra_fraction, cep->local_cm_response_timeout));
  }
  Event ev = event_of(EventType::rep_received);
  ev.params.emplace<RepReceived>(RepReceived{
      .remote_ca_guid = rep.local_ca_guid,
      .remote_qpn = rep.local_qpn,
      .remote_qkey = rep.local_q_key,
      .starting_psn = rep.starting_psn,
      .responder_resources = rep.responder_resources,
      .initiator_depth = rep.initiator_depth,
      .target_ack_delay = rep.target_ack_delay,
      .failover_accepted = static_cast<std::uint8_t>(rep.failover_accepted),
      .rnr_retry_count = rep.rnr_retry_count,
      .flow_control = rep.end_to_end_flow_control,
      .srq = rep.srq,
      .ece_vendor_id = rep.vendor_id()});
  emit(*cep, ev, &buf);
}

// ---- RTU ---------------------------------------------------------------------------------------

Status Protocol::send_rtu(Id id, std::span<const std::uint8_t> private_data) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::rep_rcvd && cep->state != CepState::mra_rep_sent) return Status::invalid_state;
  if (!fits<kMaxRtuPrivateData>(private_data)) return Status::invalid_argument;
  mad::Rtu rtu;
  rtu.local_comm_id = cep->local_comm_id;
  rtu.remote_comm_id = cep->remote_comm_id;
  copy_into(rtu.private_data, private_data);
  if (!send_and_keep(*cep, rtu)) return Status::no_resources;  // kept: a duplicate REP resends it
  cancel_timer(*cep);
  cep->state = CepState::established;
  settle_established(*cep);
  return Status::ok;
}

void Protocol::on_rtu(MadBuf& buf, const mad::MadHeader& hdr, const mad::Rtu& rtu) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = find_local(port_index, rtu.remote_comm_id);
  if (cep == nullptr || !from_peer(*cep, buf, {.comm_id = rtu.local_comm_id})) return;
  if (cep->state == CepState::established && !cep->active) {
    ++message_counters(port_index, hdr.attribute_id).duplicate;
    return drop(port_index, DropReason::duplicate);
  }
  if (cep->state != CepState::rep_sent && cep->state != CepState::mra_rep_rcvd) {
    return drop(port_index, DropReason::out_of_state);
  }
  cancel_timer(*cep);
  cep->state = CepState::established;
  keep_received(*cep, buf);
  settle_established(*cep);
  Event ev = event_of(EventType::rtu_received);
  emit(*cep, ev, &buf);
}

Status Protocol::establish(Id id) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::rep_sent && cep->state != CepState::mra_rep_rcvd) return Status::invalid_state;
  cancel_timer(*cep);
  cep->state = CepState::established;
  settle_established(*cep);
  Event ev = event_of(EventType::user_established);
  emit(*cep, ev, nullptr);
  return Status::ok;
}

}  // namespace fastcm::engine
