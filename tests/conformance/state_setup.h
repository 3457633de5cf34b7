// Drives one endpoint of a fresh exchange into a chosen CM state through the public API, for the
// scenarios that act on endpoints in every state (destroy, unexpected and malformed MADs).
//
// Both applications hold whatever they receive: the setup makes every answer itself between
// settle() steps and never moves the clock, so no retry, automatic MRA or time-wait has fired when
// the scenario takes over.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "tests/conformance/harness.h"
#include "tests/conformance/scenario.h"

namespace fastcm::test {

// The states a setup reaches. An established connection is reached on either side, because the
// two ends of it treat some messages differently (an RTU, a REQ).
enum class EndpointState : std::uint8_t {
  idle,
  req_sent,
  mra_req_rcvd,
  req_rcvd,
  mra_req_sent,
  rep_sent,
  rep_rcvd,
  mra_rep_sent,
  mra_rep_rcvd,
  established_active,
  established_passive,
  dreq_sent,
  dreq_rcvd,
  timewait,
  sidr_req_sent,
  sidr_req_rcvd,
};

inline constexpr std::array kEveryEndpointState = {EndpointState::idle,
                                                   EndpointState::req_sent,
                                                   EndpointState::mra_req_rcvd,
                                                   EndpointState::req_rcvd,
                                                   EndpointState::mra_req_sent,
                                                   EndpointState::rep_sent,
                                                   EndpointState::rep_rcvd,
                                                   EndpointState::mra_rep_sent,
                                                   EndpointState::mra_rep_rcvd,
                                                   EndpointState::established_active,
                                                   EndpointState::established_passive,
                                                   EndpointState::dreq_sent,
                                                   EndpointState::dreq_rcvd,
                                                   EndpointState::timewait,
                                                   EndpointState::sidr_req_sent,
                                                   EndpointState::sidr_req_rcvd};

// A name usable in test names and table rows.
[[nodiscard]] constexpr std::string_view label(EndpointState s) noexcept {
  switch (s) {
    case EndpointState::idle: return "idle";
    case EndpointState::req_sent: return "req_sent";
    case EndpointState::mra_req_rcvd: return "mra_req_rcvd";
    case EndpointState::req_rcvd: return "req_rcvd";
    case EndpointState::mra_req_sent: return "mra_req_sent";
    case EndpointState::rep_sent: return "rep_sent";
    case EndpointState::rep_rcvd: return "rep_rcvd";
    case EndpointState::mra_rep_sent: return "mra_rep_sent";
    case EndpointState::mra_rep_rcvd: return "mra_rep_rcvd";
    case EndpointState::established_active: return "established_active";
    case EndpointState::established_passive: return "established_passive";
    case EndpointState::dreq_sent: return "dreq_sent";
    case EndpointState::dreq_rcvd: return "dreq_rcvd";
    case EndpointState::timewait: return "timewait";
    case EndpointState::sidr_req_sent: return "sidr_req_sent";
    case EndpointState::sidr_req_rcvd: return "sidr_req_rcvd";
  }
  return "unknown";
}

// What Engine::connection_info reports in that state.
[[nodiscard]] constexpr std::string_view state_name(EndpointState s) noexcept {
  switch (s) {
    case EndpointState::established_active:
    case EndpointState::established_passive: return "established";
    default: return label(s);
  }
}

// Which engine an endpoint lives on: the client's (HCA 1) or the server's (HCA 0).
enum class Host : std::uint8_t { client, server };

// Where a setup left the endpoint it was asked for, and the other end of its exchange.
struct Reached {
  Host host = Host::client;
  Id target;
  Id peer;  // empty when there is none (an idle endpoint)
};

// The client on HCA 1 connects (or resolves) to the server's listen on HCA 0.
class StateSetup {
 public:
  static constexpr Qpn kClientQpn = 0x000C11;
  static constexpr Qpn kServerQpn = 0x000511;

  explicit StateSetup(Cluster& cluster) : cluster_(cluster) {
    ListenParams lp;
    lp.service_id = kServiceId;
    lp.delivery = cluster_.server().delivery();
    EXPECT_EQ(cluster_.server().engine().listen(lp, listen_), Status::ok);
  }

  [[nodiscard]] Peer& on(Host h) {
    return h == Host::client ? cluster_.client() : cluster_.server();
  }
  [[nodiscard]] Peer& across(Host h) { return on(other(h)); }
  [[nodiscard]] Engine& engine_on(Host h) { return on(h).engine(); }
  [[nodiscard]] static Host other(Host h) {
    return h == Host::client ? Host::server : Host::client;
  }

  // A new exchange with one endpoint in `state`. Every step is checked with EXPECT, so a setup
  // the engine refuses fails the test that asked for it.
  Reached reach(EndpointState state) {
    Engine& client = cluster_.client().engine();
    Engine& server = cluster_.server().engine();
    Id c;
    EXPECT_EQ(client.create_id(cluster_.client().delivery(), nullptr, c), Status::ok);
    if (state == EndpointState::idle) return {Host::client, c, {}};

    if (state == EndpointState::sidr_req_sent || state == EndpointState::sidr_req_rcvd) {
      SidrReqParams p;
      p.service_id = kServiceId;
      p.path = cluster_.path_to_server();
      p.timeout = 16;
      p.max_retries = 2;
      EXPECT_EQ(client.send_sidr_req(c, p), Status::ok);
      cluster_.settle();
      const Id s = last_id(cluster_.server(), EventType::sidr_req_received);
      return pick(state == EndpointState::sidr_req_sent, c, s);
    }

    EXPECT_EQ(client.send_req(c, req_params()), Status::ok);
    cluster_.settle();
    const Id s = last_id(cluster_.server(), EventType::req_received);
    if (state == EndpointState::req_sent || state == EndpointState::req_rcvd) {
      return pick(state == EndpointState::req_sent, c, s);
    }
    if (state == EndpointState::mra_req_rcvd || state == EndpointState::mra_req_sent) {
      EXPECT_EQ(server.send_mra(s, mra()), Status::ok);
      cluster_.settle();
      return pick(state == EndpointState::mra_req_rcvd, c, s);
    }

    RepParams rep;
    rep.qpn = kServerQpn;
    rep.starting_psn = 0x2222;
    rep.responder_resources = 4;
    rep.initiator_depth = 4;
    EXPECT_EQ(server.send_rep(s, rep), Status::ok);
    cluster_.settle();
    if (state == EndpointState::rep_rcvd || state == EndpointState::rep_sent) {
      return pick(state == EndpointState::rep_rcvd, c, s);
    }
    if (state == EndpointState::mra_rep_sent || state == EndpointState::mra_rep_rcvd) {
      EXPECT_EQ(client.send_mra(c, mra()), Status::ok);
      cluster_.settle();
      return pick(state == EndpointState::mra_rep_sent, c, s);
    }

    EXPECT_EQ(client.send_rtu(c, {}), Status::ok);
    cluster_.settle();
    if (state == EndpointState::established_active || state == EndpointState::established_passive) {
      return pick(state == EndpointState::established_active, c, s);
    }
    EXPECT_EQ(client.send_dreq(c, {}), Status::ok);
    cluster_.settle();
    if (state == EndpointState::dreq_sent || state == EndpointState::dreq_rcvd) {
      return pick(state == EndpointState::dreq_sent, c, s);
    }
    EXPECT_EQ(server.send_drep(s, {}), Status::ok);
    cluster_.settle();
    return {Host::client, c, s};  // timewait, on both sides
  }

  // The REQ every setup sends, from the client's QP kClientQpn.
  [[nodiscard]] ReqParams req_params() const { return standard_req(cluster_, kClientQpn); }

  // The MRA of every setup: the waiting side may wait ~0.3 s more.
  [[nodiscard]] static MraParams mra() {
    MraParams p;
    p.service_timeout = 16;
    return p;
  }

  // The state connection_info reports, or "stale".
  [[nodiscard]] std::string_view state_of(Host host, Id id) {
    ConnectionInfo info;
    return engine_on(host).connection_info(id, info) == Status::ok ? to_string(info.state) : "stale";
  }

 private:
  static Id last_id(const Peer& peer, EventType type) {
    const auto events = peer.of(type);
    EXPECT_FALSE(events.empty()) << "no event " << static_cast<int>(type);
    return events.empty() ? Id{} : events.back().id;
  }
  // The client's endpoint when `client_side`, the server's otherwise.
  static Reached pick(bool client_side, Id client, Id server) {
    return client_side ? Reached{Host::client, client, server}
                       : Reached{Host::server, server, client};
  }

  Cluster& cluster_;
  Id listen_;
};

}  // namespace fastcm::test
