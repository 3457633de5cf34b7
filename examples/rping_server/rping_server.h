// rping_server's connections: it listens on two rdma_cm TCP ports, accepts each REQ with an RC QP
// of its own (moved through INIT, RTR and RTS with Engine::init_qp_attr) and then serves the
// client's data exchange: rping's (rping_protocol.h) on one port, ucmatose's on the other
// (SEND message_count messages of message_size bytes to the client, receive as many back, then
// disconnect, as ucmatose's own server does). Every ping is checked against rping's text before
// it is written back.
//
// Thread contract: the event loop's thread alone, after CmStack and VerbsContext are open.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>

#include "examples/rping_common/cm_stack.h"
#include "examples/rping_common/verbs_context.h"
#include "examples/rping_server/served_connection.h"

namespace fastcm::examples {

struct ServerConfig {
  std::uint16_t rping_port = rping::kDefaultPort;
  std::uint16_t ucmatose_port = 7471;  // 0: no ucmatose listen
  std::uint32_t ucmatose_count = 10;   // ucmatose -C default
  std::uint32_t ucmatose_size = 100;   // ucmatose -S default
  std::uint32_t connections = 0;       // done() once this many ended; 0: never
};

// Bounds of one server.
inline constexpr std::uint32_t kMaxServedConnections = 64;
inline constexpr std::uint32_t kMaxUcmatoseCount = 64;
inline constexpr std::uint32_t kMaxUcmatoseSize = 65536;

class RpingServer {
 public:
  RpingServer(CmStack& cm, VerbsContext& verbs, const ServerConfig& config);

  // Listens on the configured ports. False with `error` naming the port the engine refused.
  bool listen(std::string& error);
  // Handles every CM event waiting in the engine's event queue.
  void drain_cm_events();
  // Handles every completion on the shared CQ (after VerbsContext::take_cq_event).
  void drain_completions();
  // Stops listening and ends every open connection at once (DREQ or REJ by Engine::destroy);
  // each counts as failed unless its client was already done.
  void stop();

  // ServerConfig::connections have ended.
  [[nodiscard]] bool done() const noexcept { return config_.connections != 0 && finished_ >= config_.connections; }
  // Connections that ended (time-wait over, or failed) and how many of them failed.
  [[nodiscard]] std::uint32_t finished() const noexcept { return finished_; }
  [[nodiscard]] std::uint32_t failed() const noexcept { return failed_; }
  [[nodiscard]] std::uint64_t pings() const noexcept { return pings_; }
  [[nodiscard]] std::uint64_t messages() const noexcept { return messages_; }

 private:
  void on_event(const Event& event);
  void accept(const Event& event, Service service);
  bool set_up(ServedConnection& c, const Event& event, std::string& error);
  void on_established(ServedConnection& c, const char* how);
  void on_completion(const ibv_wc& wc);
  void on_rping_completion(ServedConnection& c, WorkKind kind, const ibv_wc& wc);
  void on_ucmatose_completion(ServedConnection& c, WorkKind kind, const ibv_wc& wc);
  void disconnect(ServedConnection& c);
  void fail(ServedConnection& c, const std::string& why);
  void finish(ServedConnection& c, const char* how);
  void release(ServedConnection& c);

  bool post_recv(ServedConnection& c, RegisteredBuffer& buffer, std::size_t length);
  bool post_send(ServedConnection& c, WorkKind kind, RegisteredBuffer& buffer, std::size_t length);
  [[nodiscard]] std::uint64_t wr_id(const ServedConnection& c, WorkKind kind) const noexcept;
  [[nodiscard]] std::uint64_t now_ns() const noexcept { return cm_.clock.now_ns(); }

  CmStack& cm_;
  VerbsContext& verbs_;
  ServerConfig config_;
  std::array<Service, 2> services_{Service::rping, Service::ucmatose};  // the listens' contexts
  std::array<Id, 2> listens_{};
  std::array<ServedConnection, kMaxServedConnections> connections_{};
  std::mt19937 psn_source_{std::random_device{}()};
  std::uint32_t arrivals_ = 0;
  std::uint32_t finished_ = 0;
  std::uint32_t failed_ = 0;
  std::uint64_t pings_ = 0;
  std::uint64_t messages_ = 0;
};

}  // namespace fastcm::examples
