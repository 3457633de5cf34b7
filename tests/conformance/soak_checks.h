// What the soak (soak_test.cpp) checks once its run is over, and the summary it prints.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "tests/conformance/harness.h"
#include "tests/conformance/invariant_checker.h"
#include "tests/conformance/soak_plan.h"

namespace fastcm::test::soak {

// A connection both sides count as established is one connection: IDs, QPNs and PSNs crosswise,
// each on the port the script chose. The server cannot be established alone, nor twice. Returns
// how many connections only the client counts as established (the server gave up on its RTU).
inline std::size_t check_both_sides_agree(InvariantChecker& checker, std::span<const Plan> plans,
                                          const Cluster& cluster) {
  std::map<std::uint32_t, std::vector<const Endpoint*>> servers;
  for (const Endpoint& ep : checker.endpoints()) {
    if (ep.side == Side::server && ep.outcome == Outcome::established)
      servers[ep.conn].push_back(&ep);
  }
  std::size_t half_open = 0;
  for (const Plan& plan : plans) {
    const Endpoint* c = plan.client_ep;
    const auto it = servers.find(plan.conn);
    if (it == servers.end()) {
      if (c != nullptr && c->outcome == Outcome::established) ++half_open;
      continue;
    }
    if (it->second.size() > 1)
      checker.violation(c, "two server endpoints established for one connection");
    const Endpoint* s = it->second.front();
    if (c == nullptr || c->outcome != Outcome::established || !c->established_info ||
        !s->established_info) {
      checker.violation(s, "server established without the client");
      continue;
    }
    const ConnectionInfo& ci = *c->established_info;
    const ConnectionInfo& si = *s->established_info;
    if (ci.local_comm_id != si.remote_comm_id || ci.remote_comm_id != si.local_comm_id ||
        ci.local_qpn != si.remote_qpn || ci.remote_qpn != si.local_qpn ||
        ci.local_psn != si.remote_psn || ci.remote_psn != si.local_psn || !ci.active || si.active ||
        ci.port != cluster.client_port(plan.client_port).port_num ||
        si.port != cluster.server_port(plan.server_port).port_num) {
      checker.violation(c, "client and server disagree on the connection");
    }
  }
  return half_open;
}

// With every endpoint gone and time-wait over, each engine hands out all its `max_endpoints`
// slots again and holds no MAD.
inline void check_nothing_leaks(Cluster& cluster, std::uint32_t max_endpoints) {
  for (Peer* peer : {&cluster.client(), &cluster.server()}) {
    EXPECT_EQ(peer->engine().mad_buffers_in_use(), 0u);
    std::vector<Id> ids;
    Id id;
    while (ids.size() <= max_endpoints &&
           peer->engine().create_id(peer->delivery(), nullptr, id) == Status::ok) {
      ids.push_back(id);
    }
    EXPECT_EQ(ids.size(), max_endpoints);
    EXPECT_EQ(peer->engine().create_id(peer->delivery(), nullptr, id), Status::no_resources);
    for (Id each : ids) EXPECT_EQ(peer->engine().destroy(each), Status::ok);
    EXPECT_EQ(peer->engine().mad_buffers_in_use(), 0u);
  }
}

// Every REQ the soak left in a listen's backlog went out of it: on a clean fabric, `backlog`
// fresh REQs to each listen (request(i, false): the callback one; (i, true): the polled one) all
// reach the application while it holds them, and one more is refused for lack of room. `finish`
// runs everything to quiescence afterwards.
inline void check_backlog_is_whole(Cluster& cluster, EventQueue& server_queue,
                                   std::uint32_t backlog,
                                   const std::function<ReqParams(std::uint32_t, bool)>& request,
                                   const std::function<void()>& finish) {
  Engine& client = cluster.client().engine();
  Engine& server = cluster.server().engine();
  cluster.fabric().clear_faults();
  for (const bool polled : {false, true}) {
    std::vector<Id> held;
    std::size_t refused = 0;
    cluster.server().react = [&held](const Event& e) {
      if (e.type == EventType::req_received) held.push_back(e.id);
    };
    cluster.client().react = [&refused](const Event& e) {
      const auto* rej = std::get_if<RejReceived>(&e.params);
      if (rej != nullptr && rej->reason == kRejNoResources) ++refused;
    };
    std::vector<Id> asking;
    for (std::uint32_t i = 0; i <= backlog; ++i) {
      Id id;
      ASSERT_EQ(client.create_id(cluster.client().delivery(), nullptr, id), Status::ok);
      EXPECT_EQ(client.send_req(id, request(i, polled)), Status::ok);
      asking.push_back(id);
    }
    cluster.run_for(10 * kMs);
    std::vector<Event> events(backlog + 1);
    const std::size_t n = server.poll(server_queue, events);
    for (std::size_t i = 0; i < n; ++i) {
      if (events[i].type == EventType::req_received) held.push_back(events[i].id);
      server.release(events[i]);
    }
    EXPECT_EQ(held.size(), backlog) << (polled ? "polled listen" : "callback listen");
    EXPECT_EQ(refused, 1u) << (polled ? "polled listen" : "callback listen");
    for (Id id : held) EXPECT_EQ(server.destroy(id), Status::ok);
    for (Id id : asking) EXPECT_EQ(client.destroy(id), Status::ok);
    finish();
  }
}

// What a run went through, from the checker's records and the fabric's counters.
struct Tally {
  std::array<std::map<Outcome, std::size_t>, 2> outcomes;  // per side
  std::size_t polled = 0;                                  // endpoints with poll delivery
  std::size_t repeated_reqs = 0;    // connections whose REQ reached the server application twice
  std::size_t dreq_collisions = 0;  // connections where both sides got a DREQ
  std::size_t early_establish = 0;  // establish() before the RTU
  loopback::PortCounters fabric{};  // summed over every port
};

inline Tally tally(InvariantChecker& checker, Cluster& cluster) {
  Tally t;
  std::map<std::uint32_t, std::size_t> server_endpoints;
  std::map<std::uint32_t, std::size_t> dreqs_received;
  const auto saw = [](const Endpoint& ep, std::string_view what) {
    return std::find(ep.history.begin(), ep.history.end(), what) != ep.history.end();
  };
  for (const Endpoint& ep : checker.endpoints()) {
    ++t.outcomes[index(ep.side)][ep.outcome];
    if (ep.polled) ++t.polled;
    if (ep.side == Side::server) ++server_endpoints[ep.conn];
    if (saw(ep, "dreq_received")) ++dreqs_received[ep.conn];
    if (saw(ep, "user_established")) ++t.early_establish;
  }
  for (const auto& [conn, n] : server_endpoints) t.repeated_reqs += n > 1 ? 1 : 0;
  for (const auto& [conn, n] : dreqs_received) t.dreq_collisions += n > 1 ? 1 : 0;
  for (std::uint16_t hca = 0; hca < 2; ++hca) {
    for (std::uint16_t port = 0; port < 2; ++port) {
      const loopback::PortCounters c = cluster.fabric().counters({hca, port});
      t.fabric.dropped_by_fault += c.dropped_by_fault;
      t.fabric.duplicated += c.duplicated;
      t.fabric.delayed += c.delayed;
      t.fabric.dropped_queue_full += c.dropped_queue_full;
    }
  }
  return t;
}

// The soak proves something only if the faults happened and the paths it means to exercise ran:
// both ports, MRAs, both delivery models, every way a connection attempt ends.
inline void check_coverage(const Tally& t, Cluster& cluster, std::size_t mra_events,
                           std::uint32_t connections) {
  EXPECT_GT(t.fabric.dropped_by_fault, 0u);
  EXPECT_GT(t.fabric.duplicated, 0u);
  EXPECT_GT(t.fabric.delayed, 0u);
  EXPECT_EQ(t.fabric.dropped_queue_full, 0u);
  for (const std::uint8_t port_num : {std::uint8_t{1}, std::uint8_t{2}}) {
    EXPECT_GT(cluster.server().port_counters(port_num).of(CmMessageKind::req).received, 0u)
        << "port " << +port_num;
    EXPECT_GT(cluster.client().port_counters(port_num).of(CmMessageKind::req).sent, 0u)
        << "port " << +port_num;
    // Every event reached its queue: a full one would have lost events the checker relies on.
    EXPECT_EQ(cluster.server().port_counters(port_num).dropped(DropReason::queue_full), 0u);
    EXPECT_EQ(cluster.client().port_counters(port_num).dropped(DropReason::queue_full), 0u);
  }
  EXPECT_GT(mra_events, 0u);
  EXPECT_GT(t.polled, 0u);
  for (Outcome o : {Outcome::established, Outcome::rejected_by_peer, Outcome::rejected_by_us,
                    Outcome::timed_out, Outcome::abandoned}) {
    EXPECT_GT(t.outcomes[index(Side::client)].count(o), 0u)
        << "client outcome " << static_cast<int>(o);
  }
  EXPECT_GT(t.outcomes[index(Side::server)].at(Outcome::established), connections / 3);
}

inline void print_summary(const Tally& t,
                          const std::array<std::map<std::uint16_t, std::size_t>, 2>& rej_reasons) {
  constexpr std::string_view kOutcomes[] = {"none",           "established", "rejected_by_peer",
                                            "rejected_by_us", "timed_out",   "abandoned"};
  for (Side side : {Side::client, Side::server}) {
    std::cout << "  " << (side == Side::client ? "client" : "server") << " outcomes:";
    for (const auto& [o, n] : t.outcomes[index(side)])
      std::cout << " " << kOutcomes[static_cast<int>(o)] << "=" << n;
    std::cout << "; REJ reasons:";
    for (const auto& [reason, n] : rej_reasons[index(side)]) std::cout << " " << reason << "x" << n;
    std::cout << "\n";
  }
  // REQ copies reach the application again after it rejected the first: the engine forgets a
  // rejected REQ, as Linux' CM does.
  std::cout << "  polled endpoints " << t.polled << ", REQs seen again " << t.repeated_reqs
            << ", DREQ collisions " << t.dreq_collisions << ", establish() before the RTU "
            << t.early_establish << "; fabric lost " << t.fabric.dropped_by_fault << ", duplicated "
            << t.fabric.duplicated << ", delayed " << t.fabric.delayed << "\n";
}

}  // namespace fastcm::test::soak
