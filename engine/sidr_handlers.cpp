// Service ID resolution (IBTA Vol. 1 12.11): SIDR_REQ and SIDR_REP, received and sent.
//
// The active side resolves on an idle endpoint from create_id: the SIDR_REQ's request ID is the
// endpoint's local comm ID, so the SIDR_REP routes and looks up like any MAD carrying our ID, and
// the endpoint is idle again once answered or out of retries. The passive side's endpoint lives
// only from the SIDR_REQ to the application's SIDR_REP; while it lives, a retransmitted SIDR_REQ
// finds it in the (request ID, sender) index and is dropped, as the application already has it.
#include <algorithm>

#include "engine/mad/units.h"
#include "engine/path_address.h"
#include "engine/port_lookup.h"
#include "engine/private_data.h"
#include "engine/protocol.h"

namespace fastcm::engine {

namespace {

// Retries of a SIDR_REQ, at most as many as the CM's other requests may make (4-bit Max CM Retries).
constexpr std::uint8_t kMaxSidrRetries = 15;

// Where the SIDR_REP's Additional Information starts in the MAD (IBTA Table 120: byte 24 of CM data).
constexpr std::size_t kSidrRepInfoOffset = mad::kMadHeaderSize + 24;

}  // namespace

// ---- active side: SIDR_REQ ---------------------------------------------------------------------

Status Protocol::send_sidr_req(Id id, const SidrReqParams& p) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::idle) return Status::invalid_state;
  const auto port_index = port_index_of(env_.ports, p.path.port);
  if (p.private_data.size() > kMaxSidrReqPrivateData || p.timeout > mad::kMaxTimeoutExponent ||
      p.max_retries > kMaxSidrRetries || !port_index) {
    return Status::invalid_argument;
  }
  const PortAttr& local_port = port(*port_index);
  const auto pkey_index = pkey_index_of(local_port, p.path.pkey);
  if (!pkey_index) return Status::invalid_argument;

  mad::SidrReq req;
  req.request_id = cep->local_comm_id;
  req.partition_key = p.path.pkey;
  req.service_id = p.service_id;
  copy_into(req.private_data, p.private_data);
  cep->active = true;
  cep->port_index = *port_index;
  cep->service_id = p.service_id;
  cep->primary = p.path;
  cep->peer = address_along(p.path, *port_index, local_port, *pkey_index);
  cep->transaction_id = next_tid_++ << 32 | cep->local_comm_id;
  if (!send_and_keep(*cep, req)) return Status::no_resources;
  cep->state = CepState::sidr_req_sent;
  cep->retries_left = p.max_retries;
  cep->retry_timeout_ns = mad::timeout_exponent_to_ns(p.timeout);
  arm_timer(*cep, CepTimer::retransmit, cep->retry_timeout_ns);
  return Status::ok;
}

// ---- passive side: SIDR_REQ --------------------------------------------------------------------

void Protocol::on_sidr_req(MadBuf& buf, const mad::MadHeader& hdr, const mad::SidrReq& req) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  const PortAttr& local_port = port(port_index);
  // Answers to a SIDR_REQ of no endpoint (no service, or refused for lack of room).
  const auto answer = [&](mad::SidrStatus status) {
    mad::SidrRep rep;
    rep.request_id = req.request_id;
    rep.status = status;
    rep.service_id = req.service_id;
    send_reply(buf.packet.addr, hdr.transaction_id, rep);
  };

  if (sidr_reqs_.find({req.request_id, sidr_sender_key(buf.packet.addr)}) != nullptr) {
    ++message_counters(port_index, hdr.attribute_id).duplicate;
    return drop(port_index, DropReason::duplicate);
  }
  const Listen* listen = env_.listens.match(req.service_id, local_port.port_num);
  if (listen == nullptr) return answer(mad::SidrStatus::service_id_unsupported);
  // Unanswered SIDR_REQs count against the listen's backlog like REQs. SIDR has no MRA, so the
  // mra policy drops like the drop policy: the requester retries.
  if (!env_.listens.take_backlog(*listen)) {
    drop(port_index, DropReason::backlog_full);
    if (listen->params.backlog_policy == BacklogPolicy::reject) answer(mad::SidrStatus::rejected);
    return;
  }
  Cep* cep = allocate_endpoint();
  if (cep == nullptr) {
    env_.listens.release_backlog(listen->id);
    return drop(port_index, DropReason::no_resources);  // the requester retries
  }
  attach(*cep, listen->params.delivery, nullptr);
  cep->backlog = listen->id;
  cep->port_index = port_index;
  cep->service_id = req.service_id;
  cep->sidr_request_id = req.request_id;
  cep->primary.pkey = req.partition_key;
  cep->peer = buf.packet.addr;  // answer the SIDR_REQ's sender where it came from
  cep->transaction_id = hdr.transaction_id;
  cep->state = CepState::sidr_req_rcvd;
  sidr_reqs_.insert(*cep);
  keep_received(*cep, buf);

  Event ev = event_of(EventType::sidr_req_received);
  ev.context = listen->params.context;
  ev.params.emplace<SidrReqReceived>(SidrReqReceived{
      .listen_id = listen->id,
      .service_id = req.service_id,
      .pkey = req.partition_key,
      .port = local_port.port_num,
      .remote_lid = buf.packet.addr.remote_lid,
      .remote_gid = buf.packet.addr.grh.present ? std::optional<Gid>(buf.packet.addr.grh.remote_gid)
                                                : std::nullopt});
  emit(*cep, ev, &buf);
}

Status Protocol::send_sidr_rep(Id id, const SidrRepParams& p) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::sidr_req_rcvd) return Status::invalid_state;
  if (p.private_data.size() > kMaxSidrRepPrivateData || p.info.size() > kMaxAdditionalInfo ||
      p.status > static_cast<std::uint8_t>(mad::SidrStatus::class_version_unsupported) ||
      p.qpn >= (1u << 24) || p.ece_vendor_id >= (1u << 24)) {
    return Status::invalid_argument;
  }
  return answer_sidr_req(*cep, p) ? Status::ok : Status::no_resources;
}

bool Protocol::answer_sidr_req(Cep& cep, const SidrRepParams& p) noexcept {
  mad::SidrRep rep;
  rep.request_id = cep.sidr_request_id;
  rep.status = static_cast<mad::SidrStatus>(p.status);
  rep.additional_info_length = static_cast<std::uint8_t>(p.info.size());
  rep.set_vendor_id(p.ece_vendor_id);
  rep.qpn = p.qpn;
  rep.service_id = cep.service_id;
  rep.q_key = p.qkey;
  copy_into(rep.class_port_info, p.info);
  copy_into(rep.private_data, p.private_data);
  if (!send_and_keep(cep, rep)) return false;
  // The exchange is over: nothing will answer a later retransmission of the SIDR_REQ from this
  // endpoint (a late one starts a new exchange), and the application's Id goes stale now.
  free_endpoint(cep);
  return true;
}

// ---- active side: SIDR_REP ---------------------------------------------------------------------

void Protocol::on_sidr_rep(MadBuf& buf, const mad::MadHeader& hdr, const mad::SidrRep& rep) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = find_local(port_index, rep.request_id);
  if (cep == nullptr) return;
  // A SIDR_REP names our request ID alone: it counts only from where the SIDR_REQ went.
  if (cep->state == CepState::sidr_req_sent && !from_peer(*cep, buf, {})) return;
  if (cep->state != CepState::sidr_req_sent) {
    // The peer answered our SIDR_REQ retry too.
    if (cep->state == CepState::idle && repeats(cep->received, buf)) {
      ++message_counters(port_index, hdr.attribute_id).duplicate;
      return drop(port_index, DropReason::duplicate);
    }
    return drop(port_index, DropReason::out_of_state);
  }
  cancel_timer(*cep);
  cep->state = CepState::idle;
  keep_received(*cep, buf);
  Event ev = event_of(EventType::sidr_rep_received);
  ev.params.emplace<SidrRepReceived>(SidrRepReceived{
      .status = static_cast<std::uint8_t>(rep.status),
      .qpn = rep.qpn,
      .qkey = rep.q_key,
      .ece_vendor_id = rep.vendor_id(),
      .info = std::span<const std::uint8_t>(buf.packet.mad).subspan(kSidrRepInfoOffset, rep.additional_info_length)});
  emit(*cep, ev, &buf);
}

}  // namespace fastcm::engine
