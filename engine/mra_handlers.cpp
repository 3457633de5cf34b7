// Message receipt acknowledgements (IBTA Vol. 1 12.6.6): MRA of a REQ, a REP or a LAP, sent by the
// application or by the engine on its behalf, and received.
#include "engine/cm_timeouts.h"
#include "engine/private_data.h"
#include "engine/protocol.h"

namespace fastcm::engine {

Status Protocol::send_mra(Id id, const MraParams& p) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (!fits<kMaxMraPrivateData>(p.private_data) || p.service_timeout > 31) return Status::invalid_argument;
  return mra_for(*cep, p);
}

Status Protocol::mra_for(Cep& cep, const MraParams& p) noexcept {
  mad::Mra msg;
  CepState next = cep.state;
  LapState next_lap = cep.lap_state;
  switch (cep.state) {
    case CepState::req_rcvd: next = CepState::mra_req_sent; msg.message_mraed = mad::MessageKind::req; break;
    case CepState::rep_rcvd: next = CepState::mra_rep_sent; msg.message_mraed = mad::MessageKind::rep; break;
    case CepState::established:
      if (cep.lap_state != LapState::lap_rcvd) return Status::invalid_state;
      next_lap = LapState::mra_lap_sent;
      msg.message_mraed = mad::MessageKind::lap_or_none;
      break;
    default: return Status::invalid_state;
  }
  msg.local_comm_id = cep.local_comm_id;
  msg.remote_comm_id = cep.remote_comm_id;
  msg.service_timeout = p.service_timeout;
  copy_into(msg.private_data, p.private_data);
  if (!send_and_keep(cep, msg)) return Status::no_resources;
  if (cep.timer_kind == CepTimer::auto_mra) cancel_timer(cep);
  cep.state = next;
  cep.lap_state = next_lap;
  return Status::ok;
}

void Protocol::on_auto_mra_timeout(Cep& cep) noexcept {
  // The application is slow: keep the peer from timing out (12.6.6), once per message.
  MraParams p;
  p.service_timeout = env_.config.mra_service_timeout;
  (void)mra_for(cep, p);
}

void Protocol::on_mra(MadBuf& buf, const mad::MadHeader& hdr, const mad::Mra& mra) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = find_local(port_index, mra.remote_comm_id);
  if (cep == nullptr || !from_peer(*cep, buf, {.comm_id = mra.local_comm_id})) return;
  switch (mra.message_mraed) {
    case mad::MessageKind::req:
    case mad::MessageKind::rep: {
      // The state that waits for this message's answer, and the one an MRA extends it into.
      const bool of_req = mra.message_mraed == mad::MessageKind::req;
      const CepState waiting = of_req ? CepState::req_sent : CepState::rep_sent;
      const CepState extended = of_req ? CepState::mra_req_rcvd : CepState::mra_rep_rcvd;
      if (cep->state == extended) {
        ++message_counters(port_index, hdr.attribute_id).duplicate;
        return drop(port_index, DropReason::duplicate);
      }
      if (cep->state != waiting) return drop(port_index, DropReason::out_of_state);
      cep->state = extended;
      break;
    }
    case mad::MessageKind::lap_or_none:
      if (cep->state == CepState::established && cep->lap_state == LapState::mra_lap_rcvd) {
        ++message_counters(port_index, hdr.attribute_id).duplicate;
        return drop(port_index, DropReason::duplicate);
      }
      if (cep->state != CepState::established || cep->lap_state != LapState::lap_sent) {
        return drop(port_index, DropReason::out_of_state);
      }
      cep->lap_state = LapState::mra_lap_rcvd;
      break;
  }
  // The peer needs longer: wait its service time before retrying (retries left stay as they are).
  arm_timer(*cep, CepTimer::retransmit, mra_wait_ns(cep->primary.packet_life_time, mra.service_timeout));
  keep_received(*cep, buf);
  Event ev = event_of(EventType::mra_received);
  ev.params.emplace<MraReceived>(MraReceived{.service_timeout = mra.service_timeout});
  emit(*cep, ev, &buf);
}

}  // namespace fastcm::engine
