#include "examples/rping_server/rping_server.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <span>

#include "examples/rping_common/qp_transition.h"
#include "fabric/roce_udp/ip_gid.h"
#include "fabric/roce_udp/rocev2_frame.h"
#include "fastcm/cm_enums.h"
#include "fastcm/rdma_cm.h"

namespace fastcm::examples {

namespace {

constexpr std::size_t kCompletionsPerPoll = 32;
// rping's client posts one receive and sends one message at a time; its server at most a "go
// ahead" and one RDMA operation in flight.
constexpr std::uint32_t kRpingSendDepth = 4;
constexpr std::uint32_t kRpingRecvDepth = 2;

std::string address_text(const rdma_cm::IpHeader& h) {
  Gid source;
  if (h.ip_version == rdma_cm::IpVersion::v4) {
    const rdma_cm::Ipv4Address a = h.src_ipv4();
    source = roce::ipv4_mapped_gid(std::uint32_t{a[0]} << 24 | std::uint32_t{a[1]} << 16 | std::uint32_t{a[2]} << 8 | a[3]);
  } else {
    source.raw = h.src_addr;
  }
  return roce::ip_text(source) + ":" + std::to_string(h.src_port);
}

const char* service_name(Service s) { return s == Service::rping ? "rping" : "ucmatose"; }

}  // namespace

RpingServer::RpingServer(CmStack& cm, VerbsContext& verbs, const ServerConfig& config)
    : cm_(cm), verbs_(verbs), config_(config) {}

bool RpingServer::listen(std::string& error) {
  const std::array<std::uint16_t, 2> ports{config_.rping_port, config_.ucmatose_port};
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (ports[i] == 0) continue;
    ListenParams params;
    params.service_id = rdma_cm::service_id(rdma_cm::PortSpace::tcp, ports[i]);
    params.delivery = cm_.delivery;
    params.context = &services_[i];
    const Status st = cm_.engine->listen(params, listens_[i]);
    if (st != Status::ok) {
      error = "listen on rdma_cm TCP port " + std::to_string(ports[i]) + ": " + std::string(to_string(st));
      return false;
    }
  }
  return true;
}

void RpingServer::drain_cm_events() {
  cm_.drain_events([this](const Event& event) { on_event(event); });
}

void RpingServer::on_event(const Event& event) {
  if (event.type == EventType::req_received) {
    accept(event, *static_cast<const Service*>(event.context));
    return;
  }
  auto* c = static_cast<ServedConnection*>(event.context);
  if (c == nullptr || !c->in_use || c->id != event.id) return;
  switch (event.type) {
    case EventType::rtu_received: on_established(*c, "RTU received"); return;
    case EventType::user_established: on_established(*c, "data before the RTU: established by the server"); return;
    case EventType::dreq_received: {
      const bool early = c->service == Service::ucmatose && c->received < config_.ucmatose_count;
      c->disconnecting = true;
      c->disconnect_ns = now_ns();
      ibv_qp_attr error_state{};
      error_state.qp_state = IBV_QPS_ERR;
      ibv_modify_qp(c->qp, &error_state, IBV_QP_STATE);  // flush what is posted, as rdma_disconnect does
      const Status st = cm_.engine->send_drep(c->id, {});
      std::printf("connection %u: DREQ received, DREP sent (%s)\n", c->number, std::string(to_string(st)).c_str());
      if (c->service == Service::rping && c->pings == 0) fail(*c, "disconnected before a ping");
      if (early) fail(*c, "disconnected before its messages were through");
      return;
    }
    case EventType::drep_received: std::printf("connection %u: DREP received\n", c->number); return;
    case EventType::dreq_error:
      std::printf("connection %u: no DREP came (DREQ retries ran out); time-wait anyway\n", c->number);
      return;
    case EventType::timewait_exit: finish(*c, "time-wait over"); return;
    case EventType::rej_received: {
      const auto& rej = std::get<RejReceived>(event.params);
      fail(*c, "REJ received, reason " + std::to_string(rej.reason) + " (" +
                   std::string(to_string(static_cast<RejReason>(rej.reason))) + ")");
      finish(*c, "rejected");
      return;
    }
    case EventType::rep_error:
      fail(*c, "no RTU came (REP retries ran out)");
      finish(*c, "given up");
      return;
    case EventType::mra_received: std::printf("connection %u: MRA received\n", c->number); return;
    default: return;
  }
}

void RpingServer::accept(const Event& event, Service service) {
  const std::uint32_t number = ++arrivals_;
  RejParams refusal;
  rdma_cm::IpHeader header;
  std::span<const std::uint8_t> consumer;
  const rdma_cm::HeaderStatus hs = rdma_cm::decode_private_data(event.private_data, header, consumer);
  if (hs != rdma_cm::HeaderStatus::ok) {
    std::printf("connection %u: REQ without rdma_cm's IP header (%s): rejected\n", number,
                std::string(to_string(hs)).c_str());
    (void)cm_.engine->send_rej(event.id, refusal);
    ++finished_;
    ++failed_;
    return;
  }
  const auto free_slot = std::find_if(connections_.begin(), connections_.end(),
                                      [](const ServedConnection& s) { return !s.in_use; });
  if (free_slot == connections_.end()) {
    std::printf("connection %u: %u connections open already: rejected (no resources)\n", number,
                kMaxServedConnections);
    refusal.reason = static_cast<std::uint16_t>(RejReason::no_resources);
    (void)cm_.engine->send_rej(event.id, refusal);
    ++finished_;
    ++failed_;
    return;
  }
  ServedConnection& c = *free_slot;
  const std::uint32_t generation = c.generation + 1;
  c = ServedConnection{};
  c.in_use = true;
  c.generation = generation;
  c.number = number;
  c.id = event.id;
  c.service = service;
  c.peer = address_text(header);
  std::string error;
  if (cm_.engine->set_context(c.id, &c) != Status::ok || !set_up(c, event, error)) {
    std::printf("connection %u: %s from %s: FAILED to accept: %s\n", number, service_name(service),
                c.peer.c_str(), error.c_str());
    (void)cm_.engine->send_rej(event.id, refusal);
    c.failed = true;
    finish(c, "refused");
  }
}

bool RpingServer::set_up(ServedConnection& c, const Event& event, std::string& error) {
  const auto& req = std::get<ReqReceived>(event.params);
  const bool rping = c.service == Service::rping;
  c.qp = verbs_.create_rc_qp(rping ? kRpingSendDepth : std::max(config_.ucmatose_count, kRpingSendDepth),
                             rping ? kRpingRecvDepth : std::max(config_.ucmatose_count, kRpingRecvDepth), error);
  if (c.qp == nullptr) return false;
  if (rping) {
    c.recv = std::make_unique<RegisteredBuffer>(verbs_.pd(), rping::kAdvertBytes, IBV_ACCESS_LOCAL_WRITE);
    c.send = std::make_unique<RegisteredBuffer>(verbs_.pd(), rping::kAdvertBytes, 0);
    c.data = std::make_unique<RegisteredBuffer>(verbs_.pd(), rping::kMaxSize, IBV_ACCESS_LOCAL_WRITE);
  } else {
    c.recv = std::make_unique<RegisteredBuffer>(verbs_.pd(), config_.ucmatose_size, IBV_ACCESS_LOCAL_WRITE);
    c.send = std::make_unique<RegisteredBuffer>(verbs_.pd(), config_.ucmatose_size, 0);
  }
  if (c.recv->mr() == nullptr || c.send->mr() == nullptr || (c.data && c.data->mr() == nullptr)) {
    error = "ibv_reg_mr failed";
    return false;
  }
  QpAttr attr;
  Status st = cm_.engine->init_qp_attr(c.id, QpState::init, attr);
  if (st != Status::ok || !transition_qp(verbs_, c.qp, attr, cm_.port(), error)) {
    if (st != Status::ok) error = "init_qp_attr(INIT): " + std::string(to_string(st));
    return false;
  }
  // Receives go up before the REP: the client may send as soon as it has it.
  const std::uint32_t receives = rping ? 1 : config_.ucmatose_count;
  for (std::uint32_t i = 0; i < receives; ++i) {
    if (!post_recv(c, *c.recv, c.recv->size())) {
      error = "ibv_post_recv failed";
      return false;
    }
  }
  RepParams rep;
  rep.qpn = c.qp->qp_num;
  rep.starting_psn = psn_source_() & 0xFF'FFFF;
  // Crosswise: what the client reads from us is what we must take as responder, and back; the
  // engine caps both to the REQ's offer and the CA.
  rep.responder_resources = req.initiator_depth;
  rep.initiator_depth = req.responder_resources;
  st = cm_.engine->send_rep(c.id, rep);
  if (st != Status::ok) {
    error = "send_rep: " + std::string(to_string(st));
    return false;
  }
  // RTR and RTS once the REP is out: it names the PSN our receive queue starts from. The client
  // sends data only after its RTU, by when both are long done.
  for (const QpState state : {QpState::rtr, QpState::rts}) {
    st = cm_.engine->init_qp_attr(c.id, state, attr);
    if (st != Status::ok || !transition_qp(verbs_, c.qp, attr, cm_.port(), error)) {
      if (st != Status::ok) error = "init_qp_attr: " + std::string(to_string(st));
      return false;
    }
  }
  ConnectionInfo info;
  (void)cm_.engine->connection_info(c.id, info);
  std::printf("connection %u: %s from %s: REQ (QPN 0x%x) accepted with QPN 0x%x; responder resources %u, "
              "initiator depth %u\n",
              c.number, service_name(c.service), c.peer.c_str(), req.remote_qpn, c.qp->qp_num,
              info.responder_resources, info.initiator_depth);
  return true;
}

void RpingServer::on_established(ServedConnection& c, const char* how) {
  if (c.established) return;
  c.established = true;
  std::printf("connection %u: established (%s)\n", c.number, how);
  if (c.service != Service::ucmatose) return;
  for (std::uint32_t i = 0; i < config_.ucmatose_count; ++i) {
    if (!post_send(c, WorkKind::send, *c.send, c.send->size())) {
      fail(c, "ibv_post_send failed");
      return;
    }
  }
}

void RpingServer::drain_completions() {
  std::array<ibv_wc, kCompletionsPerPoll> wcs;
  int n;
  while ((n = ibv_poll_cq(verbs_.cq(), static_cast<int>(wcs.size()), wcs.data())) > 0) {
    for (int i = 0; i < n; ++i) on_completion(wcs[static_cast<std::size_t>(i)]);
  }
}

void RpingServer::on_completion(const ibv_wc& wc) {
  const std::uint64_t slot = wc.wr_id >> 40;
  const auto generation = static_cast<std::uint32_t>(wc.wr_id >> 8);
  const auto kind = static_cast<WorkKind>(wc.wr_id & 0xFF);
  if (slot >= connections_.size()) return;
  ServedConnection& c = connections_[slot];
  if (!c.in_use || c.generation != generation) return;  // a completion of the slot's earlier use
  if (wc.status != IBV_WC_SUCCESS) {
    if (!(c.disconnecting && wc.status == IBV_WC_WR_FLUSH_ERR)) {
      fail(c, std::string("work completion error: ") + ibv_wc_status_str(wc.status));
    }
    return;
  }
  // Data can overtake the RTU: it proves the client has our REP, so the connection is up.
  if (kind == WorkKind::recv && !c.established && cm_.engine->establish(c.id) == Status::ok) {
    on_established(c, "data before the RTU: established by the server");
  }
  if (c.service == Service::rping) {
    on_rping_completion(c, kind, wc);
  } else {
    on_ucmatose_completion(c, kind, wc);
  }
}

void RpingServer::on_rping_completion(ServedConnection& c, WorkKind kind, const ibv_wc& wc) {
  switch (kind) {
    case WorkKind::recv: {
      if (wc.byte_len != rping::kAdvertBytes) {
        fail(c, "a message of " + std::to_string(wc.byte_len) + " bytes, not an advert");
        return;
      }
      c.remote = rping::read_advert(std::span<const std::uint8_t, rping::kAdvertBytes>(c.recv->data(), rping::kAdvertBytes));
      if (!post_recv(c, *c.recv, rping::kAdvertBytes)) {
        fail(c, "ibv_post_recv failed");
        return;
      }
      if (c.step == RpingStep::start_advert) {
        if (c.remote.size < rping::kMinSize || c.remote.size > rping::kMaxSize) {
          fail(c, "a ping of " + std::to_string(c.remote.size) + " bytes, outside rping's sizes");
          return;
        }
        c.ping_size = c.remote.size;
        c.step = RpingStep::reading;
        if (!post_send(c, WorkKind::rdma_read, *c.data, c.ping_size)) fail(c, "RDMA READ not posted");
      } else if (c.step == RpingStep::sink_advert) {
        if (c.remote.size < c.ping_size) {
          fail(c, "a sink of " + std::to_string(c.remote.size) + " bytes for a ping of " + std::to_string(c.ping_size));
          return;
        }
        c.step = RpingStep::writing;
        if (!post_send(c, WorkKind::rdma_write, *c.data, c.ping_size)) fail(c, "RDMA WRITE not posted");
      } else {
        fail(c, "an advert while an RDMA operation was running");
      }
      return;
    }
    case WorkKind::rdma_read: {
      const std::span<const char> ping(reinterpret_cast<const char*>(c.data->data()), c.ping_size);
      if (!rping::is_ping(ping, c.pings)) {
        fail(c, "ping " + std::to_string(c.pings) + " is not rping's text: " + std::string(ping.data(), strnlen(ping.data(), ping.size())));
        return;
      }
      std::printf("server ping data: %s\n", ping.data());
      c.step = RpingStep::sink_advert;
      rping::write_advert(rping::Advert{reinterpret_cast<std::uintptr_t>(c.data->data()), c.data->mr()->rkey, c.ping_size},
                          std::span<std::uint8_t, rping::kAdvertBytes>(c.send->data(), rping::kAdvertBytes));
      if (!post_send(c, WorkKind::send, *c.send, rping::kAdvertBytes)) fail(c, "go-ahead not posted");
      return;
    }
    case WorkKind::rdma_write:
      ++c.pings;
      ++pings_;
      c.step = RpingStep::start_advert;
      if (!post_send(c, WorkKind::send, *c.send, rping::kAdvertBytes)) fail(c, "go-ahead not posted");
      return;
    case WorkKind::send: return;
  }
}

void RpingServer::on_ucmatose_completion(ServedConnection& c, WorkKind kind, const ibv_wc& wc) {
  if (kind == WorkKind::recv) {
    if (wc.byte_len != config_.ucmatose_size) {
      fail(c, "a message of " + std::to_string(wc.byte_len) + " bytes, not " + std::to_string(config_.ucmatose_size));
      return;
    }
    ++c.received;
    ++messages_;
  } else if (kind == WorkKind::send) {
    ++c.sent;
  }
  if (c.sent == config_.ucmatose_count && c.received == config_.ucmatose_count && !c.disconnecting) {
    std::printf("connection %u: %u messages of %u bytes sent and %u received\n", c.number, c.sent,
                config_.ucmatose_size, c.received);
    disconnect(c);
  }
}

void RpingServer::disconnect(ServedConnection& c) {
  c.disconnecting = true;
  c.disconnect_ns = now_ns();
  ibv_qp_attr error_state{};
  error_state.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(c.qp, &error_state, IBV_QP_STATE);
  const Status st = cm_.engine->send_dreq(c.id, {});
  std::printf("connection %u: DREQ sent (%s)\n", c.number, std::string(to_string(st)).c_str());
  if (st != Status::ok) finish(c, "not disconnected");
}

void RpingServer::fail(ServedConnection& c, const std::string& why) {
  std::printf("connection %u: FAILED: %s\n", c.number, why.c_str());
  c.failed = true;
  if (c.established && !c.disconnecting) disconnect(c);
}

void RpingServer::finish(ServedConnection& c, const char* how) {
  char after[64] = "";
  if (c.disconnect_ns != 0) {
    std::snprintf(after, sizeof after, " %llu ms after the disconnect",
                  static_cast<unsigned long long>((now_ns() - c.disconnect_ns) / 1'000'000));
  }
  if (c.service == Service::rping) {
    std::printf("connection %u: %s%s; %u pings verified%s\n", c.number, how, after, c.pings,
                c.failed ? "; FAILED" : "");
  } else {
    std::printf("connection %u: %s%s; %u messages each way%s\n", c.number, how, after,
                std::min(c.sent, c.received), c.failed ? "; FAILED" : "");
  }
  ++finished_;
  if (c.failed) ++failed_;
  (void)cm_.engine->destroy(c.id);
  release(c);
}

void RpingServer::release(ServedConnection& c) {
  if (c.qp != nullptr) ibv_destroy_qp(c.qp);
  c.qp = nullptr;
  c.recv.reset();
  c.send.reset();
  c.data.reset();
  c.in_use = false;
}

void RpingServer::stop() {
  for (const Id listen : listens_) {
    if (!listen.empty()) (void)cm_.engine->destroy(listen);
  }
  for (ServedConnection& c : connections_) {
    if (!c.in_use) continue;
    const bool done = c.disconnecting && !c.failed;
    if (!done) {
      std::printf("connection %u: FAILED: the server stopped first\n", c.number);
      c.failed = true;
    }
    finish(c, "stopped");
  }
}

bool RpingServer::post_recv(ServedConnection& c, RegisteredBuffer& buffer, std::size_t length) {
  ibv_sge sge = buffer.sge(length);
  ibv_recv_wr wr{};
  wr.wr_id = wr_id(c, WorkKind::recv);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(c.qp, &wr, &bad) == 0;
}

bool RpingServer::post_send(ServedConnection& c, WorkKind kind, RegisteredBuffer& buffer, std::size_t length) {
  ibv_sge sge = buffer.sge(length);
  ibv_send_wr wr{};
  wr.wr_id = wr_id(c, kind);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  switch (kind) {
    case WorkKind::rdma_read: wr.opcode = IBV_WR_RDMA_READ; break;
    case WorkKind::rdma_write: wr.opcode = IBV_WR_RDMA_WRITE; break;
    default: wr.opcode = IBV_WR_SEND; break;
  }
  if (kind == WorkKind::rdma_read || kind == WorkKind::rdma_write) {
    wr.wr.rdma.remote_addr = c.remote.addr;
    wr.wr.rdma.rkey = c.remote.rkey;
  }
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(c.qp, &wr, &bad) == 0;
}

std::uint64_t RpingServer::wr_id(const ServedConnection& c, WorkKind kind) const noexcept {
  const auto slot = static_cast<std::uint64_t>(&c - connections_.data());
  return slot << 40 | std::uint64_t{c.generation & 0xFFFF'FFFFu} << 8 | static_cast<std::uint8_t>(kind);
}

}  // namespace fastcm::examples
