// The half-open budget (engine.h, EngineConfig::half_open_per_source / half_open_per_listen;
// engine/half_open_budget.h): a source — what the fabric stamped on its REQs, its LID or on RoCE
// its GID — holds at most half_open_per_source handshakes from the REQ until they settle, a listen
// at most half_open_per_listen; a REQ beyond either makes no endpoint and gets what its listen's
// BacklogPolicy says, counted by its own drop reason, while other sources still connect. Settled
// handshakes give their room back. A source whose handshakes time out unanswered gets its next
// REPs sent once, until it answers again. The server is HCA 0, a client HCA 1, the flooder HCA 2
// (it never answers a REP and sends no MRA); caller threading, the virtual clock, 1/2/4 shards.
#include <gtest/gtest.h>

#include <cstdint>

#include "engine/mad/cm_messages.h"
#include "tests/conformance/harness.h"
#include "tests/conformance/scenario.h"
#include "tests/conformance/three_peers.h"

namespace fastcm::test {
namespace {

constexpr std::uint64_t kOtherService = kServiceId + 1;
// Shorter than a REQ's retry wait (~0.4 s, scenario.h): nobody has retransmitted yet.
constexpr std::uint64_t kNoRetryYet = Cluster::kSecond / 100;
// Longer than a REP's four sends and their waits (4 x 0.4 s, each rounded up to the timer wheel's
// coarser ticks: ~3.2 s): every unanswered handshake has ended.
constexpr std::uint64_t kAllRetriesOver = 5 * Cluster::kSecond;

EngineConfig server_with(std::uint32_t per_source, std::uint32_t per_listen = 1u << 16) {
  EngineConfig c = kTestEngine;
  c.half_open_per_source = per_source;
  c.half_open_per_listen = per_listen;
  return suite_config(c);
}

// A peer that sends no MRA: a REP it leaves unanswered is retransmitted until it times out.
EngineConfig flooder_config() {
  EngineConfig c = suite_config(kTestEngine);
  c.auto_mra_fraction = 0;
  return c;
}

// The client completes every handshake.
void client_answers(ThreePeers& rig) {
  rig.client().react = [&rig](const Event& e) {
    if (e.type == EventType::rep_received) {
      EXPECT_EQ(rig.client().engine().send_rtu(e.id, {}), Status::ok);
    }
  };
}

std::size_t rejected_no_resources(const Peer& peer) {
  std::size_t n = 0;
  for (const RecordedEvent& e : peer.of(EventType::rej_received)) {
    n += std::get<RejReceived>(e.params).reason == static_cast<std::uint16_t>(mad::RejReason::no_resources);
  }
  return n;
}

std::uint64_t drops(const PortCounters& c, DropReason r) { return c.drops[static_cast<std::size_t>(r)]; }
std::uint64_t reps_retried(const Peer& server) {
  return server.port_counters().messages[static_cast<std::size_t>(CmMessageKind::rep)].retried;
}

TEST(HalfOpenBudget, ASourceBeyondItsBudgetIsRejectedWhileAnotherConnects) {
  FASTCM_LOOPBACK_ONLY("three HCAs");
  ThreePeers rig(server_with(4), suite_config(kTestEngine), flooder_config());
  listen_and_accept(rig);
  client_answers(rig);
  ASSERT_EQ(connect_until_refused(rig, rig.other(), 2, 10), 10);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::req_received), 4u);
  EXPECT_EQ(rejected_no_resources(rig.other()), 6u);
  EXPECT_EQ(drops(rig.server().port_counters(), DropReason::source_budget), 6u);

  ASSERT_EQ(connect_until_refused(rig, rig.client(), 1, 3), 3);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.client().count(EventType::rep_received), 3u);
  EXPECT_EQ(rig.server().count(EventType::rtu_received), 3u);
}

TEST(HalfOpenBudget, UnderTheDropPolicyAReqBeyondTheBudgetIsDroppedAndCounted) {
  FASTCM_LOOPBACK_ONLY("three HCAs");
  ThreePeers rig(server_with(4), suite_config(kTestEngine), flooder_config());
  listen_and_accept(rig, kServiceId, BacklogPolicy::drop);
  ASSERT_EQ(connect_until_refused(rig, rig.other(), 2, 10), 10);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::req_received), 4u);
  EXPECT_EQ(rig.other().count(EventType::rej_received), 0u);
  EXPECT_EQ(rig.server().port_counters().messages[static_cast<std::size_t>(CmMessageKind::rej)].sent, 0u);
  EXPECT_EQ(drops(rig.server().port_counters(), DropReason::source_budget), 6u);
}

TEST(HalfOpenBudget, SettledHandshakesGiveTheirRoomBack) {
  FASTCM_LOOPBACK_ONLY("three HCAs");
  ThreePeers rig(server_with(4), suite_config(kTestEngine), flooder_config());
  listen_and_accept(rig);
  // A source at its budget that completes its handshakes opens as many again...
  client_answers(rig);
  const auto req_from_client = [&rig](int i) { return standard_req(rig.path(1), static_cast<Qpn>(0x100 + i)); };
  ASSERT_EQ(connect_until_refused(rig, rig.client(), 4, req_from_client), 4);
  rig.run_for(kNoRetryYet);
  ASSERT_EQ(rig.server().count(EventType::rtu_received), 4u);
  ASSERT_EQ(connect_until_refused(rig, rig.client(), 4, [&](int i) { return req_from_client(4 + i); }), 4);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::rtu_received), 8u);
  EXPECT_EQ(drops(rig.server().port_counters(), DropReason::source_budget), 0u);

  // ...and one that never answers, once its handshakes have timed out.
  ASSERT_EQ(connect_until_refused(rig, rig.other(), 2, 4), 4);
  rig.run_for(kAllRetriesOver);
  ASSERT_EQ(rig.server().count(EventType::rep_error), 4u);
  const auto req_from_flooder = [&rig](int i) { return standard_req(rig.path(2), static_cast<Qpn>(0x200 + i)); };
  ASSERT_EQ(connect_until_refused(rig, rig.other(), 4, req_from_flooder), 4);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::req_received), 16u);
  EXPECT_EQ(drops(rig.server().port_counters(), DropReason::source_budget), 0u);
}

TEST(HalfOpenBudget, AListenHoldsAtMostItsOwnBound) {
  FASTCM_LOOPBACK_ONLY("three HCAs");
  ThreePeers rig(server_with(100, 5), suite_config(kTestEngine), flooder_config());
  listen_and_accept(rig);
  client_answers(rig);
  ASSERT_EQ(connect_until_refused(rig, rig.other(), 2, 3), 3);
  rig.run_for(kNoRetryYet);
  // Two more fit the listen: the client's third is refused, its own budget notwithstanding.
  ASSERT_EQ(connect_until_refused(rig, rig.client(), 1, 3), 3);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::req_received), 5u);
  EXPECT_EQ(rejected_no_resources(rig.client()), 1u);
  EXPECT_EQ(drops(rig.server().port_counters(), DropReason::listen_budget), 1u);
  // Another listen has its own bound: the client's REQ to it is taken.
  ASSERT_NO_FATAL_FAILURE(listen_and_accept(rig, kOtherService));
  ASSERT_EQ(connect_until_refused(rig, rig.client(), 1,
                                  [&rig](int) {
                                    ReqParams p = standard_req(rig.path(1), 0x300);
                                    p.service_id = kOtherService;
                                    return p;
                                  }),
            1);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::req_received), 6u);
  EXPECT_EQ(rig.client().count(EventType::rep_received), 3u);
}

TEST(HalfOpenBudget, ASourceThatLeavesItsHandshakesUnansweredGetsItsRepsOnce) {
  FASTCM_LOOPBACK_ONLY("three HCAs");
  // The client leaves a handshake unanswered too, later: without an MRA, like the flooder.
  ThreePeers rig(server_with(100), flooder_config(), flooder_config());
  listen_and_accept(rig);
  const auto flood = [&rig](int count, Qpn first) {
    return connect_until_refused(rig, rig.other(), count, [&rig, first](int i) {
      return standard_req(rig.path(2), static_cast<Qpn>(first + static_cast<Qpn>(i)));
    });
  };
  // Its first two handshakes get the REQ's three retries each, then time out unanswered.
  ASSERT_EQ(flood(2, 0x100), 2);
  rig.run_for(kAllRetriesOver);
  ASSERT_EQ(rig.server().count(EventType::rep_error), 2u);
  EXPECT_EQ(reps_retried(rig.server()), 6u);
  // From then on its REPs go out once.
  ASSERT_EQ(flood(3, 0x200), 3);
  rig.run_for(kAllRetriesOver);
  EXPECT_EQ(rig.server().count(EventType::rep_error), 5u);
  EXPECT_EQ(reps_retried(rig.server()), 6u);
  // Another source is not affected: the client's unanswered handshake gets its retries.
  ASSERT_EQ(connect_until_refused(rig, rig.client(), 1, 1), 1);
  rig.run_for(kAllRetriesOver);
  EXPECT_EQ(reps_retried(rig.server()), 9u);
  // The flooder answers one handshake (an RTU): its REPs are retransmitted again.
  rig.other().react = [&rig](const Event& e) {
    if (e.type == EventType::rep_received) {
      EXPECT_EQ(rig.other().engine().send_rtu(e.id, {}), Status::ok);
    }
  };
  ASSERT_EQ(flood(1, 0x300), 1);
  rig.run_for(kNoRetryYet);
  ASSERT_EQ(rig.server().count(EventType::rtu_received), 1u);
  rig.other().react = nullptr;
  ASSERT_EQ(flood(1, 0x400), 1);
  rig.run_for(kAllRetriesOver);
  EXPECT_EQ(reps_retried(rig.server()), 12u);
}

// On RoCE the source is the GID, which the sender picks among its own (and a host writing its own
// headers could forge): each of a port's GIDs is a source of its own.
TEST(HalfOpenBudget, OnRoceASourceIsItsGid) {
  FASTCM_LOOPBACK_ONLY("three HCAs");
  loopback::LoopbackConfig roce = loopback::LoopbackConfig::make(3, 1);
  for (loopback::LoopbackHcaConfig& hca : roce.hcas) {
    hca.ports[0].link_layer = LinkLayer::ethernet;
    hca.ports[0].lid = 0;
  }
  PortAttr& flooder_port = roce.hcas[2].ports[0];
  flooder_port.gid_table[1] = Gid::from_parts(0xfe80'0000'0000'0000, flooder_port.port_guid + 1);
  flooder_port.gid_count = 2;
  ThreePeers rig(server_with(2), suite_config(kTestEngine), flooder_config(), roce);
  listen_and_accept(rig);
  client_answers(rig);
  const auto from_gid = [&rig](std::size_t gid, Qpn first) {
    return [&rig, gid, first](int i) { return standard_req(rig.path(2, gid), static_cast<Qpn>(first + static_cast<Qpn>(i))); };
  };
  ASSERT_EQ(connect_until_refused(rig, rig.other(), 3, from_gid(0, 0x100)), 3);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::req_received), 2u);
  EXPECT_EQ(drops(rig.server().port_counters(), DropReason::source_budget), 1u);
  ASSERT_EQ(connect_until_refused(rig, rig.other(), 3, from_gid(1, 0x200)), 3);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::req_received), 4u);
  EXPECT_EQ(drops(rig.server().port_counters(), DropReason::source_budget), 2u);
  ASSERT_EQ(connect_until_refused(rig, rig.client(), 1, 2), 2);
  rig.run_for(kNoRetryYet);
  EXPECT_EQ(rig.server().count(EventType::rtu_received), 2u);
}

}  // namespace
}  // namespace fastcm::test
