// Connection release (IBTA Vol. 1 12.7): DREQ and DREP, received and sent, and time-wait.

#include "engine/cm_timeouts.h"
#include "engine/private_data.h"
#include "engine/protocol.h"

namespace fastcm::engine {

bool Protocol::disconnect(Cep& cep, std::span<const std::uint8_t> private_data) noexcept {
  mad::Dreq dreq;
  dreq.local_comm_id = cep.local_comm_id;
  dreq.remote_comm_id = cep.remote_comm_id;
  dreq.remote_qpn_eecn = cep.remote_qpn;
  copy_into(dreq.private_data, private_data);
  cep.transaction_id = next_tid_++ << 32 | cep.local_comm_id;
  if (!send_and_keep(cep, dreq)) return false;
  cep.state = CepState::dreq_sent;
  cep.lap_state = LapState::idle;
  cep.retries_left = cep.max_cm_retries;
  cep.retry_timeout_ns = response_wait_ns(cep.primary.packet_life_time, cep.remote_cm_response_timeout);
  arm_timer(cep, CepTimer::retransmit, cep.retry_timeout_ns);
  return true;
}

Status Protocol::send_dreq(Id id, std::span<const std::uint8_t> private_data) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::established) return Status::invalid_state;
  if (private_data.size() > kMaxDreqPrivateData) return Status::invalid_argument;
  return disconnect(*cep, private_data) ? Status::ok : Status::no_resources;
}

void Protocol::on_dreq(MadBuf& buf, const mad::MadHeader& hdr, const mad::Dreq& dreq) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = table_.find_by_comm_id(dreq.remote_comm_id);
  if (cep == nullptr) {
    // A DREQ for a connection we no longer know: the peer wants to hear that it is gone (12.9.8.4).
    drop(port_index, DropReason::unknown_comm_id);
    mad::Drep drep;
    drep.local_comm_id = dreq.remote_comm_id;
    drep.remote_comm_id = dreq.local_comm_id;
    send_reply(buf.packet.addr, hdr.transaction_id, drep);
    return;
  }
  // 12.9.8.4 ties a DREQ to the QP it names as well.
  if (!from_peer(*cep, buf, {.comm_id = dreq.local_comm_id, .our_qpn = dreq.remote_qpn_eecn})) return;
  switch (cep->state) {
    case CepState::rep_sent:
    case CepState::mra_rep_rcvd:  // the RTU was lost, but the peer is established and leaving
    case CepState::dreq_sent:     // both sides disconnect at once: each answers the other
    case CepState::established: break;
    case CepState::timewait:
      ++message_counters(port_index, hdr.attribute_id).duplicate;
      if (sent_attr(*cep) == mad::AttrId::drep) {
        resend(*cep);  // our DREP was lost
      } else {
        // We left through our own DREQ (or a REJ): the peer still wants its DREP (12.9.8.4).
        mad::Drep drep;
        drep.local_comm_id = cep->local_comm_id;
        drep.remote_comm_id = cep->remote_comm_id;
        send_reply(buf.packet.addr, hdr.transaction_id, drep);
      }
      return;
    case CepState::dreq_rcvd:
      ++message_counters(port_index, hdr.attribute_id).duplicate;
      return drop(port_index, DropReason::duplicate);
    default: return drop(port_index, DropReason::out_of_state);
  }
  cancel_timer(*cep);
  settle_half_open(*cep, HalfOpenBudget::Settled::answered);  // rep_sent: the RTU was lost
  cep->state = CepState::dreq_rcvd;
  cep->lap_state = LapState::idle;
  cep->transaction_id = hdr.transaction_id;
  keep_received(*cep, buf);
  if (!table_.attached(*cep)) {
    // Destroyed by the application while connected: answer for it.
    answer_dreq(*cep, {});
    return;
  }
  Event ev = event_of(EventType::dreq_received);
  emit(*cep, ev, &buf);
}

void Protocol::answer_dreq(Cep& cep, std::span<const std::uint8_t> private_data) noexcept {
  mad::Drep drep;
  drep.local_comm_id = cep.local_comm_id;
  drep.remote_comm_id = cep.remote_comm_id;
  copy_into(drep.private_data, private_data);
  (void)send_and_keep(cep, drep);  // kept: a duplicate DREQ in time-wait gets it again
  enter_timewait(cep);
}

Status Protocol::send_drep(Id id, std::span<const std::uint8_t> private_data) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::dreq_rcvd) return Status::invalid_state;
  if (private_data.size() > kMaxDrepPrivateData) return Status::invalid_argument;
  answer_dreq(*cep, private_data);
  return Status::ok;
}

void Protocol::on_drep(MadBuf& buf, const mad::MadHeader& hdr, const mad::Drep& drep) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = find_local(port_index, drep.remote_comm_id);
  if (cep == nullptr || !from_peer(*cep, buf, {.comm_id = drep.local_comm_id})) return;
  switch (cep->state) {
    case CepState::dreq_sent: break;
    case CepState::dreq_rcvd:
      // A collision: their DREP to our DREQ crossed their DREQ. Without a DREQ of ours (it stays
      // the MAD we sent until we answer theirs) the DREP answers nothing here.
      if (sent_attr(*cep) != mad::AttrId::dreq) return drop(port_index, DropReason::out_of_state);
      break;
    case CepState::timewait:
      ++message_counters(port_index, hdr.attribute_id).duplicate;
      return drop(port_index, DropReason::duplicate);
    default: return drop(port_index, DropReason::out_of_state);
  }
  cancel_timer(*cep);
  enter_timewait(*cep);
  keep_received(*cep, buf);
  Event ev = event_of(EventType::drep_received);
  emit(*cep, ev, &buf);
}

}  // namespace fastcm::engine
