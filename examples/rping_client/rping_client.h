// rping_client's one connection: a REQ to an rdma_cm listener (a stock `rping -s`), an RC QP moved
// through INIT, RTR and RTS with Engine::init_qp_attr, then rping's ping-pong (rping_protocol.h)
// for the configured count with every ping checked when it comes back (as rping -V), and the
// disconnect through time-wait. Reports the CM's other answers as they come: an MRA (the
// listener asks for time), a REJ (its reason and private data), the REQ's retries running out.
//
// Thread contract: the event loop's thread alone, after CmStack and VerbsContext are open.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "examples/rping_common/cm_stack.h"
#include "examples/rping_common/rdma_cm_req.h"
#include "examples/rping_common/rping_protocol.h"
#include "examples/rping_common/verbs_context.h"
#include "fastcm/types.h"

namespace fastcm::examples {

struct ClientConfig {
  Gid source;  // the local port's GID the REQ leaves from (an IP address, as RoCE forms GIDs)
  Gid target;  // the listener's
  std::uint16_t port = rping::kDefaultPort;
  std::uint32_t count = 5;
  std::uint32_t size = rping::kDefaultSize;
  std::uint8_t cm_response_timeout = kRdmaCmResponseTimeout;  // 4.096 us * 2^20 = 4.3 s
  std::uint8_t max_cm_retries = kRdmaCmMaxRetries;
};

class RpingClient {
 public:
  RpingClient(CmStack& cm, VerbsContext& verbs, const ClientConfig& config);

  // Creates the QP and sends the REQ. False with `error` set when that fails.
  bool start(std::string& error);
  void drain_cm_events();
  void drain_completions();
  // Ends the connection at once (SIGINT/SIGTERM): Engine::destroy sends what the state needs.
  void stop();

  // The connection has ended: time-wait over, or refused, or failed.
  [[nodiscard]] bool done() const noexcept { return done_; }
  // Every ping came back as sent and the disconnect went through time-wait.
  [[nodiscard]] bool succeeded() const noexcept { return done_ && !failed_ && pings_ == config_.count; }

 private:
  void on_event(const Event& event);
  void on_rep();
  void on_completion(const ibv_wc& wc);
  void send_ping();
  void disconnect();
  void fail(const std::string& why);
  void end(const char* how);
  bool post_recv();
  bool post_send(std::uint64_t addr, std::uint32_t rkey, std::uint32_t size);

  CmStack& cm_;
  VerbsContext& verbs_;
  ClientConfig config_;
  Id id_;
  ibv_qp* qp_ = nullptr;
  std::unique_ptr<RegisteredBuffer> recv_, send_, start_, sink_;
  bool established_ = false;
  bool awaiting_write_ = false;  // the start advert was answered; the sink advert is out
  bool disconnecting_ = false;
  bool failed_ = false;
  bool done_ = false;
  std::uint32_t pings_ = 0;
  std::uint64_t req_ns_ = 0;
  std::uint64_t disconnect_ns_ = 0;
};

}  // namespace fastcm::examples
