// Connection release (IBTA Vol. 1 12.7, 12.9.8.4): DREQ collisions, lost DREQs and DREPs, DREQ
// retries running out, and a DREQ for a connection the receiver no longer knows.
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

constexpr std::uint16_t kDreqAttr = 0x0015;
constexpr std::uint16_t kDrepAttr = 0x0016;
constexpr std::uint16_t kServerHca = 0;
constexpr std::uint16_t kClientHca = 1;

// Tables for a handful of connections: the default sizes cost more to set up than a scenario
// takes to run, most of all under TSan.
constexpr EngineConfig kSmallEngine{.max_endpoints = 16, .mad_buffers = 256};

// An established connection whose applications answer every DREQ with a DREP (unless
// `answer_dreq_` is false) and record the state their endpoint was in when an event arrived.
class Release : public ConnectScenario {
 protected:
  Release() : ConnectScenario(loopback::LoopbackConfig::two_hcas(1), kSmallEngine) {}

  void SetUp() override {
    ConnectScenario::SetUp();
    connect();
    cluster_.run_for(Cluster::kSecond);
    ASSERT_EQ(state_of(client(), client_id_), "established");
    ASSERT_EQ(state_of(server(), server_id_), "established");
    server().react = [this](const Event& e) { answer(server(), e); };
    client().react = [this](const Event& e) { answer(client(), e); };
  }

  void answer(Peer& peer, const Event& e) {
    seen_in_.push_back(std::string(state_of(peer, e.id)));
    if (e.type == EventType::dreq_received && answer_dreq_) {
      EXPECT_EQ(peer.engine().send_drep(e.id, {}), Status::ok);
    }
  }

  // Loses every MAD of `attr` that `hca` sends.
  void lose(std::uint16_t attr, std::uint16_t hca) {
    cluster_.fabric().set_fault(
        loopback::FaultRule{.from = loopback::PortRef{hca, 0}, .attr_id = attr, .loss_pct = 100});
  }

  // Nothing either side counted as an error or a drop other than `allowed`.
  void expect_no_drops_but(Peer& peer, DropReason allowed, std::uint64_t count) {
    const PortCounters c = peer.port_counters();
    for (std::size_t r = 0; r < kDropReasons; ++r) {
      const auto reason = static_cast<DropReason>(r);
      EXPECT_EQ(c.dropped(reason), reason == allowed ? count : 0u) << to_string(reason);
    }
  }

  bool answer_dreq_ = true;
  std::vector<std::string> seen_in_;  // endpoint state at each event, both sides in order
};

TEST_F(Release, DreqCollisionIsAnsweredByBothSidesAndBothTimeWait) {
  ASSERT_EQ(client().engine().send_dreq(client_id_, {}), Status::ok);
  ASSERT_EQ(server().engine().send_dreq(server_id_, {}), Status::ok);
  cluster_.settle();

  for (Peer* peer : {&server(), &client()}) {
    EXPECT_EQ(peer->count(EventType::dreq_received), 1u);
    EXPECT_EQ(peer->count(EventType::dreq_error), 0u);
    const PortCounters c = peer->port_counters();
    EXPECT_EQ(c.of(CmMessageKind::dreq).sent, 1u);
    EXPECT_EQ(c.of(CmMessageKind::dreq).retried, 0u);
    EXPECT_EQ(c.of(CmMessageKind::drep).sent, 1u);
    // The peer's DREP to our DREQ arrives after we answered theirs and entered time-wait: it
    // repeats what the crossing already settled.
    EXPECT_EQ(c.of(CmMessageKind::drep).duplicate, 1u);
    expect_no_drops_but(*peer, DropReason::duplicate, 1);
  }
  EXPECT_EQ(state_of(client(), client_id_), "timewait");
  EXPECT_EQ(state_of(server(), server_id_), "timewait");
  // Each side received the other's DREQ while its own DREQ was still out.
  EXPECT_EQ(seen_in_, (std::vector<std::string>{"dreq_rcvd", "dreq_rcvd"}));

  cluster_.run_for(10 * Cluster::kSecond);
  for (Peer* peer : {&server(), &client()}) {
    EXPECT_EQ(peer->count(EventType::timewait_exit), 1u);
    EXPECT_EQ(peer->count(EventType::dreq_error), 0u);
    EXPECT_EQ(peer->port_counters().of(CmMessageKind::dreq).retried, 0u);
  }
  EXPECT_EQ(state_of(client(), client_id_), "idle");
  EXPECT_EQ(state_of(server(), server_id_), "idle");
}

TEST_F(Release, DreqLostOnceIsRetransmittedAndCompletes) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost MADs)");
  lose(kDreqAttr, kClientHca);
  ASSERT_EQ(client().engine().send_dreq(client_id_, {}), Status::ok);
  cluster_.settle();
  EXPECT_EQ(server().count(EventType::dreq_received), 0u);
  cluster_.fabric().clear_faults();

  cluster_.run_for(Cluster::kSecond / 2);  // the DREQ is retried after ~0.4 s
  EXPECT_EQ(client().port_counters().of(CmMessageKind::dreq).retried, 1u);
  EXPECT_EQ(server().count(EventType::dreq_received), 1u);
  EXPECT_EQ(client().count(EventType::drep_received), 1u);
  EXPECT_EQ(state_of(client(), client_id_), "timewait");
  EXPECT_EQ(state_of(server(), server_id_), "timewait");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(client().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(server().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(client().count(EventType::dreq_error), 0u);
  expect_no_drops_but(client(), DropReason::duplicate, 0);
  expect_no_drops_but(server(), DropReason::duplicate, 0);
}

TEST_F(Release, DreqUnansweredUntilRetriesRunOutReportsDreqErrorAndTimesWaitAnyway) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost MADs)");
  lose(kDreqAttr, kClientHca);
  ASSERT_EQ(client().engine().send_dreq(client_id_, {}), Status::ok);
  cluster_.run_for(10 * Cluster::kSecond);  // 1 + 3 DREQs ~0.4 s apart, then time-wait

  EXPECT_EQ(client().port_counters().of(CmMessageKind::dreq).sent, 1u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::dreq).retried, 3u);
  ASSERT_EQ(client().events().size(), 3u);  // rep_received from SetUp, then these two
  const RecordedEvent& error = client().events()[1];
  EXPECT_EQ(error.type, EventType::dreq_error);
  EXPECT_EQ(error.id, client_id_);
  EXPECT_FALSE(error.had_mad);
  EXPECT_EQ(client().events()[2].type, EventType::timewait_exit);
  // The endpoint was already in time-wait when the application heard of the error.
  EXPECT_EQ(seen_in_, (std::vector<std::string>{"timewait", "idle"}));
  EXPECT_EQ(state_of(client(), client_id_), "idle");
  EXPECT_EQ(server().count(EventType::dreq_received), 0u);
  EXPECT_EQ(state_of(server(), server_id_), "established");
}

TEST_F(Release, LostDrepIsSentAgainToTheRetransmittedDreqFromTimewait) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost MADs)");
  lose(kDrepAttr, kServerHca);
  ASSERT_EQ(client().engine().send_dreq(client_id_, {}), Status::ok);
  cluster_.settle();
  ASSERT_EQ(server().count(EventType::dreq_received), 1u);
  ASSERT_EQ(state_of(server(), server_id_), "timewait");
  cluster_.fabric().clear_faults();

  cluster_.run_for(Cluster::kSecond / 2);  // the client retries at ~0.4 s, the server waits ~0.5 s
  EXPECT_EQ(client().port_counters().of(CmMessageKind::dreq).retried, 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::dreq).duplicate, 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::drep).retried, 1u);
  EXPECT_EQ(server().count(EventType::dreq_received), 1u);  // the application heard it once
  ASSERT_EQ(client().count(EventType::drep_received), 1u);
  EXPECT_EQ(state_of(client(), client_id_), "timewait");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(client().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(server().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(client().count(EventType::dreq_error), 0u);
  expect_no_drops_but(client(), DropReason::duplicate, 0);
  expect_no_drops_but(server(), DropReason::duplicate, 0);
}

TEST_F(Release, DreqForAConnectionTheServerForgotIsAnsweredWithDrep) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost MADs)");
  // The server's application destroys its end; its DREQs never reach the client, so the server
  // retries, times out, waits and frees the endpoint while the client still believes in it.
  lose(kDreqAttr, kServerHca);
  const std::size_t server_events = server().events().size();
  int destroyed = 0;
  ASSERT_EQ(server().engine().destroy(
                server_id_, [](void* n) { ++*static_cast<int*>(n); }, &destroyed),
            Status::ok);
  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::dreq).retried, 3u);
  ASSERT_EQ(state_of(client(), client_id_), "established");
  cluster_.fabric().clear_faults();

  ASSERT_EQ(client().engine().send_dreq(client_id_, {}), Status::ok);
  cluster_.settle();
  EXPECT_EQ(server().port_counters().dropped(DropReason::unknown_comm_id), 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::drep).sent, 1u);
  ASSERT_EQ(client().count(EventType::drep_received), 1u);
  EXPECT_EQ(client().of(EventType::drep_received)[0].id, client_id_);
  EXPECT_EQ(state_of(client(), client_id_), "timewait");
  EXPECT_EQ(server().events().size(), server_events);  // destroyed: nothing more to its application
}

}  // namespace
}  // namespace fastcm::test
