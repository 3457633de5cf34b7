// A full listen backlog (ListenParams::backlog, engine.h): a REQ beyond
// it is dropped for the peer to retry, rejected with REJ "no resources" (IBTA Table 109, reason 3),
// or MRA'd without state so the peer retries after the service time, as the listen's policy says.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/cm_timeouts.h"
#include "engine/mad/cm_messages.h"
#include "engine/mad/units.h"
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

using engine::mra_wait_ns;
using engine::response_wait_ns;

// The client's path: packet life time 14; its REQs ask for a 268 ms response (exponent 16).
constexpr std::uint8_t kClientPacketLifeTime = 14;
constexpr std::uint64_t kReqWait = response_wait_ns(kClientPacketLifeTime, 16);
// When the server's application gets round to the REQ it holds: before the automatic MRA (at half
// the client's 268 ms response timeout) and before any retry.
constexpr std::uint64_t kFirstAnswer = 10'000'000;
static_assert(kFirstAnswer < mad::timeout_exponent_to_ns(16) / 2 && kFirstAnswer < kReqWait);

// A listen with room for one unanswered REQ. The first client's REQ fills it and the application
// sits on it; a second client endpoint (another QP) then asks for the same service.
class Backlog : public ConnectScenario {
 protected:
  void SetUp() override {
    ConnectScenario::SetUp();
    // Each accepted REQ gets a QP of its own: two connections to one remote QP would be stale.
    server().react = [this](const Event& e) {
      if (e.type != EventType::req_received) return;
      server_id_ = e.id;
      if (accept_) accept(e.id);
    };
  }
  void accept(Id id) {
    RepParams rep;
    rep.qpn = next_server_qpn_++;
    EXPECT_EQ(server().engine().send_rep(id, rep), Status::ok);
  }
  void listen_with(BacklogPolicy policy) {
    ASSERT_EQ(server().engine().destroy(listen_id_), Status::ok);
    ListenParams lp;
    lp.service_id = kServiceId;
    lp.backlog = 1;
    lp.backlog_policy = policy;
    lp.delivery = server().delivery();
    ASSERT_EQ(server().engine().listen(lp, listen_id_), Status::ok);
  }
  // The first connection fills the backlog, then the second REQ goes out; both at time 0. The
  // first is handled before the second is sent: shards need not take REQs in arrival order.
  void fill_then_connect_second() {
    accept_ = false;
    first_ = connect();
    cluster_.settle();
    ReqParams p = req_params();
    p.qpn = kClientQpn + 1;  // a different QP: not a stale connection of the first
    second_ = connect(p);
    cluster_.run_for(kFirstAnswer);
    ASSERT_EQ(server().count(EventType::req_received), 1u);
    first_server_id_ = server_id_;
  }
  // The server's application answers the REQ it held, freeing the backlog; later REQs are
  // answered at once.
  void answer_first() {
    accept_ = true;
    accept(first_server_id_);
  }
  void run_until(std::uint64_t t) { cluster_.run_for(t - cluster_.clock().now_ns()); }
  [[nodiscard]] static MessageCounters of(const Peer& peer, CmMessageKind kind) {
    return peer.port_counters().of(kind);
  }
  // Client events about the second endpoint.
  [[nodiscard]] std::ptrdiff_t second_events() {
    const auto& events = cluster_.client().events();
    return std::count_if(events.begin(), events.end(),
                         [this](const RecordedEvent& e) { return e.id == second_; });
  }

  Id first_;
  Id second_;
  Id first_server_id_;
  Qpn next_server_qpn_ = kServerQpn;
};

TEST_F(Backlog, DropPolicyLetsThePeerRetryUntilTheBacklogHasRoom) {
  listen_with(BacklogPolicy::drop);
  fill_then_connect_second();

  EXPECT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(server().port_counters().dropped(DropReason::backlog_full), 1u);
  EXPECT_EQ(of(server(), CmMessageKind::req).received, 2u);
  EXPECT_EQ(of(server(), CmMessageKind::rej).sent, 0u);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 0u);
  EXPECT_EQ(second_events(), 0);
  EXPECT_EQ(state_of(client(), second_), "req_sent");

  answer_first();
  run_until(kReqWait - 1);
  EXPECT_EQ(state_of(client(), first_), "established");
  EXPECT_EQ(state_of(client(), second_), "req_sent");
  run_until(kReqWait);  // the second client's REQ retry finds room
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 1u);
  EXPECT_EQ(server().count(EventType::req_received), 2u);
  EXPECT_EQ(state_of(client(), second_), "established");
  EXPECT_EQ(server().port_counters().dropped(DropReason::backlog_full), 1u);
  EXPECT_EQ(second_events(), 1);  // rep_received
}

TEST_F(Backlog, RejectPolicyAnswersRejNoResources) {
  listen_with(BacklogPolicy::reject);
  fill_then_connect_second();

  EXPECT_EQ(server().port_counters().dropped(DropReason::backlog_full), 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rej).sent, 1u);
  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  const RecordedEvent rej = client().of(EventType::rej_received)[0];
  EXPECT_EQ(rej.id, second_);
  EXPECT_EQ(std::get<RejReceived>(rej.params).reason,
            static_cast<std::uint16_t>(mad::RejReason::no_resources));
  EXPECT_EQ(std::get<RejReceived>(rej.params).message_rejected, 0);  // the REQ
  EXPECT_EQ(state_of(client(), second_), "idle");
  EXPECT_EQ(state_of(server(), first_server_id_), "req_rcvd");  // the first is untouched

  answer_first();
  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(state_of(client(), first_), "established");
  EXPECT_EQ(state_of(client(), second_), "idle");
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  EXPECT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(second_events(), 1);  // rej_received
}

TEST_F(Backlog, MraPolicyMakesThePeerWaitAndRetryOnceTheFirstWasAnswered) {
  listen_with(BacklogPolicy::mra);
  fill_then_connect_second();

  EXPECT_EQ(server().port_counters().dropped(DropReason::backlog_full), 1u);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 1u);
  ASSERT_EQ(client().count(EventType::mra_received), 1u);
  const RecordedEvent mra = client().of(EventType::mra_received)[0];
  EXPECT_EQ(mra.id, second_);
  const std::uint8_t service_timeout = EngineConfig{}.mra_service_timeout;
  EXPECT_EQ(std::get<MraReceived>(mra.params).service_timeout, service_timeout);
  EXPECT_EQ(state_of(client(), second_), "mra_req_rcvd");
  EXPECT_EQ(server().count(EventType::req_received), 1u);  // no endpoint for the second yet

  answer_first();
  // The MRA reached the client at time 0: it retries one MRA wait later, not one REQ wait.
  const std::uint64_t retry_at = mra_wait_ns(kClientPacketLifeTime, service_timeout);
  run_until(retry_at - 1);
  EXPECT_EQ(state_of(client(), first_), "established");
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  run_until(retry_at);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 1u);
  EXPECT_EQ(server().count(EventType::req_received), 2u);
  EXPECT_EQ(state_of(client(), second_), "established");
  EXPECT_EQ(server().port_counters().dropped(DropReason::backlog_full), 1u);
  EXPECT_EQ(second_events(), 2);  // mra_received, rep_received
}

}  // namespace
}  // namespace fastcm::test
