// Building blocks shared by the conformance scenarios: a listening server that accepts, a client
// that completes the handshake, and the REQ parameters they use.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>

#include "tests/conformance/harness.h"

namespace fastcm::test {

inline constexpr std::uint64_t kServiceId = 0x1000'0000'0000'0042;

// The REQ the scenarios send from client QP `qpn` to kServiceId: answers expected within ~0.4 s
// (path packet life time 14, CM response timeouts 16), three retries.
[[nodiscard]] inline ReqParams standard_req(const Path& to_server, Qpn qpn) {
  ReqParams p;
  p.service_id = kServiceId;
  p.primary = to_server;
  p.qpn = qpn;
  p.starting_psn = 0x1111;
  p.responder_resources = 8;
  p.initiator_depth = 8;
  p.remote_cm_response_timeout = 16;
  p.local_cm_response_timeout = 16;
  p.max_cm_retries = 3;
  return p;
}
[[nodiscard]] inline ReqParams standard_req(const Cluster& cluster, Qpn qpn) {
  return standard_req(cluster.path_to_server(), qpn);
}

// The server listens on kServiceId and answers every REQ with a REP (unless `accept` is false);
// the client answers every REP with an RTU. Ids of the last connection on each side are kept.
class ConnectScenario : public ::testing::Test {
 protected:
  explicit ConnectScenario(loopback::LoopbackConfig fabric = loopback::LoopbackConfig::two_hcas(1),
                           EngineConfig config = kTestEngine)
      : cluster_(std::move(fabric), config) {}

  void SetUp() override {
    ListenParams lp;
    lp.service_id = kServiceId;
    lp.delivery = server().delivery();
    ASSERT_EQ(server().engine().listen(lp, listen_id_), Status::ok);
    server().react = [this](const Event& e) {
      if (e.type == EventType::req_received) {
        server_id_ = e.id;
        if (accept_) {
          RepParams rep;
          rep.qpn = kServerQpn;
          rep.starting_psn = 0x2222;
          rep.responder_resources = 4;
          rep.initiator_depth = 4;
          rep.private_data = server_private_data_;
          EXPECT_EQ(server().engine().send_rep(e.id, rep), Status::ok);
        }
      }
    };
    client().react = [this](const Event& e) {
      if (e.type == EventType::rep_received && complete_) {
        EXPECT_EQ(client().engine().send_rtu(e.id, {}), Status::ok);
      }
    };
  }

  [[nodiscard]] ReqParams req_params() const {
    ReqParams p = standard_req(cluster_, kClientQpn);
    p.private_data = client_private_data_;
    return p;
  }

  // Creates a client endpoint and sends a REQ; returns its Id.
  Id connect(const ReqParams& params) {
    Id id;
    EXPECT_EQ(client().engine().create_id(client().delivery(), nullptr, id), Status::ok);
    EXPECT_EQ(client().engine().send_req(id, params), Status::ok);
    client_id_ = id;
    return id;
  }
  Id connect() { return connect(req_params()); }

  [[nodiscard]] Peer& server() { return cluster_.server(); }
  [[nodiscard]] Peer& client() { return cluster_.client(); }
  [[nodiscard]] std::string_view state_of(Peer& peer, Id id) {
    ConnectionInfo info;
    return peer.engine().connection_info(id, info) == Status::ok ? to_string(info.state) : "stale";
  }

  static constexpr Qpn kClientQpn = 0x000C11;
  static constexpr Qpn kServerQpn = 0x000511;

  Cluster cluster_;
  Id listen_id_;
  Id client_id_;
  Id server_id_;
  bool accept_ = true;
  bool complete_ = true;
  std::array<std::uint8_t, 4> client_private_data_{0xC1, 0x1E, 0x47, 0x01};
  std::array<std::uint8_t, 3> server_private_data_{0x5E, 0x4F, 0x01};
};

}  // namespace fastcm::test
