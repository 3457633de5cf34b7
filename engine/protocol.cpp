// Dispatch of received MADs to their handlers, and the steps every handler shares.
#include "engine/protocol.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "engine/mad/codec.h"
#include "engine/private_data.h"
#include "engine/routing_key.h"
#include "engine/mad/units.h"
#include "logging/log.h"

namespace fastcm::engine {

namespace {

// The duplicate-REQ index's key of a REQ (cep_index.h), read from the wire for prefetching.
RemoteKey duplicate_key(mad::ConstMadSpan req) noexcept {
  return {mad::peek<&mad::Req::local_comm_id>(req), mad::peek<&mad::Req::local_ca_guid>(req)};
}

constexpr std::size_t counter_index(mad::AttrId attr) noexcept {
  switch (attr) {
    case mad::AttrId::class_port_info: return static_cast<std::size_t>(CmMessageKind::class_port_info);
    case mad::AttrId::req: return static_cast<std::size_t>(CmMessageKind::req);
    case mad::AttrId::mra: return static_cast<std::size_t>(CmMessageKind::mra);
    case mad::AttrId::rej: return static_cast<std::size_t>(CmMessageKind::rej);
    case mad::AttrId::rep: return static_cast<std::size_t>(CmMessageKind::rep);
    case mad::AttrId::rtu: return static_cast<std::size_t>(CmMessageKind::rtu);
    case mad::AttrId::dreq: return static_cast<std::size_t>(CmMessageKind::dreq);
    case mad::AttrId::drep: return static_cast<std::size_t>(CmMessageKind::drep);
    case mad::AttrId::sidr_req: return static_cast<std::size_t>(CmMessageKind::sidr_req);
    case mad::AttrId::sidr_rep: return static_cast<std::size_t>(CmMessageKind::sidr_rep);
    case mad::AttrId::lap: return static_cast<std::size_t>(CmMessageKind::lap);
    case mad::AttrId::apr: return static_cast<std::size_t>(CmMessageKind::apr);
  }
  return 0;
}

// Decodes the body as M and runs the handler; a body the codec rejects is counted as malformed.
template <mad::CmMessage M>
using Handler = void (Protocol::*)(MadBuf&, const mad::MadHeader&, const M&);

// REJ "timeout" names the CA that timed out in its ARI (IBTA Table 109), big-endian.
std::array<std::uint8_t, 8> ca_guid_ari(const PortAttr& port) noexcept {
  std::array<std::uint8_t, 8> ari{};
  for (std::size_t i = 0; i < ari.size(); ++i) ari[i] = static_cast<std::uint8_t>(port.node_guid >> (56 - 8 * i));
  return ari;
}

}  // namespace

Protocol::Protocol(const ProtocolEnv& env)
    : env_(env),
      table_(env.max_endpoints, env.shard, env.layout),
      dup_reqs_(table_),
      sidr_reqs_(table_),
      wheel_(TimerWheelConfig{.tick_shift = 10, .start_ns = env.clock.now_ns()}),
      counters_(std::make_unique<PortCounters[]>(env.ports.size())) {}

Protocol::~Protocol() {
  for (std::uint32_t s = 0; s < table_.high_water(); ++s) {
    Cep& cep = table_.at(s);
    if (!cep.live) continue;
    wheel_.cancel(cep.timer);
    release(env_.pool, cep.sent);
    release(env_.pool, cep.received);
    cep.sent = cep.received = nullptr;
  }
}

void Protocol::on_mad(MadBuf& buf) noexcept {
  const std::uint16_t port_index = buf.packet.addr.port_index;
  if (port_index >= env_.ports.size()) return;
  mad::MadHeader hdr;
  if (!mad::decode_header(buf.packet.mad, hdr).ok()) {
    drop(port_index, DropReason::malformed);
    return;
  }
  const auto handle = [&]<mad::CmMessage M>(Handler<M> handler) {
    M msg;
    if (!mad::decode_body(mad::ConstMadSpan(buf.packet.mad), msg).ok()) {
      drop(port_index, DropReason::malformed);
      return;
    }
    ++message_counters(port_index, hdr.attribute_id).received;
    (this->*handler)(buf, hdr, msg);
  };
  switch (hdr.attribute_id) {
    case mad::AttrId::class_port_info: handle(&Protocol::on_class_port_info); break;
    case mad::AttrId::req: handle(&Protocol::on_req); break;
    case mad::AttrId::mra: handle(&Protocol::on_mra); break;
    case mad::AttrId::rej: handle(&Protocol::on_rej); break;
    case mad::AttrId::rep: handle(&Protocol::on_rep); break;
    case mad::AttrId::rtu: handle(&Protocol::on_rtu); break;
    case mad::AttrId::dreq: handle(&Protocol::on_dreq); break;
    case mad::AttrId::drep: handle(&Protocol::on_drep); break;
    case mad::AttrId::sidr_req: handle(&Protocol::on_sidr_req); break;
    case mad::AttrId::sidr_rep: handle(&Protocol::on_sidr_rep); break;
    case mad::AttrId::lap: handle(&Protocol::on_lap); break;
    case mad::AttrId::apr: handle(&Protocol::on_apr); break;
  }
}

void Protocol::prefetch(const MadBuf& buf) const noexcept {
  const mad::ConstMadSpan bytes(buf.packet.mad);
  const RoutingKey key = routing_key(bytes, buf.packet.addr);
  switch (key.kind) {
    case RoutingKey::Kind::remote_qp:  // a REQ: on_req's duplicate and stale checks
      dup_reqs_.prefetch(duplicate_key(bytes));
      env_.remote_qpns.prefetch({key.id, key.origin});
      break;
    case RoutingKey::Kind::local_comm_id:
      table_.prefetch(key.comm_id);
      // A REP's stale check and claim (claim_remote_qpn) read its sender's QP in RemoteQpns.
      if (mad::peek<&mad::MadHeader::attribute_id>(bytes) == mad::AttrId::rep) {
        env_.remote_qpns.prefetch({mad::peek<&mad::Rep::local_qpn>(bytes), mad::peek<&mad::Rep::local_ca_guid>(bytes)});
      }
      break;
    case RoutingKey::Kind::sidr_request:
    case RoutingKey::Kind::any_shard:
    case RoutingKey::Kind::unrouted: break;
  }
}

void Protocol::prefetch_second(const MadBuf& buf) const noexcept {
  const mad::ConstMadSpan bytes(buf.packet.mad);
  if (mad::peek<&mad::MadHeader::attribute_id>(bytes) != mad::AttrId::req) return;
  dup_reqs_.prefetch_chain(duplicate_key(bytes));
}

// ---- timers ------------------------------------------------------------------------------------

std::size_t Protocol::on_timers() noexcept {
  batch_open_ = false;
  return wheel_.expire(now(), [this](TimerNode& node) {
    on_timer(table_.at(static_cast<CepTimerNode&>(node).slot));
  });
}

void Protocol::on_timer(Cep& cep) noexcept {
  const CepTimer kind = cep.timer_kind;
  cep.timer_kind = CepTimer::none;
  switch (kind) {
    case CepTimer::retransmit: on_retransmit_timeout(cep); break;
    case CepTimer::auto_mra: on_auto_mra_timeout(cep); break;
    case CepTimer::timewait: {
      dup_reqs_.erase(cep);
      release_remote_qpn(cep);
      if (!table_.attached(cep)) {
        free_endpoint(cep);
        return;
      }
      cep.state = CepState::idle;
      Event ev = event_of(EventType::timewait_exit);
      emit(cep, ev, nullptr);
      break;
    }
    case CepTimer::none: break;
  }
}

void Protocol::on_retransmit_timeout(Cep& cep) noexcept {
  if (cep.retries_left > 0) {
    --cep.retries_left;
    resend(cep);
    arm_timer(cep, CepTimer::retransmit, cep.retry_timeout_ns);
    return;
  }
  // Out of retries: the peer is gone or unreachable. The message that went unanswered, before a
  // REJ below takes its place.
  const std::optional<mad::AttrId> unanswered = sent_attr(cep);
  Event ev;
  switch (cep.state) {
    case CepState::req_sent:
    case CepState::mra_req_rcvd:
    case CepState::rep_sent:
    case CepState::mra_rep_rcvd: {
      // Tell the peer, in case only its answers are lost.
      const bool passive = cep.state == CepState::rep_sent || cep.state == CepState::mra_rep_rcvd;
      settle_half_open(cep, HalfOpenBudget::Settled::unanswered);
      reject(cep, mad::RejReason::timeout, ca_guid_ari(port(cep.port_index)), {});
      ev.type = passive ? EventType::rep_error : EventType::req_error;
      break;
    }
    case CepState::dreq_sent:
      enter_timewait(cep);  // the peer never answered: release anyway (12.9.8.4)
      ev.type = EventType::dreq_error;
      break;
    case CepState::sidr_req_sent:
      cep.state = CepState::idle;
      ev.type = EventType::sidr_req_error;
      break;
    case CepState::established:  // a LAP unanswered
      cep.lap_state = LapState::idle;
      ev.type = EventType::lap_error;
      break;
    default: return;
  }
  if (unanswered) ++message_counters(cep.peer.port_index, *unanswered).timed_out;
  emit(cep, ev, nullptr);
}

void Protocol::abandon(Cep& cep) noexcept {
  switch (cep.state) {
    case CepState::idle:
    case CepState::sidr_req_sent: free_endpoint(cep); return;
    case CepState::sidr_req_rcvd: {
      // Answer the requester rather than let it time out (the kernel CM does the same).
      SidrRepParams rejected;
      rejected.status = static_cast<std::uint8_t>(mad::SidrStatus::rejected);
      if (!answer_sidr_req(cep, rejected)) free_endpoint(cep);
      return;
    }
    case CepState::req_sent:
    case CepState::mra_req_rcvd:
      reject(cep, mad::RejReason::timeout, ca_guid_ari(port(cep.port_index)), {});
      break;
    case CepState::req_rcvd:
    case CepState::mra_req_sent:
    case CepState::rep_rcvd:
    case CepState::mra_rep_sent:
    case CepState::rep_sent:
    case CepState::mra_rep_rcvd: reject(cep, mad::RejReason::consumer_reject, {}, {}); break;
    case CepState::established:
      // Out of MADs for the DREQ: leave as after unanswered DREQs (12.9.8.4) rather than stay
      // established with nobody to tell; the peer's own DREQ is answered from time-wait.
      if (!disconnect(cep, {})) enter_timewait(cep);
      break;
    case CepState::dreq_rcvd: answer_dreq(cep, {}); break;
    case CepState::dreq_sent:
    case CepState::timewait: break;  // the running timer finishes the job
  }
  if (cep.state == CepState::idle) free_endpoint(cep);
}

void Protocol::arm_timer(Cep& cep, CepTimer kind, std::uint64_t after_ns) noexcept {
  cep.timer_kind = kind;
  if (batch_open_) {
    wheel_.defer(cep.timer, after_ns);
  } else {
    wheel_.rearm(cep.timer, now() + after_ns);
  }
}

void Protocol::cancel_timer(Cep& cep) noexcept {
  wheel_.cancel(cep.timer);
  cep.timer_kind = CepTimer::none;
}

// ---- sending -----------------------------------------------------------------------------------

MadBuf* Protocol::new_mad(const MadAddress& to, MadAccount account) noexcept {
  MadBuf* buf = env_.pool.get(account);
  if (buf == nullptr) {
    drop(to.port_index, DropReason::no_resources);
    return nullptr;
  }
  buf->packet.addr = to;
  return buf;
}

std::optional<mad::AttrId> Protocol::sent_attr(const Cep& cep) noexcept {
  mad::MadHeader hdr;
  if (cep.sent == nullptr || !mad::decode_header(cep.sent->packet.mad, hdr).ok()) return std::nullopt;
  return hdr.attribute_id;
}

void Protocol::resend(Cep& cep) noexcept {
  // Every kept MAD is one this shard encoded, so its header decodes.
  if (const auto attr = sent_attr(cep)) env_.outbox.send(*cep.sent, SendTally{.attr = *attr, .retry = true});
}

void Protocol::resend_rtu(Cep& cep) noexcept {
  if (sent_attr(cep) == mad::AttrId::rtu) return resend(cep);
  mad::Rtu rtu;
  rtu.local_comm_id = cep.local_comm_id;
  rtu.remote_comm_id = cep.remote_comm_id;
  send_unkept(cep.peer, mad::cm_header(mad::Method::send, mad::AttrId::rtu, cep.transaction_id), rtu, true);
}

void Protocol::settle_established(Cep& cep) noexcept {
  settle_half_open(cep, HalfOpenBudget::Settled::answered);  // RTU, or data on the QP
  const auto private_data_of = [](const MadBuf& m) { return mad::private_data(mad::ConstMadSpan(m.packet.mad)); };
  if (cep.sent != nullptr && (!cep.active || all_zero(private_data_of(*cep.sent)))) {
    release(env_.pool, cep.sent);
    cep.sent = nullptr;
  }
  if (cep.received == nullptr) return;
  if (const std::span<const std::uint8_t> data = private_data_of(*cep.received); all_zero(data)) {
    cep.received_zeros = static_cast<std::uint8_t>(data.size());
    release(env_.pool, cep.received);
    cep.received = nullptr;
  }
}

void Protocol::count_accepted(std::uint16_t port_index, SendTally tally) noexcept {
  if (port_index >= env_.ports.size()) return;
  MessageCounters& c = message_counters(port_index, tally.attr);
  ++(tally.retry ? c.retried : c.sent);
}

void Protocol::drop(std::uint16_t port_index, DropReason why) noexcept {
  if (port_index < env_.ports.size()) ++counters_[port_index].drops[static_cast<std::size_t>(why)];
  FASTCM_LOG(LogLevel::debug, "port index %u: MAD dropped, %s", static_cast<unsigned>(port_index),
             to_string(why).data());  // the names are NUL-terminated literals
}

MessageCounters& Protocol::message_counters(std::uint16_t port_index, mad::AttrId attr) noexcept {
  return counters_[port_index].messages[counter_index(attr)];
}

void Protocol::reject_unknown(const MadBuf& buf, std::uint64_t tid, std::uint32_t their_comm_id,
                              std::uint32_t our_comm_id, mad::MessageKind rejected,
                              mad::RejReason reason, std::span<const std::uint8_t> ari) noexcept {
  mad::Rej rej;
  rej.local_comm_id = our_comm_id;
  rej.remote_comm_id = their_comm_id;
  rej.message_rejected = rejected;
  rej.reason = reason;
  copy_into(rej.ari, ari);
  rej.rejected_info_length = static_cast<std::uint8_t>(std::min(ari.size(), rej.ari.size()));
  send_reply(buf.packet.addr, tid, rej);
}

// ---- events ------------------------------------------------------------------------------------

void Protocol::keep_received(Cep& cep, MadBuf& buf) noexcept {
  retain(buf);
  release(env_.pool, cep.received);
  cep.received = &buf;
}

void Protocol::emit(Cep& cep, Event& event, MadBuf* mad) noexcept {
  if (!table_.attached(cep)) return;
  event.id = CepTable::id_of(cep);
  if (event.context == nullptr) event.context = cep.context;
  event.mad = mad;
  if (mad != nullptr && event.private_data.empty()) {
    event.private_data = mad::private_data(mad::ConstMadSpan(mad->packet.mad));
  }
  if (cep.delivery.queue != nullptr) {
    if (!env_.outbox.enqueue(*cep.delivery.queue, event, cep.slot, mad, cep.port_index)) {
      drop(cep.port_index, DropReason::queue_full);
    }
    return;
  }
  // The endpoint's first callback on the stack claims the attachment word, so a destroy from
  // another thread either comes first (no callback) or finds the callback running (it may finish).
  const bool nested = in_callback_of(event.id);
  const std::uint32_t slot = cep.slot;
  if (!nested && !table_.enter_callback(cep)) return;
  CallbackFrame frame{.id = event.id, .slot = slot, .outer = running_callbacks_};
  running_callbacks_ = &frame;
  cep.delivery.handler(event, cep.delivery.handler_context);  // may destroy or reuse `cep`
  running_callbacks_ = frame.outer;
  if (!nested) table_.leave_callback(slot);
  if (frame.destroyed && frame.on_destroyed != nullptr) env_.outbox.retire(frame.on_destroyed, frame.destroyed_context);
}

void Protocol::report_call_failed(Id id, ApiCall call, Status status) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return;
  Event ev = event_of(EventType::call_failed);
  ev.params = CallFailed{.call = call, .status = status};
  emit(*cep, ev, nullptr);
}

// ---- endpoint lifetime -------------------------------------------------------------------------

Cep* Protocol::find_local(std::uint16_t port_index, std::uint32_t our_comm_id) noexcept {
  Cep* cep = table_.find_by_comm_id(our_comm_id);
  if (cep == nullptr) drop(port_index, DropReason::unknown_comm_id);
  return cep;
}

bool Protocol::from_peer(const Cep& cep, const MadBuf& buf, const PeerClaim& claim) noexcept {
  const std::optional<DropReason> why = peer_mismatch(cep, buf.packet.addr, claim);
  if (why) drop(buf.packet.addr.port_index, *why);
  return !why;
}

std::optional<DropReason> Protocol::peer_mismatch(const Cep& cep, const MadAddress& from,
                                                  const PeerClaim& claim) const noexcept {
  if (cep.state == CepState::idle || cep.state == CepState::sidr_req_rcvd) return std::nullopt;
  if (const std::optional<DropReason> why = address_mismatch(cep, from)) return why;
  if (claim.our_qpn != PeerClaim::kNotCarried && claim.our_qpn != cep.local_qpn) return DropReason::wrong_qpn;
  // Before the REP an active side knows only where its REQ went: a REJ of it may come from a CM
  // that made no endpoint (Local Communication ID 0) or from the passive endpoint, an MRA or a
  // first REP from the passive endpoint, whose ID it learns from the REP. A SIDR_REQ's sender
  // learns no ID of its peer at all.
  if (!cep.peer_known) return std::nullopt;
  if (claim.comm_id != cep.remote_comm_id) return DropReason::wrong_comm_id;
  if (claim.their_qpn != PeerClaim::kNotCarried && claim.their_qpn != cep.remote_qpn) return DropReason::wrong_qpn;
  if (claim.their_qpn != PeerClaim::kNotCarried && claim.their_ca_guid != cep.remote_ca_guid) {
    return DropReason::wrong_comm_id;  // a comm ID names a connection only with its CA's GUID
  }
  return std::nullopt;
}

std::optional<DropReason> Protocol::address_mismatch(const Cep& cep, const MadAddress& from) const noexcept {
  if (from.port_index != cep.port_index) return DropReason::wrong_port;
  // The fabric stamps the source LID, GID and P_Key: a node elsewhere cannot pass for the peer
  // without seeing the connection's traffic. The peer sends from its end of the primary path (the
  // common case, checked first: the line after the IDs), of the alternate one after a migration,
  // or from where its REQ came (cep.peer on the passive side, when a router rewrote the source).
  const auto along = [&from](Lid lid, const Gid& gid) {
    return from.remote_lid == lid && (!from.grh.present || from.grh.remote_gid == gid);
  };
  const Path& alternate = table_.alternates(cep).alternate;
  const bool address = along(cep.primary.remote_lid, cep.primary.remote_gid) ||
                       (cep.has_alternate && along(alternate.remote_lid, alternate.remote_gid)) ||
                       along(cep.peer.remote_lid, cep.peer.grh.remote_gid);
  if (!address) return DropReason::wrong_source;
  // The connection's partition is the one its REQ names (one P_Key for both paths), whichever
  // table entry holds it (full or limited membership). Not the partition a passive side's REQ
  // arrived on: that one may differ from what the REQ names, and the peer's port may be a member
  // of both, so a MAD on it is not the connection's.
  const auto keys = port(cep.port_index).pkeys();
  constexpr PKey kPartition = 0x7FFF;
  if (from.pkey_index >= keys.size() || (keys[from.pkey_index] & kPartition) != (cep.primary.pkey & kPartition)) {
    return DropReason::wrong_source;
  }
  return std::nullopt;
}

std::optional<std::uint32_t> Protocol::slot_of(Id id) const noexcept {
  if (running_callbacks_ != nullptr && running_callbacks_->id == id) return running_callbacks_->slot;
  return table_.own_slot_of(id);
}

Cep* Protocol::find_user(Id id) noexcept {
  const std::optional<std::uint32_t> slot = slot_of(id);
  Cep* cep = slot ? table_.find(id, *slot) : nullptr;
  if (cep == nullptr) return nullptr;
  const bool held = id == posted_id_ ? table_.attached_or_detaching(*cep) : table_.attached(*cep);
  return held ? cep : nullptr;
}

const Cep* Protocol::find_user(Id id) const noexcept { return const_cast<Protocol*>(this)->find_user(id); }

void Protocol::leave_backlog(Cep& cep) noexcept {
  if (cep.backlog.empty()) return;
  env_.listens.release_backlog(cep.backlog);
  cep.backlog = {};
}

void Protocol::settle_half_open(Cep& cep, HalfOpenBudget::Settled how) noexcept {
  if (cep.half_open_listen.empty()) return;
  env_.half_open.settle(cep.half_open_source, cep.half_open_listen, how);
  cep.half_open_listen = {};
}

std::optional<Id> Protocol::claim_remote_qpn(Cep& cep) noexcept {
  const Id self = CepTable::id_of(cep);
  const std::optional<Id> other = env_.remote_qpns.claim({cep.remote_qpn, cep.remote_ca_guid}, self);
  cep.in_qpn_index = !other.has_value();
  return other;
}

void Protocol::release_remote_qpn(Cep& cep) noexcept {
  if (!cep.in_qpn_index) return;
  env_.remote_qpns.release({cep.remote_qpn, cep.remote_ca_guid}, CepTable::id_of(cep));
  cep.in_qpn_index = false;
}

bool Protocol::pass_req(MadBuf& req, std::optional<Id> owner) noexcept {
  if (!env_.outbox.pass_on(req, owner)) return false;
  --message_counters(req.packet.addr.port_index, mad::AttrId::req).received;
  return true;
}

void Protocol::attach(Cep& cep, const Delivery& delivery, void* context) noexcept {
  cep.delivery = delivery;
  cep.context = context;
  table_.attach(cep);
}

void Protocol::enter_timewait(Cep& cep) noexcept {
  cep.state = CepState::timewait;
  leave_backlog(cep);
  // Long enough for every packet of the old connection to leave the fabric: the local ACK
  // timeout covers a round trip plus the peer CA's ACK delay (IBTA 12.9.8.7's time-wait rule).
  const std::uint8_t ack_timeout = cep.primary.packet_life_time;
  arm_timer(cep, CepTimer::timewait, 2 * mad::timeout_exponent_to_ns(ack_timeout) +
                                         mad::timeout_exponent_to_ns(cep.target_ack_delay));
}

void Protocol::free_endpoint(Cep& cep) noexcept {
  cancel_timer(cep);
  dup_reqs_.erase(cep);
  release_remote_qpn(cep);
  sidr_reqs_.erase(cep);
  leave_backlog(cep);
  settle_half_open(cep, HalfOpenBudget::Settled::abandoned);
  release(env_.pool, cep.sent);
  release(env_.pool, cep.received);
  cep.sent = cep.received = nullptr;
  table_.free(cep);
  env_.budget.give();
}

Cep* Protocol::allocate_endpoint(bool spare) noexcept {
  if (!env_.pool.room_for_handshake() || !env_.budget.take(spare)) return nullptr;
  Cep* cep = table_.allocate();
  if (cep == nullptr) env_.budget.give(spare);  // the shard's table is full
  return cep;
}

// ---- commands shared by every state ------------------------------------------------------------

Status Protocol::create_id(const Delivery& delivery, void* context, Id& out) noexcept {
  if (!delivery.valid()) return Status::invalid_argument;
  Cep* cep = allocate_endpoint();
  if (cep == nullptr) return Status::no_resources;
  attach(*cep, delivery, context);
  out = CepTable::id_of(*cep);
  return Status::ok;
}

namespace {
void discard_event(const Event&, void*) noexcept {}
}  // namespace

Status Protocol::create_spare(Id& out, std::uint32_t& slot) noexcept {
  Cep* cep = allocate_endpoint(true);
  if (cep == nullptr) return Status::no_resources;
  attach(*cep, Delivery{.handler = &discard_event}, nullptr);
  out = CepTable::id_of(*cep);
  slot = cep->slot;
  return Status::ok;
}

void Protocol::adopt_spare(std::uint32_t slot, const Delivery& delivery, void* context) noexcept {
  // By the slot: decoding the Id (six SipHash rounds) would cost the taking thread more than the
  // rest of its create_id.
  Cep& cep = table_.at(slot);
  cep.delivery = delivery;
  cep.context = context;
  env_.budget.adopt();
}

Status Protocol::set_context(Id id, void* context) noexcept {
  Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  cep->context = context;
  return Status::ok;
}

Status Protocol::last_private_data(Id id, std::span<const std::uint8_t>& out) const noexcept {
  const Cep* cep = find_user(id);
  if (cep == nullptr) return Status::stale_id;
  static constexpr std::array<std::uint8_t, kMaxRtuPrivateData> kZeros{};  // the longest private data
  out = cep->received != nullptr ? mad::private_data(mad::ConstMadSpan(cep->received->packet.mad))
                                 : std::span<const std::uint8_t>(kZeros).first(cep->received_zeros);
  return Status::ok;
}

Status Protocol::destroy(Id id, Engine::DestroyedFn on_destroyed, void* ctx) noexcept {
  const std::optional<std::uint32_t> slot = slot_of(id);
  Cep* cep = slot ? table_.try_detach(id, *slot) : nullptr;
  if (cep == nullptr) return Status::stale_id;
  abandon(*cep);  // the protocol side: REJ, DREQ, DREP or time-wait as the state requires
  for (CallbackFrame* f = running_callbacks_; f != nullptr; f = f->outer) {
    if (f->id == id) {
      f->destroyed = true;
      f->on_destroyed = on_destroyed;
      f->destroyed_context = ctx;
      return Status::ok;
    }
  }
  if (on_destroyed != nullptr) env_.outbox.retire(on_destroyed, ctx);
  return Status::ok;
}

void Protocol::destroy_detached(std::uint32_t slot, std::uint32_t generation, Engine::DestroyedFn on_destroyed,
                                void* ctx) noexcept {
  // Still live unless its time-wait ended (or its SIDR answer went out) since the detach.
  if (Cep* cep = table_.complete_remote_detach(slot, generation)) abandon(*cep);
  if (on_destroyed != nullptr) env_.outbox.retire(on_destroyed, ctx);
}

void Protocol::on_stale(const MadBuf& cause) noexcept {
  mad::DecodedMad decoded;
  if (!mad::decode(cause.packet.mad, decoded).ok()) return;
  // Found again here rather than carried: the MAD is what travels to this shard, and the entry
  // may have changed hands since (then it names no endpoint of ours or not an established one).
  RemoteQpnKey key;
  if (const auto* req = std::get_if<mad::Req>(&decoded.message)) {
    key = {req->local_qpn, req->local_ca_guid};
  } else if (const auto* rep = std::get_if<mad::Rep>(&decoded.message)) {
    key = {rep->local_qpn, rep->local_ca_guid};
  } else {
    return;
  }
  const std::optional<Id> id = env_.remote_qpns.find(key);
  if (!id || env_.layout.shard_of(id->comm_id()) != env_.shard) return;
  Cep* cep = table_.find(*id);
  if (cep == nullptr || cep->state != CepState::established) return;
  // The claim tears a connection down: only its peer's address may make it (12.9.8.3.2 trusts the
  // CA GUID and QPN the payload names, which anyone can write).
  if (const std::optional<DropReason> why = address_mismatch(*cep, cause.packet.addr)) {
    return drop(cause.packet.addr.port_index, *why);
  }
  (void)disconnect(*cep, {});
}

}  // namespace fastcm::engine
