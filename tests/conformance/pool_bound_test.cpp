// The MAD bound under pressure (engine.h, EngineConfig::mad_buffers): mad_buffers_in_use() never
// exceeds mad_buffers, and receiving never starves. A client whose own REQs fill its sent half
// still receives the REPs to them and establishes every connection; a server flooded with REQs
// it cannot hold keeps receiving, rejects them "no resources" from its answer reserve, and
// accepts again once the flood's handshakes are gone. Small pools, caller threading, the virtual
// clock, 1/2/4 shards (FASTCM_TEST_SHARDS).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/mad/cm_messages.h"
#include "tests/conformance/harness.h"
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

constexpr std::uint32_t kSmallPool = 32;

// Three engines on three HCAs; the test's thread drives them and checks the bound after every
// step.
class PoolRig {
 public:
  PoolRig(const EngineConfig& server, const EngineConfig& client, const EngineConfig& other)
      : config_(loopback::LoopbackConfig::make(3, 1)),
        fabric_(config_, clock_),
        server_(fabric_.hca(0), clock_, server),
        client_(fabric_.hca(1), clock_, client),
        other_(fabric_.hca(2), clock_, other),
        limits_{server.mad_buffers, client.mad_buffers, other.mad_buffers} {}

  Peer& server() { return server_; }
  Peer& client() { return client_; }
  Peer& other() { return other_; }
  VirtualClock& clock() { return clock_; }
  [[nodiscard]] Path path(std::uint16_t from_hca) const {
    return Cluster::make_path(config_.hcas[from_hca].ports[0], config_.hcas[0].ports[0]);
  }
  [[nodiscard]] std::uint32_t high_water(std::size_t peer) const { return high_[peer]; }

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
};

EngineConfig pool_of(std::uint32_t mad_buffers) {
  EngineConfig c = kTestEngine;
  c.mad_buffers = mad_buffers;
  return suite_config(c);
}

void listen_and_accept(PoolRig& rig) {
  ListenParams lp;
  lp.service_id = kServiceId;
  lp.delivery = rig.server().delivery();
  Id listen;
  ASSERT_EQ(rig.server().engine().listen(lp, listen), Status::ok);
  rig.server().react = [&rig](const Event& e) {
    if (e.type == EventType::timewait_exit) {
      EXPECT_EQ(rig.server().engine().destroy(e.id), Status::ok);
    }
    if (e.type != EventType::req_received) return;
    RepParams rep;
    rep.qpn = 0x5000 + (e.id.comm_id() & 0xFFFF);
    rep.starting_psn = 0x2222;
    rep.responder_resources = 4;
    rep.initiator_depth = 4;
    (void)rig.server().engine().send_rep(e.id, rep);  // no_resources when its sent half is full
    rig.check_bound();
  };
}

// Sends REQs from `peer` on HCA `hca` until the engine refuses; returns how many went out.
int connect_until_refused(PoolRig& rig, Peer& peer, std::uint16_t hca, int attempts) {
  int sent = 0;
  for (int i = 0; i < attempts; ++i) {
    Id id;
    if (peer.engine().create_id(peer.delivery(), nullptr, id) != Status::ok) continue;
    if (peer.engine().send_req(id, standard_req(rig.path(hca), static_cast<Qpn>(0x100 + i))) == Status::ok) {
      ++sent;
    } else {
      EXPECT_EQ(peer.engine().destroy(id), Status::ok);
    }
    rig.check_bound();
  }
  return sent;
}

TEST(PoolBound, AClientWhoseReqsFillItsPoolStillReceivesTheRepsAndEstablishes) {
  PoolRig rig(pool_of(1024), pool_of(kSmallPool), pool_of(1024));
  listen_and_accept(rig);
  rig.client().react = [&rig](const Event& e) {
    if (e.type == EventType::rep_received) {
      EXPECT_EQ(rig.client().engine().send_rtu(e.id, {}), Status::ok);
    }
    rig.check_bound();
  };
  const int sent = connect_until_refused(rig, rig.client(), 1, 2 * kSmallPool);
  EXPECT_GT(sent, 0);
  EXPECT_LT(sent, static_cast<int>(2 * kSmallPool)) << "the client's pool never filled";
  rig.run_for(Cluster::kSecond);
  EXPECT_EQ(rig.client().count(EventType::rep_received), static_cast<std::size_t>(sent));
  EXPECT_EQ(rig.server().count(EventType::rtu_received), static_cast<std::size_t>(sent));
  EXPECT_EQ(rig.client().count(EventType::req_error), 0u);
  EXPECT_LE(rig.high_water(1), kSmallPool);
}

TEST(PoolBound, AServerFloodedWithReqsKeepsReceivingAndRejectsFromItsAnswerReserve) {
  // The flooder sends no MRA either: an MRA would hold each handshake for its service timeout
  // (bounding a source's handshakes is not this test's subject).
  EngineConfig flooder = pool_of(1024);
  flooder.auto_mra_fraction = 0;
  PoolRig rig(pool_of(kSmallPool), pool_of(1024), flooder);
  listen_and_accept(rig);
  // The flood: REQs from HCA 2 whose handshakes it never completes (no RTU), far more than the
  // server's pool holds.
  constexpr int kFlood = 200;
  const int flooded = connect_until_refused(rig, rig.other(), 2, kFlood);
  ASSERT_EQ(flooded, kFlood);
  rig.run_for(Cluster::kSecond / 100);
  const PortCounters during = rig.server().port_counters();

  // Every REQ was received and answered: a REP for those it could hold, a REJ for the others.
  EXPECT_EQ(during.messages[static_cast<std::size_t>(CmMessageKind::req)].received, static_cast<std::uint64_t>(kFlood));
  const std::size_t accepted = rig.server().count(EventType::req_received);
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, static_cast<std::size_t>(kFlood));
  std::size_t no_resources = 0;
  for (const RecordedEvent& e : rig.other().of(EventType::rej_received)) {
    no_resources += std::get<RejReceived>(e.params).reason == static_cast<std::uint16_t>(mad::RejReason::no_resources);
  }
  EXPECT_EQ(no_resources, kFlood - accepted);
  EXPECT_GE(during.drops[static_cast<std::size_t>(DropReason::no_resources)], kFlood - accepted);
  EXPECT_EQ(during.messages[static_cast<std::size_t>(CmMessageKind::rej)].sent, kFlood - accepted);

  // Once the flood's half-open handshakes have timed out on the server (REP retries ran out, then
  // time-wait, then the application destroys them), a client connects.
  rig.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(rig.server().engine().mad_buffers_in_use(), 0u);
  rig.client().react = [&rig](const Event& e) {
    if (e.type == EventType::rep_received) {
      EXPECT_EQ(rig.client().engine().send_rtu(e.id, {}), Status::ok);
    }
  };
  ASSERT_EQ(connect_until_refused(rig, rig.client(), 1, 1), 1);
  rig.run_for(Cluster::kSecond);
  EXPECT_EQ(rig.client().count(EventType::rep_received), 1u);
  EXPECT_LE(rig.high_water(0), kSmallPool);
}

}  // namespace
}  // namespace fastcm::test
