// Alternate path loading (IBTA Vol. 1 12.8): LAP and APR, received and sent.
//
// It runs beside an established connection, in the endpoint's lap_state; either side may load a
// path, one LAP at a time per connection. The MRA of a LAP is handled with the other MRAs
// (connect_handlers.cpp), and an unanswered LAP's timeout with the other retries (protocol.cpp).
// The proposed path waits in the endpoint's AlternatePaths (pending_alternate) and becomes its
// alternate path only when an APR with status success is sent (passive) or received (active).
#include <algorithm>

#include "engine/cm_timeouts.h"
#include "engine/path_convert.h"
#include "engine/private_data.h"
#include "engine/protocol.h"

namespace fastcm::engine {

namespace {

// Where the APR's Additional Information starts in the MAD (IBTA Table 116: byte 12 of CM data).
constexpr std::size_t kAprInfoOffset = mad::kMadHeaderSize + 12;

// What the LAP's wire fields can carry (the codec rejects an invalid packet rate).
bool valid_lap_path(const Path& p) noexcept {
  return p.flow_label < (1u << 20) && p.sl <= 15 && mad::is_valid_packet_rate(p.rate) &&
         p.packet_life_time <= mad::kMaxTimeoutExponent;
}

// An APR with status success, sent or received: the LAP's path is the connection's alternate now.
void load_pending_alternate(CepTable& table, Cep& cep) noexcept {
  AlternatePaths& paths = table.alternates(cep);
  paths.alternate = paths.pending_alternate;
  cep.has_alternate = true;
}

}  // namespace

// ---- LAP ---------------------------------------------------------------------------------------

Status Protocol::send_lap(Id id, const LapParams& p) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::established || cep->lap_state != LapState::idle) return Status::invalid_state;
  if (p.private_data.size() > kMaxLapPrivateData || p.remote_cm_response_timeout > mad::kMaxTimeoutExponent ||
      !valid_lap_path(p.alternate)) {
    return Status::invalid_argument;
  }
  const PortAttr& local_port = port(cep->port_index);
  // As for a REQ's alternate path: migration stays on the connection's port.
  if (p.alternate.port != local_port.port_num) return Status::not_supported;

  mad::Lap lap;
  lap.local_comm_id = cep->local_comm_id;
  lap.remote_comm_id = cep->remote_comm_id;
  lap.remote_qpn_eecn = cep->remote_qpn;
  lap.remote_cm_response_timeout = p.remote_cm_response_timeout;
  lap.alternate = to_wire_path(p.alternate, local_port.ca.local_ca_ack_delay);
  copy_into(lap.private_data, p.private_data);
  cep->transaction_id = next_tid_++ << 32 | cep->local_comm_id;
  if (!send_and_keep(*cep, lap)) return Status::no_resources;
  cep->lap_state = LapState::lap_sent;
  table_.alternates(*cep).pending_alternate = p.alternate;
  cep->retries_left = cep->max_cm_retries;
  // The LAP and its answer travel the primary path.
  cep->retry_timeout_ns = response_wait_ns(cep->primary.packet_life_time, p.remote_cm_response_timeout);
  arm_timer(*cep, CepTimer::retransmit, cep->retry_timeout_ns);
  return Status::ok;
}

void Protocol::on_lap(MadBuf& buf, const mad::MadHeader& hdr, const mad::Lap& lap) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = find_local(port_index, lap.remote_comm_id);
  // Like a DREQ, a LAP names our QP: one naming another QP is not about this connection.
  if (cep == nullptr || !from_peer(*cep, buf, {.comm_id = lap.local_comm_id, .our_qpn = lap.remote_qpn_eecn})) {
    return;
  }
  if (cep->state != CepState::established) return drop(port_index, DropReason::out_of_state);
  switch (cep->lap_state) {
    case LapState::idle:
      // The LAP we last received, answered already (an APR is what leaves lap_rcvd for idle
      // while established): our APR was lost.
      if (repeats(cep->received, buf)) {
        ++message_counters(port_index, hdr.attribute_id).duplicate;
        resend(*cep);
        return;
      }
      break;
    case LapState::lap_rcvd:  // the application has it and has not answered yet
      ++message_counters(port_index, hdr.attribute_id).duplicate;
      return drop(port_index, DropReason::duplicate);
    case LapState::mra_lap_sent:  // our MRA was lost
      ++message_counters(port_index, hdr.attribute_id).duplicate;
      resend(*cep);
      return;
    case LapState::lap_sent:
    case LapState::mra_lap_rcvd:  // both sides load a path at once: ours goes first
      return drop(port_index, DropReason::out_of_state);
  }
  cep->lap_state = LapState::lap_rcvd;
  cep->transaction_id = hdr.transaction_id;  // the MRA and APR answer under the LAP's TID
  table_.alternates(*cep).pending_alternate =
      from_wire_path(lap.alternate, port(cep->port_index).port_num, cep->primary.pkey, cep->mtu);
  keep_received(*cep, buf);
  if (env_.config.auto_mra_fraction > 0) {
    arm_timer(*cep, CepTimer::auto_mra,
              auto_mra_delay_ns(env_.config.auto_mra_fraction, lap.remote_cm_response_timeout));
  }
  Event ev = event_of(EventType::lap_received);
  ev.params.emplace<LapReceived>(LapReceived{.alternate = table_.alternates(*cep).pending_alternate});
  emit(*cep, ev, &buf);
}

// ---- APR ---------------------------------------------------------------------------------------

Status Protocol::send_apr(Id id, const AprParams& p) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  if (cep->state != CepState::established ||
      (cep->lap_state != LapState::lap_rcvd && cep->lap_state != LapState::mra_lap_sent)) {
    return Status::invalid_state;
  }
  if (p.private_data.size() > kMaxAprPrivateData || p.info.size() > kMaxAdditionalInfo ||
      p.status > static_cast<std::uint8_t>(mad::AprStatus::invalid_sl)) {
    return Status::invalid_argument;
  }
  mad::Apr apr;
  apr.local_comm_id = cep->local_comm_id;
  apr.remote_comm_id = cep->remote_comm_id;
  apr.additional_info_length = static_cast<std::uint8_t>(p.info.size());
  apr.ap_status = static_cast<mad::AprStatus>(p.status);
  copy_into(apr.additional_info, p.info);
  copy_into(apr.private_data, p.private_data);
  if (!send_and_keep(*cep, apr)) return Status::no_resources;  // kept: a repeated LAP gets it again
  if (cep->timer_kind == CepTimer::auto_mra) cancel_timer(*cep);
  cep->lap_state = LapState::idle;
  if (apr.ap_status == mad::AprStatus::success) load_pending_alternate(table_, *cep);
  return Status::ok;
}

void Protocol::on_apr(MadBuf& buf, const mad::MadHeader& hdr, const mad::Apr& apr) {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  Cep* cep = find_local(port_index, apr.remote_comm_id);
  if (cep == nullptr || !from_peer(*cep, buf, {.comm_id = apr.local_comm_id})) return;
  const bool awaited = cep->state == CepState::established &&
                       (cep->lap_state == LapState::lap_sent || cep->lap_state == LapState::mra_lap_rcvd);
  if (!awaited) {
    // The peer resends its APR when our LAP retry crossed it.
    if (cep->state == CepState::established && repeats(cep->received, buf)) {
      ++message_counters(port_index, hdr.attribute_id).duplicate;
      return drop(port_index, DropReason::duplicate);
    }
    return drop(port_index, DropReason::out_of_state);
  }
  cancel_timer(*cep);
  cep->lap_state = LapState::idle;
  if (apr.ap_status == mad::AprStatus::success) load_pending_alternate(table_, *cep);
  keep_received(*cep, buf);
  Event ev = event_of(EventType::apr_received);
  ev.params.emplace<AprReceived>(AprReceived{
      .status = static_cast<std::uint8_t>(apr.ap_status),
      .info = std::span<const std::uint8_t>(buf.packet.mad).subspan(kAprInfoOffset, apr.additional_info_length)});
  emit(*cep, ev, &buf);
}

}  // namespace fastcm::engine
