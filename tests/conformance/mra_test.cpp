// Message Receipt Acknowledgement (IBTA Vol. 1 12.6.6): an MRA of a REQ or of a REP stretches the
// waiting side's timer to the service time it asks for, sent by the application or, when the
// application is slow, by the engine on its behalf (EngineConfig::auto_mra_fraction).
#include <cstdint>

#include "engine/cm_timeouts.h"
#include "engine/mad/units.h"
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

using engine::mra_wait_ns;
using engine::response_wait_ns;

// As in the handshake: the client's path has a packet life time of 14; the server infers 16 from
// the REQ's local ACK timeout (see handshake_faults_test.cpp). Both CM response timeouts are 16.
constexpr std::uint8_t kClientPacketLifeTime = 14;
constexpr std::uint8_t kServerPacketLifeTime = 16;
constexpr std::uint8_t kResponseTimeout = 16;
constexpr std::uint64_t kReqWait = response_wait_ns(kClientPacketLifeTime, kResponseTimeout);
constexpr std::uint64_t kRepWait = response_wait_ns(kServerPacketLifeTime, kResponseTimeout);
// What the applications ask for in their MRAs: 4.3 s, far longer than either wait.
constexpr std::uint8_t kServiceTimeout = 20;
// Later than both plain waits, well before either MRA wait ends.
constexpr std::uint64_t kLateAnswer = 3 * Cluster::kSecond;
static_assert(kLateAnswer > kRepWait && kRepWait > kReqWait);
static_assert(kLateAnswer < mra_wait_ns(kClientPacketLifeTime, kServiceTimeout));

class Mra : public ConnectScenario {
 protected:
  explicit Mra(EngineConfig config = kTestEngine)
      : ConnectScenario(loopback::LoopbackConfig::two_hcas(1), config) {}
  [[nodiscard]] static EngineConfig with_auto_mra_fraction(double fraction) {
    EngineConfig config = kTestEngine;
    config.auto_mra_fraction = fraction;
    return config;
  }
  void run_until(std::uint64_t t) { cluster_.run_for(t - cluster_.clock().now_ns()); }
  [[nodiscard]] static MessageCounters of(const Peer& peer, CmMessageKind kind) {
    return peer.port_counters().of(kind);
  }
  [[nodiscard]] static MraParams mra_params() {
    MraParams mra;
    mra.service_timeout = kServiceTimeout;
    return mra;
  }
  [[nodiscard]] static RepParams rep_params() {
    RepParams rep;
    rep.qpn = kServerQpn;
    rep.starting_psn = 0x2222;
    return rep;
  }
  // The server answers every REQ with an MRA instead of a REP.
  void server_mras_the_req() {
    server().react = [this](const Event& e) {
      if (e.type == EventType::req_received) {
        server_id_ = e.id;
        EXPECT_EQ(server().engine().send_mra(e.id, mra_params()), Status::ok);
      }
    };
  }
  // The client answers every REP with an MRA instead of an RTU.
  void client_mras_the_rep() {
    client().react = [this](const Event& e) {
      if (e.type == EventType::rep_received) {
        EXPECT_EQ(client().engine().send_mra(e.id, mra_params()), Status::ok);
      }
    };
  }
};

TEST_F(Mra, ServerMraOfTheReqHoldsTheClientUntilTheLateRep) {
  server_mras_the_req();
  const Id id = connect();
  run_until(kLateAnswer);

  ASSERT_EQ(client().count(EventType::mra_received), 1u);
  EXPECT_EQ(std::get<MraReceived>(client().of(EventType::mra_received)[0].params).service_timeout,
            kServiceTimeout);
  EXPECT_EQ(state_of(client(), id), "mra_req_rcvd");
  EXPECT_EQ(state_of(server(), server_id_), "mra_req_sent");
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  EXPECT_EQ(client().count(EventType::req_error), 0u);

  ASSERT_EQ(server().engine().send_rep(server_id_, rep_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  EXPECT_EQ(of(server(), CmMessageKind::mra).retried, 0u);
  EXPECT_EQ(client().events().size(), 2u);  // mra_received, rep_received
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
}

TEST_F(Mra, ClientRetriesItsReqWhenTheMraWaitEnds) {
  server_mras_the_req();
  const Id id = connect();
  // The MRA arrived at once: the client's next step is one MRA wait (service time plus a packet
  // life time) away, not one REQ wait.
  const std::uint64_t extended = mra_wait_ns(kClientPacketLifeTime, kServiceTimeout);
  run_until(extended - 1);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  run_until(extended);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 1u);
  // The retry reaches a server still busy with it: it repeats its MRA, and nobody hears twice.
  EXPECT_EQ(of(server(), CmMessageKind::req).duplicate, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::mra).retried, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::mra).duplicate, 1u);
  EXPECT_EQ(client().count(EventType::mra_received), 1u);
  EXPECT_EQ(server().count(EventType::req_received), 1u);

  ASSERT_EQ(server().engine().send_rep(server_id_, rep_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(client().count(EventType::req_error), 0u);
}

TEST_F(Mra, ClientMraOfTheRepHoldsTheServerUntilTheLateRtu) {
  FASTCM_LOOPBACK_ONLY("its waits follow from the loopback CA's local ACK delay (16; the udp port has rxe's 15)");
  complete_ = false;
  client_mras_the_rep();
  const Id id = connect();
  // Without the MRA the server would resend its REP after kRepWait.
  const std::uint64_t extended = mra_wait_ns(kServerPacketLifeTime, kServiceTimeout);
  run_until(kLateAnswer);
  ASSERT_EQ(server().count(EventType::mra_received), 1u);
  EXPECT_EQ(std::get<MraReceived>(server().of(EventType::mra_received)[0].params).service_timeout,
            kServiceTimeout);
  EXPECT_EQ(state_of(server(), server_id_), "mra_rep_rcvd");
  EXPECT_EQ(state_of(client(), id), "mra_rep_sent");
  run_until(extended - 1);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 0u);
  run_until(extended);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 1u);
  // The client, still busy, repeats its MRA to the retransmitted REP.
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::mra).retried, 1u);
  EXPECT_EQ(client().count(EventType::rep_received), 1u);

  ASSERT_EQ(client().engine().send_rtu(id, {}), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(server().count(EventType::rep_error), 0u);
  EXPECT_EQ(server().events().size(), 3u);  // req_received, mra_received, rtu_received
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
}

TEST_F(Mra, EngineMrasTheReqOfASlowServerAtHalfTheClientsResponseTimeout) {
  accept_ = false;
  const Id id = connect();
  const std::uint64_t at = mad::timeout_exponent_to_ns(kResponseTimeout) / 2;
  run_until(at - 1);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 0u);
  run_until(at);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 1u);
  EXPECT_EQ(state_of(server(), server_id_), "mra_req_sent");
  ASSERT_EQ(client().count(EventType::mra_received), 1u);
  EXPECT_EQ(std::get<MraReceived>(client().of(EventType::mra_received)[0].params).service_timeout,
            EngineConfig{}.mra_service_timeout);

  // Long past the client's own REQ wait, it still waits.
  run_until(kLateAnswer);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  EXPECT_EQ(state_of(client(), id), "mra_req_rcvd");

  ASSERT_EQ(server().engine().send_rep(server_id_, rep_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 1u);
  EXPECT_EQ(client().events().size(), 2u);  // mra_received, rep_received
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
}

TEST_F(Mra, EngineMrasTheRepOfASlowClientAtHalfItsOwnResponseTimeout) {
  complete_ = false;
  const Id id = connect();
  // The client said in its REQ how long it takes to answer a REP (local CM response timeout).
  const std::uint64_t at = mad::timeout_exponent_to_ns(kResponseTimeout) / 2;
  run_until(at - 1);
  EXPECT_EQ(of(client(), CmMessageKind::mra).sent, 0u);
  run_until(at);
  EXPECT_EQ(of(client(), CmMessageKind::mra).sent, 1u);
  EXPECT_EQ(state_of(client(), id), "mra_rep_sent");
  ASSERT_EQ(server().count(EventType::mra_received), 1u);
  EXPECT_EQ(state_of(server(), server_id_), "mra_rep_rcvd");

  run_until(kLateAnswer);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 0u);
  ASSERT_EQ(client().engine().send_rtu(id, {}), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(server().count(EventType::rep_error), 0u);
  EXPECT_EQ(server().events().size(), 3u);  // req_received, mra_received, rtu_received
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
}

// The fraction is the engine's to choose: a quarter of the peer's response timeout here.
class MraAtAQuarter : public Mra {
 protected:
  MraAtAQuarter() : Mra(with_auto_mra_fraction(0.25)) {}
};

TEST_F(MraAtAQuarter, EngineMrasTheReqAtTheConfiguredFraction) {
  accept_ = false;
  connect();
  const std::uint64_t at = mad::timeout_exponent_to_ns(kResponseTimeout) / 4;
  run_until(at - 1);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 0u);
  run_until(at);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 1u);
  EXPECT_EQ(client().count(EventType::mra_received), 1u);
}

// Fraction 0: no automatic MRA, so a silent server lets the client's REQ retries run out.
class MraDisabled : public Mra {
 protected:
  MraDisabled() : Mra(with_auto_mra_fraction(0)) {}
};

TEST_F(MraDisabled, SilentServerLetsTheClientTimeOut) {
  accept_ = false;
  const Id id = connect();
  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 0u);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 3u);
  EXPECT_EQ(client().count(EventType::req_error), 1u);
  EXPECT_EQ(state_of(client(), id), "idle");
}

}  // namespace
}  // namespace fastcm::test
