// Three engines on three one-port HCAs of one loopback fabric (HCA 0 the server, 1 and 2 its
// peers), driven by the test's thread over the virtual clock, with each engine's MAD bound
// (mad_buffers_in_use() <= EngineConfig::mad_buffers) checked after every step: the rig of the
// scenarios where more than one peer loads a server (a flood beside a client), and the steps
// they share (a server that accepts every REQ, peers that send REQs until refused).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "tests/conformance/harness.h"
#include "tests/conformance/scenario.h"

namespace fastcm::test {

class ThreePeers {
 public:
  ThreePeers(const EngineConfig& server, const EngineConfig& client, const EngineConfig& other,
             loopback::LoopbackConfig fabric = loopback::LoopbackConfig::make(3, 1))
      : config_(std::move(fabric)),
        fabric_(config_, clock_),
        server_(fabric_.hca(0), clock_, server),
        client_(fabric_.hca(1), clock_, client),
        other_(fabric_.hca(2), clock_, other),
        limits_{server.mad_buffers, client.mad_buffers, other.mad_buffers} {}

  Peer& server() { return server_; }
  Peer& client() { return client_; }
  Peer& other() { return other_; }
  VirtualClock& clock() { return clock_; }
  loopback::LoopbackFabric& fabric() { return fabric_; }
  // The path from HCA `from_hca`'s port, sending from its GID `gid_index`, to the server's.
  [[nodiscard]] Path path(std::uint16_t from_hca, std::size_t gid_index = 0) const {
    Path p = Cluster::make_path(config_.hcas[from_hca].ports[0], config_.hcas[0].ports[0]);
    p.local_gid = config_.hcas[from_hca].ports[0].gid_table[gid_index];
    return p;
  }
  [[nodiscard]] std::uint32_t high_water(std::size_t peer) const { return high_[peer]; }
  // A QPN for the server's next REP, unused by its earlier ones: a REP reusing a live
  // connection's QPN is refused by its receiver as stale (IBTA 12.9.8.3.1).
  [[nodiscard]] Qpn next_server_qpn() { return kFirstServerQpn + server_reps_++; }

  // Runs `ns` of virtual time, jumping to each timer or delivery, checking the bound throughout.
  void run_for(std::uint64_t ns) {
    const std::uint64_t end = clock_.now_ns() + ns;
    for (int step = 0; step < 10'000'000; ++step) {
      std::size_t work = 0;
      for (Peer* p : peers()) {
        work += p->engine().progress();
        check_bound();
      }
      if (work != 0) continue;
      std::optional<std::uint64_t> next;
      for (std::uint16_t h = 0; h < 3; ++h) {
        const auto t = fabric_.next_delivery_ns(loopback::PortRef{h, 0});
        if (t && (!next || *t < *next)) next = t;
      }
      for (Peer* p : peers()) {
        const auto t = p->engine().next_timer_ns();
        if (t && (!next || *t < *next)) next = t;
      }
      if (next && *next <= clock_.now_ns()) continue;
      if (!next || *next > end) break;
      clock_.set(*next);
    }
    clock_.set(end);
  }

  // Called after every progress step and from callbacks.
  void check_bound() {
    const std::array<Peer*, 3> all = peers();
    for (std::size_t i = 0; i < all.size(); ++i) {
      const std::uint32_t used = all[i]->engine().mad_buffers_in_use();
      high_[i] = std::max(high_[i], used);
      ASSERT_LE(used, limits_[i]) << "peer " << i;
    }
  }

 private:
  std::array<Peer*, 3> peers() { return {&server_, &client_, &other_}; }

  VirtualClock clock_;
  loopback::LoopbackConfig config_;
  loopback::LoopbackFabric fabric_;
  Peer server_;
  Peer client_;
  Peer other_;
  std::array<std::uint32_t, 3> limits_;
  std::array<std::uint32_t, 3> high_{};
  static constexpr Qpn kFirstServerQpn = 0x5000;
  Qpn server_reps_ = 0;
};

// The server listens on `service_id` and answers every REQ with a REP (no_resources, not
// retried, when its sent half is full); it destroys endpoints whose time-wait ended.
inline void listen_and_accept(ThreePeers& rig, std::uint64_t service_id = kServiceId,
                              BacklogPolicy policy = BacklogPolicy::reject) {
  ListenParams lp;
  lp.service_id = service_id;
  lp.backlog_policy = policy;
  lp.delivery = rig.server().delivery();
  Id listen;
  ASSERT_EQ(rig.server().engine().listen(lp, listen), Status::ok);
  rig.server().react = [&rig](const Event& e) {
    if (e.type == EventType::timewait_exit) {
      EXPECT_EQ(rig.server().engine().destroy(e.id), Status::ok);
    }
    if (e.type != EventType::req_received) return;
    RepParams rep;
    rep.qpn = rig.next_server_qpn();
    rep.starting_psn = 0x2222;
    rep.responder_resources = 4;
    rep.initiator_depth = 4;
    (void)rig.server().engine().send_rep(e.id, rep);
    rig.check_bound();
  };
}

// Sends up to `attempts` REQs from `peer`, the i-th (from 0) with `req(i)` on an endpoint of its
// own; returns how many went out (an endpoint whose send_req the engine refused is destroyed).
inline int connect_until_refused(ThreePeers& rig, Peer& peer, int attempts,
                                 const std::function<ReqParams(int)>& req) {
  int sent = 0;
  for (int i = 0; i < attempts; ++i) {
    Id id;
    if (peer.engine().create_id(peer.delivery(), nullptr, id) != Status::ok) continue;
    if (peer.engine().send_req(id, req(i)) == Status::ok) {
      ++sent;
    } else {
      EXPECT_EQ(peer.engine().destroy(id), Status::ok);
    }
    rig.check_bound();
  }
  return sent;
}

// The standard REQ from HCA `hca`'s port, QPNs 0x100 + i.
inline int connect_until_refused(ThreePeers& rig, Peer& peer, std::uint16_t hca, int attempts) {
  return connect_until_refused(rig, peer, attempts,
                               [&rig, hca](int i) { return standard_req(rig.path(hca), static_cast<Qpn>(0x100 + i)); });
}

}  // namespace fastcm::test
