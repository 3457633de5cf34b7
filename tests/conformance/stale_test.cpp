// Stale connections and stale communication IDs (IBTA Vol. 1 12.9.8.3, 12.9.8.7; routing
// by comm ID, engine.h): a remote QP that connects twice, time-wait before a local ID is reused,
// and messages that name an ID whose slot has moved on to a new endpoint.
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

constexpr std::uint16_t kRejAttr = 0x0012;
constexpr std::uint16_t kDreqAttr = 0x0015;
constexpr std::uint16_t kServerHca = 0;
constexpr std::uint16_t kClientHca = 1;
constexpr std::uint16_t kStaleConn = 10;
constexpr std::uint16_t kInvalidCommId = 6;

// Tables for a handful of connections: the default sizes cost more to set up than a scenario
// takes to run, most of all under TSan.
constexpr EngineConfig kSmallEngine{.max_endpoints = 16, .mad_buffers = 256};

// An established connection (client_id_ ↔ server_id_). Both applications answer a DREQ with a
// DREP; `second` sends a REQ from another client endpoint.
class Stale : public ConnectScenario {
 protected:
  explicit Stale(EngineConfig config = kSmallEngine)
      : ConnectScenario(loopback::LoopbackConfig::two_hcas(1), config) {}

  void SetUp() override {
    ConnectScenario::SetUp();
    const auto accept = server().react;
    server().react = [this, accept](const Event& e) {
      accept(e);
      if (e.type == EventType::dreq_received) {
        EXPECT_EQ(server().engine().send_drep(e.id, {}), Status::ok);
      }
    };
    const auto complete = client().react;
    client().react = [this, complete](const Event& e) {
      complete(e);
      if (e.type == EventType::dreq_received) {
        EXPECT_EQ(client().engine().send_drep(e.id, {}), Status::ok);
      }
    };
    first_ = connect();
    cluster_.run_for(Cluster::kSecond / 100);
    first_server_ = server_id_;
    ASSERT_EQ(state_of(client(), first_), "established");
    ASSERT_EQ(state_of(server(), first_server_), "established");
  }

  // Another client endpoint's REQ; from the same client QP unless `qpn` says otherwise.
  Id second(Qpn qpn = kClientQpn) {
    ReqParams p = req_params();
    p.qpn = qpn;
    return connect(p);
  }

  void lose(std::uint16_t attr, std::uint16_t hca) {
    cluster_.fabric().set_fault(
        loopback::FaultRule{.from = loopback::PortRef{hca, 0}, .attr_id = attr, .loss_pct = 100});
  }

  [[nodiscard]] std::size_t events_of(Peer& peer, Id id) const {
    return static_cast<std::size_t>(
        std::count_if(peer.events().begin(), peer.events().end(),
                      [id](const RecordedEvent& e) { return e.id == id; }));
  }

  Id first_;
  Id first_server_;
};

TEST_F(Stale, ReqFromTheQpOfAnEstablishedConnectionIsRejectedAndTheOldOneDisconnected) {
  const Id again = second();
  cluster_.settle();

  // The new REQ never reaches the application; its sender hears "stale connection".
  EXPECT_EQ(server().count(EventType::req_received), 1u);
  ASSERT_EQ(events_of(client(), again), 1u);
  const RecordedEvent rej = client().of(EventType::rej_received).at(0);
  EXPECT_EQ(rej.id, again);
  EXPECT_EQ(std::get<RejReceived>(rej.params).reason, kStaleConn);
  EXPECT_EQ(std::get<RejReceived>(rej.params).message_rejected, 0);  // the REQ
  // A REJ "stale connection" puts the rejected side in time-wait (12.9.8.3).
  EXPECT_EQ(state_of(client(), again), "timewait");

  // The old connection is torn down from the passive side.
  EXPECT_EQ(server().port_counters().of(CmMessageKind::dreq).sent, 1u);
  ASSERT_EQ(client().count(EventType::dreq_received), 1u);
  EXPECT_EQ(client().of(EventType::dreq_received)[0].id, first_);
  ASSERT_EQ(server().count(EventType::drep_received), 1u);
  EXPECT_EQ(server().of(EventType::drep_received)[0].id, first_server_);
  EXPECT_EQ(state_of(client(), first_), "timewait");
  EXPECT_EQ(state_of(server(), first_server_), "timewait");
}

TEST_F(Stale, ReqFromTheQpOfAConnectionInTimewaitIsRejectedAndLeavesItAlone) {
  ASSERT_EQ(client().engine().send_dreq(first_, {}), Status::ok);
  cluster_.settle();
  ASSERT_EQ(state_of(server(), first_server_), "timewait");
  const std::size_t server_events = server().events().size();

  const Id again = second();
  cluster_.settle();

  EXPECT_EQ(server().count(EventType::req_received), 1u);
  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  const RecordedEvent rej = client().of(EventType::rej_received)[0];
  EXPECT_EQ(rej.id, again);
  EXPECT_EQ(std::get<RejReceived>(rej.params).reason, kStaleConn);
  // The connection in time-wait is left to finish it: no DREQ, no event, still waiting.
  EXPECT_EQ(server().port_counters().of(CmMessageKind::dreq).sent, 0u);
  EXPECT_EQ(server().events().size(), server_events);
  EXPECT_EQ(state_of(server(), first_server_), "timewait");

  cluster_.run_for(2 * Cluster::kSecond);
  EXPECT_EQ(server().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(server().count(EventType::req_received), 1u);
}

TEST_F(Stale, ReqFromTheSameQpIsAcceptedOnceTimewaitEnded) {
  ASSERT_EQ(client().engine().send_dreq(first_, {}), Status::ok);
  const Id again = second();  // in time-wait: rejected as stale
  cluster_.settle();
  ASSERT_EQ(client().count(EventType::rej_received), 1u);

  cluster_.run_for(2 * Cluster::kSecond);  // every time-wait ends, the rejected endpoint's too
  ASSERT_EQ(server().count(EventType::timewait_exit), 1u);
  ASSERT_EQ(state_of(client(), again), "idle");

  ASSERT_EQ(client().engine().send_req(again, req_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 100);
  ASSERT_EQ(server().count(EventType::req_received), 2u);
  EXPECT_EQ(std::get<ReqReceived>(server().of(EventType::req_received)[1].params).remote_qpn,
            kClientQpn);
  EXPECT_EQ(state_of(client(), again), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_NE(server_id_, first_server_);
  EXPECT_EQ(client().count(EventType::rej_received), 1u);
}

TEST_F(Stale, RepFromTheQpOfAnEstablishedConnectionIsRejectedAndTheOldOneDisconnected) {
  // A second connection from another client QP: the server answers from the QP it already uses
  // with the first connection, which must therefore be stale.
  const Id again = second(kClientQpn + 1);
  cluster_.settle();
  ASSERT_EQ(server().count(EventType::req_received), 2u);
  const Id again_server = server_id_;

  ASSERT_EQ(client().count(EventType::rep_received), 1u);  // the first connection's only
  ASSERT_EQ(events_of(client(), again), 1u);
  const RecordedEvent local = client().of(EventType::rej_received).at(0);
  EXPECT_EQ(local.id, again);
  EXPECT_EQ(std::get<RejReceived>(local.params).reason, kStaleConn);
  EXPECT_EQ(std::get<RejReceived>(local.params).message_rejected, 1);  // the REP it sent
  EXPECT_EQ(state_of(client(), again), "idle");

  ASSERT_EQ(server().count(EventType::rej_received), 1u);
  const RecordedEvent rej = server().of(EventType::rej_received)[0];
  EXPECT_EQ(rej.id, again_server);
  EXPECT_EQ(std::get<RejReceived>(rej.params).reason, kStaleConn);
  EXPECT_EQ(std::get<RejReceived>(rej.params).message_rejected, 1);  // the REP
  EXPECT_EQ(state_of(server(), again_server), "timewait");

  // The old connection is torn down from the active side, as the passive side does on a REQ.
  EXPECT_EQ(client().port_counters().of(CmMessageKind::dreq).sent, 1u);
  ASSERT_EQ(server().count(EventType::dreq_received), 1u);
  EXPECT_EQ(server().of(EventType::dreq_received)[0].id, first_server_);
  EXPECT_EQ(state_of(client(), first_), "timewait");
  EXPECT_EQ(state_of(server(), first_server_), "timewait");
}

// Two endpoints per engine, so that which slot is in use shows through create_id.
class StaleIds : public Stale {
 protected:
  StaleIds()
      : Stale(EngineConfig{.max_endpoints = 2, .mad_buffers = 256, .auto_mra_fraction = 0}) {}

  // Fills the engine's table: the slot freed last is the second one taken (FIFO reuse).
  void fill(Peer& peer, std::array<Id, 2>& out) {
    for (Id& id : out) ASSERT_EQ(peer.engine().create_id(peer.delivery(), nullptr, id), Status::ok);
    Id none;
    ASSERT_EQ(peer.engine().create_id(peer.delivery(), nullptr, none), Status::no_resources);
  }
};

TEST_F(StaleIds, DestroyedEndpointKeepsItsIdOutOfReuseUntilTimewaitEnded) {
  ASSERT_EQ(client().engine().destroy(first_), Status::ok);
  cluster_.settle();
  ASSERT_EQ(server().count(EventType::dreq_received), 1u);  // answered: the client is in time-wait

  Id other;
  ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, other), Status::ok);
  Id none;
  EXPECT_EQ(client().engine().create_id(client().delivery(), nullptr, none), Status::no_resources);

  cluster_.run_for(Cluster::kSecond);
  Id reused;
  ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, reused), Status::ok);
  EXPECT_NE(reused, first_);
  EXPECT_NE(reused.comm_id(), first_.comm_id());  // the slot's generation moved on
  EXPECT_EQ(client().engine().send_dreq(first_, {}), Status::stale_id);
}

TEST_F(StaleIds, RepNamingAReusedIdIsRejectedAsInvalidCommIdAndNeverReachesTheNewEndpoint) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost MADs)");
  // A REQ whose sender is destroyed while the server holds it; the REJ that would say so is lost.
  ASSERT_EQ(client().engine().destroy(first_), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  accept_ = false;
  const Id gone = second(kClientQpn + 1);
  cluster_.settle();
  ASSERT_EQ(server().count(EventType::req_received), 2u);
  lose(kRejAttr, kClientHca);
  ASSERT_EQ(client().engine().destroy(gone), Status::ok);
  cluster_.settle();
  cluster_.fabric().clear_faults();
  std::array<Id, 2> fresh;
  fill(client(), fresh);  // the second reuses the destroyed endpoint's slot

  const std::uint64_t rejs_sent = client().port_counters().of(CmMessageKind::rej).sent;
  RepParams rep;
  rep.qpn = kServerQpn + 1;
  ASSERT_EQ(server().engine().send_rep(server_id_, rep), Status::ok);
  cluster_.settle();

  EXPECT_EQ(client().port_counters().dropped(DropReason::unknown_comm_id), 1u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::rej).sent, rejs_sent + 1);
  ASSERT_EQ(server().count(EventType::rej_received), 1u);
  const RecordedEvent rej = server().of(EventType::rej_received)[0];
  EXPECT_EQ(rej.id, server_id_);
  EXPECT_EQ(std::get<RejReceived>(rej.params).reason, kInvalidCommId);
  EXPECT_EQ(std::get<RejReceived>(rej.params).message_rejected, 1);  // the REP
  for (const Id id : fresh) {
    EXPECT_EQ(events_of(client(), id), 0u);
    EXPECT_EQ(state_of(client(), id), "idle");
  }
}

TEST_F(StaleIds, DreqNamingAReusedIdIsAnsweredWithDrepAndNeverReachesTheNewEndpoint) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost MADs)");
  // The client's end is destroyed and its DREQs are lost: it retries, gives up, waits, frees.
  lose(kDreqAttr, kClientHca);
  ASSERT_EQ(client().engine().destroy(first_), Status::ok);
  cluster_.run_for(5 * Cluster::kSecond);
  cluster_.fabric().clear_faults();
  ASSERT_EQ(state_of(server(), first_server_), "established");
  std::array<Id, 2> fresh;
  fill(client(), fresh);

  ASSERT_EQ(server().engine().send_dreq(first_server_, {}), Status::ok);
  cluster_.settle();

  EXPECT_EQ(client().port_counters().dropped(DropReason::unknown_comm_id), 1u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::drep).sent, 1u);
  ASSERT_EQ(server().count(EventType::drep_received), 1u);
  EXPECT_EQ(server().of(EventType::drep_received)[0].id, first_server_);
  EXPECT_EQ(state_of(server(), first_server_), "timewait");
  for (const Id id : fresh) {
    EXPECT_EQ(events_of(client(), id), 0u);
    EXPECT_EQ(state_of(client(), id), "idle");
  }
}

TEST_F(StaleIds, RtuNamingAReusedIdIsDroppedAsUnknownAndNeverReachesTheNewEndpoint) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost MADs)");
  // The server's end of a second connection is destroyed after its REP; its REJ is lost, so the
  // client still holds the REP when the server's slot is freed and reused.
  ASSERT_EQ(client().engine().destroy(first_), Status::ok);
  ASSERT_EQ(server().engine().destroy(first_server_), Status::ok);
  cluster_.run_for(5 * Cluster::kSecond);
  complete_ = false;
  const Id late = second();
  cluster_.settle();
  ASSERT_EQ(state_of(client(), late), "rep_rcvd");
  lose(kRejAttr, kServerHca);
  ASSERT_EQ(server().engine().destroy(server_id_), Status::ok);
  cluster_.run_for(5 * Cluster::kSecond);  // the server's time-wait ends and frees the slot
  cluster_.fabric().clear_faults();
  std::array<Id, 2> fresh;
  fill(server(), fresh);
  const std::size_t server_events = server().events().size();

  ASSERT_EQ(client().engine().send_rtu(late, {}), Status::ok);
  cluster_.settle();

  EXPECT_EQ(server().port_counters().dropped(DropReason::unknown_comm_id), 1u);
  EXPECT_EQ(server().events().size(), server_events);
  for (const Id id : fresh) EXPECT_EQ(state_of(server(), id), "idle");
}

}  // namespace
}  // namespace fastcm::test
