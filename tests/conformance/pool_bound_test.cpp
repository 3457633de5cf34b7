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
#include "tests/conformance/three_peers.h"

namespace fastcm::test {
namespace {

constexpr std::uint32_t kSmallPool = 32;

EngineConfig pool_of(std::uint32_t mad_buffers) {
  EngineConfig c = kTestEngine;
  c.mad_buffers = mad_buffers;
  return suite_config(c);
}

TEST(PoolBound, AClientWhoseReqsFillItsPoolStillReceivesTheRepsAndEstablishes) {
  ThreePeers rig(pool_of(1024), pool_of(kSmallPool), pool_of(1024));
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
  ThreePeers rig(pool_of(kSmallPool), pool_of(1024), flooder);
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
