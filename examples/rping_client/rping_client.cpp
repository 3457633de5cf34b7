#include "examples/rping_client/rping_client.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>

#include "examples/rping_common/qp_transition.h"
#include "examples/rping_common/rdma_cm_req.h"
#include "fastcm/cm_enums.h"
#include "fastcm/rdma_cm.h"

namespace fastcm::examples {

namespace {

constexpr std::size_t kCompletionsPerPoll = 16;
constexpr std::uint32_t kSendDepth = 4;
constexpr std::uint32_t kRecvDepth = 2;
constexpr std::uint64_t kRecvId = 1;
constexpr std::uint64_t kSendId = 2;

// Private data as text when it is text (up to its first NUL), else as hex without the zero fill.
std::string private_data_text(std::span<const std::uint8_t> data) {
  const auto end = std::find(data.begin(), data.end(), std::uint8_t{0});
  const bool text = end != data.begin() && std::all_of(data.begin(), end, [](std::uint8_t b) { return std::isprint(b) != 0; }) &&
                    std::all_of(end, data.end(), [](std::uint8_t b) { return b == 0; });
  if (text) {
    std::string quoted(1, '"');
    quoted.append(data.begin(), end);
    quoted += '"';
    return quoted;
  }
  const auto last = std::find_if(data.rbegin(), data.rend(), [](std::uint8_t b) { return b != 0; });
  const auto used = static_cast<std::size_t>(data.rend() - last);
  if (used == 0) return "none";
  std::string hex;
  char two[3];
  for (std::size_t i = 0; i < used; ++i) {
    std::snprintf(two, sizeof two, "%02x", data[i]);
    hex += two;
  }
  return hex;
}

}  // namespace

RpingClient::RpingClient(CmStack& cm, VerbsContext& verbs, const ClientConfig& config)
    : cm_(cm), verbs_(verbs), config_(config) {}

bool RpingClient::start(std::string& error) {
  qp_ = verbs_.create_rc_qp(kSendDepth, kRecvDepth, error);
  if (qp_ == nullptr) return false;
  recv_ = std::make_unique<RegisteredBuffer>(verbs_.pd(), rping::kAdvertBytes, IBV_ACCESS_LOCAL_WRITE);
  send_ = std::make_unique<RegisteredBuffer>(verbs_.pd(), rping::kAdvertBytes, 0);
  // The server reads the ping from `start_` and writes it back into `sink_`.
  start_ = std::make_unique<RegisteredBuffer>(verbs_.pd(), config_.size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  sink_ = std::make_unique<RegisteredBuffer>(verbs_.pd(), config_.size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (recv_->mr() == nullptr || send_->mr() == nullptr || start_->mr() == nullptr || sink_->mr() == nullptr) {
    error = "ibv_reg_mr failed";
    return false;
  }
  if (cm_.engine->create_id(cm_.delivery, nullptr, id_) != Status::ok) {
    error = "create_id failed";
    return false;
  }
  const RdmaCmTarget to{config_.source, config_.target, config_.port, random_source_port()};
  std::array<std::uint8_t, rdma_cm::kIpHeaderSize> header{};
  ReqParams req = rdma_cm_req(cm_.port(), to, header);
  req.qpn = qp_->qp_num;
  req.starting_psn = std::random_device{}() & 0xFF'FFFF;
  req.remote_cm_response_timeout = config_.cm_response_timeout;
  req.local_cm_response_timeout = config_.cm_response_timeout;
  req.max_cm_retries = config_.max_cm_retries;
  const Status st = cm_.engine->send_req(id_, req);
  if (st != Status::ok) {
    error = "send_req: " + std::string(to_string(st));
    return false;
  }
  req_ns_ = cm_.clock.now_ns();
  std::printf("rping_client: REQ sent to port %u (QPN 0x%x, source port %u)\n", config_.port, qp_->qp_num, to.source_port);
  // INIT now, so the first receive is up before the server can send.
  QpAttr attr;
  if (cm_.engine->init_qp_attr(id_, QpState::init, attr) != Status::ok ||
      !transition_qp(verbs_, qp_, attr, cm_.port(), error) || !post_recv()) {
    if (error.empty()) error = "QP to INIT or its first receive failed";
    return false;
  }
  return true;
}

void RpingClient::drain_cm_events() {
  cm_.drain_events([this](const Event& event) {
    if (!done_ && event.id == id_) on_event(event);
  });
}

void RpingClient::on_event(const Event& event) {
  const double since_req = static_cast<double>(cm_.clock.now_ns() - req_ns_) / 1e9;
  switch (event.type) {
    case EventType::rep_received: on_rep(); return;
    case EventType::mra_received:
      std::printf("rping_client: MRA received %.1f s after the REQ: the listener needs up to 4.096 us * 2^%u more\n",
                  since_req, std::get<MraReceived>(event.params).service_timeout);
      return;
    case EventType::rej_received: {
      const auto& rej = std::get<RejReceived>(event.params);
      std::printf("rping_client: REJ received: reason %u (%s), rejecting the %s, private data %s\n", rej.reason,
                  std::string(to_string(static_cast<RejReason>(rej.reason))).c_str(),
                  std::string(to_string(static_cast<MessageKind>(rej.message_rejected))).c_str(),
                  private_data_text(event.private_data).c_str());
      failed_ = true;
      end("refused");
      return;
    }
    case EventType::req_error:
      std::printf("rping_client: no answer: the REQ's retries ran out %.1f s after the first\n", since_req);
      failed_ = true;
      end("timed out");
      return;
    case EventType::dreq_received:
      disconnecting_ = true;
      disconnect_ns_ = cm_.clock.now_ns();
      std::printf("rping_client: DREQ received after %u pings, DREP sent (%s)\n", pings_,
                  std::string(to_string(cm_.engine->send_drep(id_, {}))).c_str());
      if (pings_ < config_.count) fail("the server disconnected first");
      return;
    case EventType::drep_received: std::printf("rping_client: DREP received\n"); return;
    case EventType::dreq_error: std::printf("rping_client: no DREP came; time-wait anyway\n"); return;
    case EventType::timewait_exit: {
      const auto ms = (cm_.clock.now_ns() - disconnect_ns_) / 1'000'000;
      std::printf("rping_client: time-wait over %llu ms after the disconnect\n", static_cast<unsigned long long>(ms));
      end("disconnected");
      return;
    }
    default: return;
  }
}

void RpingClient::on_rep() {
  std::string error;
  QpAttr attr;
  Status st = cm_.engine->init_qp_attr(id_, QpState::rtr, attr);
  if (st != Status::ok || !transition_qp(verbs_, qp_, attr, cm_.port(), error)) {
    fail(st != Status::ok ? "init_qp_attr(RTR): " + std::string(to_string(st)) : error);
    return;
  }
  st = cm_.engine->init_qp_attr(id_, QpState::rts, attr);
  if (st != Status::ok || !transition_qp(verbs_, qp_, attr, cm_.port(), error)) {
    fail(st != Status::ok ? "init_qp_attr(RTS): " + std::string(to_string(st)) : error);
    return;
  }
  st = cm_.engine->send_rtu(id_, {});
  if (st != Status::ok) {
    fail("send_rtu: " + std::string(to_string(st)));
    return;
  }
  established_ = true;
  ConnectionInfo info;
  (void)cm_.engine->connection_info(id_, info);
  std::printf("rping_client: REP received (QPN 0x%x), QP through RTR and RTS, RTU sent: established after %.1f ms; "
              "responder resources %u, initiator depth %u, MTU code %u, ACK timeout %u\n",
              info.remote_qpn, static_cast<double>(cm_.clock.now_ns() - req_ns_) / 1e6, info.responder_resources,
              info.initiator_depth, info.mtu, attr.timeout);
  send_ping();
}

void RpingClient::send_ping() {
  rping::fill_ping(std::span<char>(reinterpret_cast<char*>(start_->data()), config_.size), pings_);
  awaiting_write_ = false;
  if (!post_send(reinterpret_cast<std::uintptr_t>(start_->data()), start_->mr()->rkey, config_.size)) {
    fail("ibv_post_send failed");
  }
}

void RpingClient::drain_completions() {
  std::array<ibv_wc, kCompletionsPerPoll> wcs;
  int n;
  while ((n = ibv_poll_cq(verbs_.cq(), static_cast<int>(wcs.size()), wcs.data())) > 0) {
    for (int i = 0; i < n; ++i) {
      if (!done_) on_completion(wcs[static_cast<std::size_t>(i)]);
    }
  }
}

void RpingClient::on_completion(const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS) {
    if (!(disconnecting_ && wc.status == IBV_WC_WR_FLUSH_ERR)) {
      fail(std::string("work completion error: ") + ibv_wc_status_str(wc.status));
    }
    return;
  }
  if (wc.wr_id != kRecvId || disconnecting_) return;
  if (wc.byte_len != rping::kAdvertBytes) {
    fail("a message of " + std::to_string(wc.byte_len) + " bytes, not a go-ahead");
    return;
  }
  if (!post_recv()) {
    fail("ibv_post_recv failed");
    return;
  }
  if (!awaiting_write_) {  // the server has read the ping: give it the sink to write it back to
    awaiting_write_ = true;
    if (!post_send(reinterpret_cast<std::uintptr_t>(sink_->data()), sink_->mr()->rkey, config_.size)) {
      fail("ibv_post_send failed");
    }
    return;
  }
  if (std::memcmp(start_->data(), sink_->data(), config_.size) != 0) {
    fail("data mismatch: the ping came back as " + std::string(reinterpret_cast<const char*>(sink_->data()),
                                                              strnlen(reinterpret_cast<const char*>(sink_->data()), config_.size)));
    return;
  }
  std::printf("ping data: %s\n", reinterpret_cast<const char*>(sink_->data()));
  std::memset(sink_->data(), 0, config_.size);
  if (++pings_ < config_.count) {
    send_ping();
  } else {
    std::printf("rping_client: %u pings came back as sent\n", pings_);
    disconnect();
  }
}

void RpingClient::disconnect() {
  disconnecting_ = true;
  disconnect_ns_ = cm_.clock.now_ns();
  ibv_qp_attr error_state{};
  error_state.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(qp_, &error_state, IBV_QP_STATE);
  const Status st = cm_.engine->send_dreq(id_, {});
  std::printf("rping_client: DREQ sent (%s)\n", std::string(to_string(st)).c_str());
  if (st != Status::ok) end("not disconnected");
}

void RpingClient::fail(const std::string& why) {
  std::printf("rping_client: FAILED: %s\n", why.c_str());
  failed_ = true;
  if (established_ && !disconnecting_) {
    disconnect();
  } else if (!established_) {
    end("given up");
  }
}

void RpingClient::end(const char* how) {
  std::printf("rping_client: connection %s after %u pings\n", how, pings_);
  done_ = true;
  (void)cm_.engine->destroy(id_);
  if (qp_ != nullptr) ibv_destroy_qp(qp_);
  qp_ = nullptr;
}

void RpingClient::stop() {
  if (done_) return;
  std::printf("rping_client: FAILED: stopped before the connection ended\n");
  failed_ = true;
  end("stopped");
}

bool RpingClient::post_recv() {
  ibv_sge sge = recv_->sge(rping::kAdvertBytes);
  ibv_recv_wr wr{};
  wr.wr_id = kRecvId;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp_, &wr, &bad) == 0;
}

bool RpingClient::post_send(std::uint64_t addr, std::uint32_t rkey, std::uint32_t size) {
  rping::write_advert(rping::Advert{addr, rkey, size}, std::span<std::uint8_t, rping::kAdvertBytes>(send_->data(), rping::kAdvertBytes));
  ibv_sge sge = send_->sge(rping::kAdvertBytes);
  ibv_send_wr wr{};
  wr.wr_id = kSendId;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp_, &wr, &bad) == 0;
}

}  // namespace fastcm::examples
