// Destroy in every state (Engine::destroy in engine.h; IBTA Vol. 1 12.9.8.7): what goes
// on the wire, what the other side hears, that on_destroyed runs exactly once and no event for
// the Id follows, and that every endpoint slot and pooled MAD comes back.
#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tests/conformance/state_setup.h"

namespace fastcm::test {
namespace {

constexpr std::uint16_t kRejTimeout = 4;
constexpr std::uint16_t kRejConsumer = 28;
constexpr std::uint8_t kRejectsReq = 0;
constexpr std::uint8_t kRejectsRep = 1;
constexpr std::uint8_t kRejectsNone = 2;
constexpr std::uint8_t kSidrRejected = 2;

// What destroying an endpoint in `state` sends at once, and which event that gives the other
// side's application (nothing when `sends` is empty: a running timer finishes the job).
struct DestroyCase {
  EndpointState state;
  std::optional<CmMessageKind> sends;
  std::optional<EventType> peer_hears;
  std::uint16_t rej_reason = 0;
  std::uint8_t rej_message = 0;
  bool ari_names_our_ca = false;  // REJ "timeout" carries the CA GUID that timed out
  std::uint8_t sidr_status = 0;
};

const DestroyCase kCases[] = {
    {EndpointState::idle, {}, {}},
    // Before establishment: REJ. An active side still waiting for the REP times out its REQ...
    {EndpointState::req_sent, CmMessageKind::rej, EventType::rej_received, kRejTimeout,
     kRejectsNone, true},
    {EndpointState::mra_req_rcvd, CmMessageKind::rej, EventType::rej_received, kRejTimeout,
     kRejectsNone, true},
    // ...once a REQ (or REP) was received, the consumer rejects it.
    {EndpointState::req_rcvd, CmMessageKind::rej, EventType::rej_received, kRejConsumer,
     kRejectsReq},
    {EndpointState::mra_req_sent, CmMessageKind::rej, EventType::rej_received, kRejConsumer,
     kRejectsReq},
    {EndpointState::rep_sent, CmMessageKind::rej, EventType::rej_received, kRejConsumer,
     kRejectsNone},
    {EndpointState::rep_rcvd, CmMessageKind::rej, EventType::rej_received, kRejConsumer,
     kRejectsRep},
    {EndpointState::mra_rep_sent, CmMessageKind::rej, EventType::rej_received, kRejConsumer,
     kRejectsRep},
    {EndpointState::mra_rep_rcvd, CmMessageKind::rej, EventType::rej_received, kRejConsumer,
     kRejectsNone},
    // Established: DREQ; a pending DREQ: DREP; already leaving: its retries or time-wait go on.
    {EndpointState::established_active, CmMessageKind::dreq, EventType::dreq_received},
    {EndpointState::established_passive, CmMessageKind::dreq, EventType::dreq_received},
    {EndpointState::dreq_sent, {}, {}},
    {EndpointState::dreq_rcvd, CmMessageKind::drep, EventType::drep_received},
    {EndpointState::timewait, {}, {}},
    // SIDR: the requester simply forgets; a pending request is answered "rejected".
    {EndpointState::sidr_req_sent, {}, {}},
    {EndpointState::sidr_req_rcvd, CmMessageKind::sidr_rep, EventType::sidr_rep_received, 0, 0,
     false, kSidrRejected},
};

// gtest names a failing case by its state rather than by its bytes.
void PrintTo(const DestroyCase& c, std::ostream* os) { *os << label(c.state); }

void count_call(void* n) { ++*static_cast<int*>(n); }

// Few endpoint slots, so that the check that every one came back is quick; a few rounds, so that
// a scenario is shown to repeat on recycled slots.
constexpr EngineConfig kSmallEngine{.max_endpoints = 4, .max_listens = 4, .mad_buffers = 256};
constexpr int kRounds = 3;
// Past every retry, MRA wait and time-wait of a scenario.
constexpr std::uint64_t kLongEnough = 100 * Cluster::kSecond;

class DestroyInEveryState : public ::testing::TestWithParam<DestroyCase> {
 protected:
  DestroyInEveryState()
      : cluster_(loopback::LoopbackConfig::two_hcas(1), kSmallEngine), setup_(cluster_) {}

  // One scenario: reach the state, destroy, check, let every timer run out, clean the other end.
  void round() {
    const DestroyCase& c = GetParam();
    const Reached r = setup_.reach(c.state);
    ASSERT_EQ(setup_.state_of(r.host, r.target), state_name(c.state));
    Peer& self = setup_.on(r.host);
    Peer& other = setup_.across(r.host);
    const PortCounters before = self.port_counters();
    const std::size_t self_mark = self.events().size();
    const std::size_t other_mark = other.events().size();

    int destroyed = 0;
    ASSERT_EQ(self.engine().destroy(r.target, &count_call, &destroyed), Status::ok);
    EXPECT_EQ(destroyed, 1);
    EXPECT_EQ(self.engine().destroy(r.target, &count_call, &destroyed), Status::stale_id);
    ConnectionInfo info;
    EXPECT_EQ(self.engine().connection_info(r.target, info), Status::stale_id);

    // Sent at once, from inside destroy.
    const PortCounters after = self.port_counters();
    for (std::size_t k = 0; k < kCmMessageKinds; ++k) {
      const bool expected = c.sends && static_cast<std::size_t>(*c.sends) == k;
      EXPECT_EQ(after.messages[k].sent - before.messages[k].sent, expected ? 1u : 0u)
          << "message kind " << k;
      EXPECT_EQ(after.messages[k].retried, before.messages[k].retried) << "message kind " << k;
    }

    cluster_.settle();
    if (c.peer_hears) check_peer_heard(c, r, other, other_mark);

    cluster_.run_for(kLongEnough);
    EXPECT_EQ(destroyed, 1);
    for (std::size_t i = self_mark; i < self.events().size(); ++i) {
      EXPECT_NE(self.events()[i].id, r.target)
          << "event " << static_cast<int>(self.events()[i].type);
    }
    if (!r.peer.empty()) {
      EXPECT_EQ(other.engine().destroy(r.peer), Status::ok);
    }
    cluster_.run_for(kLongEnough);
    // Nothing is live any more: every pooled MAD is back.
    EXPECT_EQ(self.engine().mad_buffers_in_use(), 0u);
    EXPECT_EQ(other.engine().mad_buffers_in_use(), 0u);
  }

  void check_peer_heard(const DestroyCase& c, const Reached& r, const Peer& other,
                        std::size_t mark) {
    std::vector<RecordedEvent> heard;
    for (std::size_t i = mark; i < other.events().size(); ++i) heard.push_back(other.events()[i]);
    ASSERT_EQ(heard.size(), 1u);
    const RecordedEvent& e = heard[0];
    EXPECT_EQ(e.type, *c.peer_hears);
    EXPECT_EQ(e.id, r.peer);
    if (e.type == EventType::rej_received) {
      const auto& rej = std::get<RejReceived>(e.params);
      EXPECT_EQ(rej.reason, c.rej_reason);
      EXPECT_EQ(rej.message_rejected, c.rej_message);
      if (c.ari_names_our_ca) {
        const Guid ca = cluster_.client_port().node_guid;  // only an active side times out a REQ
        std::vector<std::uint8_t> ari;
        for (int i = 7; i >= 0; --i) ari.push_back(static_cast<std::uint8_t>(ca >> (8 * i)));
        EXPECT_EQ(e.info, ari);
      } else {
        EXPECT_TRUE(e.info.empty());
      }
    }
    if (e.type == EventType::sidr_rep_received) {
      EXPECT_EQ(std::get<SidrRepReceived>(e.params).status, c.sidr_status);
    }
  }

  Cluster cluster_;
  StateSetup setup_;
};

TEST_P(DestroyInEveryState, FollowsTheProtocolAndGivesEverythingBack) {
  for (int i = 0; i < kRounds; ++i) {
    SCOPED_TRACE("round " + std::to_string(i));
    round();
    if (HasFatalFailure()) return;
  }
  // Every slot is free again: create_id succeeds max_endpoints times.
  for (Peer* peer : {&cluster_.server(), &cluster_.client()}) {
    EXPECT_EQ(peer->port_counters().dropped(DropReason::no_resources), 0u);
    std::vector<Id> ids(kSmallEngine.max_endpoints);
    for (Id& id : ids) {
      EXPECT_EQ(peer->engine().create_id(peer->delivery(), nullptr, id), Status::ok);
    }
    Id one_more;
    EXPECT_EQ(peer->engine().create_id(peer->delivery(), nullptr, one_more), Status::no_resources);
  }
}

INSTANTIATE_TEST_SUITE_P(States, DestroyInEveryState, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<DestroyCase>& param) {
                           return std::string(label(param.param.state));
                         });

// Destroy from inside callbacks: the Id's own, and another endpoint's.
class DestroyFromCallback : public ::testing::Test {
 protected:
  DestroyFromCallback()
      : cluster_(loopback::LoopbackConfig::two_hcas(1), kSmallEngine), setup_(cluster_) {}

  static void log_destroyed(void* log) {
    static_cast<std::vector<std::string>*>(log)->push_back("on_destroyed");
  }

  Cluster cluster_;
  StateSetup setup_;
  std::vector<std::string> log_;
};

TEST_F(DestroyFromCallback, OwnCallbackRunsOnDestroyedOnlyAfterItReturned) {
  Engine& client = cluster_.client().engine();
  cluster_.client().react = [&](const Event& e) {
    if (e.type != EventType::rep_received) return;
    log_.push_back("callback");
    log_.push_back(std::string(to_string(client.destroy(e.id, &log_destroyed, &log_))));
    log_.push_back(std::string(to_string(client.destroy(e.id, &log_destroyed, &log_))));
    log_.push_back("callback returns");
  };
  const Reached r = setup_.reach(EndpointState::rep_rcvd);
  EXPECT_EQ(log_, (std::vector<std::string>{"callback", "ok", "stale_id", "callback returns",
                                            "on_destroyed"}));

  // The protocol side ran as from outside: the REP is rejected by the consumer.
  const auto rejs = cluster_.server().of(EventType::rej_received);
  ASSERT_EQ(rejs.size(), 1u);
  EXPECT_EQ(std::get<RejReceived>(rejs[0].params).reason, kRejConsumer);
  EXPECT_EQ(std::get<RejReceived>(rejs[0].params).message_rejected, kRejectsRep);
  cluster_.run_for(kLongEnough);
  EXPECT_EQ(cluster_.client().events().size(), 1u);  // the rep_received it was destroyed in
  EXPECT_EQ(cluster_.client().events()[0].id, r.target);
  EXPECT_EQ(std::count(log_.begin(), log_.end(), "on_destroyed"), 1);
}

TEST_F(DestroyFromCallback, AnotherEndpointsOnDestroyedRunsBeforeDestroyReturns) {
  Engine& client = cluster_.client().engine();
  Id bystander;
  ASSERT_EQ(client.create_id(cluster_.client().delivery(), nullptr, bystander), Status::ok);
  cluster_.client().react = [&](const Event& e) {
    if (e.type != EventType::rep_received) return;
    log_.push_back("callback");
    log_.push_back(std::string(to_string(client.destroy(bystander, &log_destroyed, &log_))));
    log_.push_back("callback returns");
  };
  const Reached r = setup_.reach(EndpointState::rep_rcvd);
  EXPECT_EQ(log_, (std::vector<std::string>{"callback", "on_destroyed", "ok", "callback returns"}));
  // The endpoint whose callback it was is untouched.
  EXPECT_EQ(setup_.state_of(Host::client, r.target), "rep_rcvd");
  EXPECT_EQ(client.send_rtu(r.target, {}), Status::ok);
}

}  // namespace
}  // namespace fastcm::test
