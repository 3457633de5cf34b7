// Connection establishment under loss (IBTA Vol. 1 12.6 and 12.9.8): each handshake message lost
// once, recovered by one retransmission; and lost until the sender's retries run out, each retry
// one wait (2 · packet life time + the peer's CM response timeout) after the last.
#include <array>
#include <cstdint>
#include <vector>

#include "engine/cm_timeouts.h"
#include "engine/mad/codec.h"
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

using engine::response_wait_ns;

constexpr std::uint16_t kReqAttr = static_cast<std::uint16_t>(mad::AttrId::req);
constexpr std::uint16_t kRepAttr = static_cast<std::uint16_t>(mad::AttrId::rep);
constexpr std::uint16_t kRtuAttr = static_cast<std::uint16_t>(mad::AttrId::rtu);

constexpr std::uint16_t kRejTimeout = static_cast<std::uint16_t>(mad::RejReason::timeout);

constexpr loopback::PortRef kServerPort{0, 0};
constexpr loopback::PortRef kClientPort{1, 0};

// The client's path has a packet life time of 14 (67 ms, Cluster::make_path). Its REQ carries that
// as a local ACK timeout of 17 (2 · 67 ms plus the client CA's 268 ms ACK delay, rounded up), from
// which the server infers a packet life time of 16 for its own waits.
constexpr std::uint8_t kClientPacketLifeTime = 14;
constexpr std::uint8_t kServerPacketLifeTime = 16;
// ConnectScenario's REQ: both CM response timeouts 16 (268 ms), 3 retries.
constexpr std::uint8_t kResponseTimeout = 16;
constexpr std::uint64_t kMaxRetries = 3;
// The client's wait for an answer to its REQ, and the server's for an answer to its REP.
constexpr std::uint64_t kReqWait = response_wait_ns(kClientPacketLifeTime, kResponseTimeout);
constexpr std::uint64_t kRepWait = response_wait_ns(kServerPacketLifeTime, kResponseTimeout);
static_assert(kReqWait == 402'653'184 && kRepWait == 805'306'368);

// The CA GUID as a REJ "timeout" carries it in its ARI (IBTA Table 109): 8 bytes, big-endian.
std::vector<std::uint8_t> guid_bytes(Guid guid) {
  std::vector<std::uint8_t> out(8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::uint8_t>(guid >> (56 - 8 * i));
  }
  return out;
}

class HandshakeFaults : public ConnectScenario {
 protected:
  void SetUp() override {
    FASTCM_LOOPBACK_ONLY("fault injection (lost MADs)");
    ConnectScenario::SetUp();
  }
  void run_until(std::uint64_t t) { cluster_.run_for(t - cluster_.clock().now_ns()); }
  void lose_all(loopback::PortRef from, std::uint16_t attr) {
    cluster_.fabric().set_fault(
        loopback::FaultRule{.from = from, .attr_id = attr, .loss_pct = 100});
  }
  [[nodiscard]] std::uint64_t lost_from(loopback::PortRef port) {
    return cluster_.fabric().counters(port).dropped_by_fault;
  }
  [[nodiscard]] static MessageCounters of(const Peer& peer, CmMessageKind kind) {
    return peer.port_counters().of(kind);
  }
  // The MADs waiting at the server's port, taken off the wire before its engine reads them.
  std::vector<mad::DecodedMad> take_arriving_at_server() {
    std::vector<mad::DecodedMad> out;
    MadPacket in;
    const std::array<MadPacket*, 1> slot{&in};
    while (cluster_.fabric().hca(kServerPort.hca).recv_burst(kServerPort.port, slot) == 1) {
      mad::DecodedMad d;
      EXPECT_TRUE(mad::decode(in.mad, d).ok());
      out.push_back(d);
    }
    return out;
  }
};

TEST_F(HandshakeFaults, ReqLostOnceIsRetransmittedAfterOneWait) {
  lose_all(kClientPort, kReqAttr);
  const Id id = connect();
  cluster_.run_for(1'000'000);
  ASSERT_EQ(lost_from(kClientPort), 1u);
  cluster_.fabric().clear_faults();

  run_until(kReqWait - 1);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  EXPECT_EQ(server().count(EventType::req_received), 0u);
  run_until(kReqWait);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 1u);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(of(client(), CmMessageKind::req).sent, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::req).received, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::req).duplicate, 0u);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 0u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, 0u);
  // Each side heard of each step once.
  EXPECT_EQ(server().events().size(), 2u);
  EXPECT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(server().count(EventType::rtu_received), 1u);
  EXPECT_EQ(client().events().size(), 1u);
  EXPECT_EQ(client().count(EventType::rep_received), 1u);
}

TEST_F(HandshakeFaults, RepLostOnceIsRetransmittedWhenTheServersWaitEnds) {
  lose_all(kServerPort, kRepAttr);
  ReqParams p = req_params();
  // The client's REQ wait (1.2 s) outlasts the server's REP wait.
  p.remote_cm_response_timeout = 18;
  const Id id = connect(p);
  cluster_.run_for(1'000'000);
  ASSERT_EQ(lost_from(kServerPort), 1u);
  ASSERT_EQ(state_of(server(), server_id_), "rep_sent");
  cluster_.fabric().clear_faults();

  run_until(kRepWait - 1);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 0u);
  EXPECT_EQ(client().count(EventType::rep_received), 0u);
  run_until(kRepWait);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 1u);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(of(server(), CmMessageKind::rep).sent, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rep).received, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, 0u);
  EXPECT_EQ(server().events().size(), 2u);
  EXPECT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(server().count(EventType::rtu_received), 1u);
  EXPECT_EQ(client().events().size(), 1u);
  EXPECT_EQ(client().count(EventType::rep_received), 1u);
}

TEST_F(HandshakeFaults, RtuLostOnceIsResentToTheRetransmittedRep) {
  lose_all(kClientPort, kRtuAttr);
  const Id id = connect();
  cluster_.run_for(1'000'000);
  ASSERT_EQ(lost_from(kClientPort), 1u);
  ASSERT_EQ(state_of(client(), id), "established");
  ASSERT_EQ(state_of(server(), server_id_), "rep_sent");
  cluster_.fabric().clear_faults();

  run_until(kRepWait - 1);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 0u);
  EXPECT_EQ(state_of(server(), server_id_), "rep_sent");
  run_until(kRepWait);
  EXPECT_EQ(state_of(server(), server_id_), "established");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).sent, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rtu).received, 1u);
  EXPECT_EQ(server().events().size(), 2u);
  EXPECT_EQ(server().count(EventType::rtu_received), 1u);
  EXPECT_EQ(client().events().size(), 1u);
  EXPECT_EQ(client().count(EventType::rep_received), 1u);
}

TEST_F(HandshakeFaults, ReqLostUntilRetriesRunOutEndsInReqErrorAndRejTimeout) {
  lose_all(kClientPort, kReqAttr);
  const Id id = connect();
  const std::uint32_t client_comm_id = id.comm_id();

  for (std::uint64_t k = 1; k <= kMaxRetries; ++k) {
    run_until(k * kReqWait - 1);
    EXPECT_EQ(of(client(), CmMessageKind::req).retried, k - 1);
    run_until(k * kReqWait);
    EXPECT_EQ(of(client(), CmMessageKind::req).retried, k);
  }
  run_until((kMaxRetries + 1) * kReqWait - 1);
  EXPECT_EQ(client().count(EventType::req_error), 0u);
  EXPECT_EQ(state_of(client(), id), "req_sent");

  // The last wait ends: the client gives up and tells the server, naming its CA as the one that
  // timed out. Only the client runs, so the REJ can be read off the wire.
  cluster_.clock().set((kMaxRetries + 1) * kReqWait);
  client().engine().progress();
  EXPECT_EQ(client().count(EventType::req_error), 1u);
  EXPECT_EQ(state_of(client(), id), "idle");
  const std::vector<mad::DecodedMad> wire = take_arriving_at_server();
  ASSERT_EQ(wire.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<mad::Rej>(wire[0].message));
  const auto& rej = std::get<mad::Rej>(wire[0].message);
  EXPECT_EQ(rej.reason, mad::RejReason::timeout);
  EXPECT_EQ(rej.local_comm_id, client_comm_id);
  EXPECT_EQ(rej.remote_comm_id, 0u);  // the client never learnt the server's ID
  EXPECT_EQ(rej.message_rejected, mad::MessageKind::lap_or_none);
  ASSERT_EQ(rej.rejected_info_length, 8);
  EXPECT_EQ(std::vector<std::uint8_t>(rej.ari.begin(), rej.ari.begin() + 8),
            guid_bytes(cluster_.client_port().node_guid));

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(of(client(), CmMessageKind::req).sent, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, kMaxRetries);
  EXPECT_EQ(of(client(), CmMessageKind::rej).sent, 1u);
  EXPECT_EQ(lost_from(kClientPort), kMaxRetries + 1);
  EXPECT_EQ(client().events().size(), 1u);
  EXPECT_TRUE(server().events().empty());
}

TEST_F(HandshakeFaults, RepLostUntilTheServersRetriesRunOutRejectsTheClientWithTimeout) {
  lose_all(kServerPort, kRepAttr);
  ReqParams p = req_params();
  // The client waits 4.4 s for an answer to its REQ: longer than all of the server's REP retries.
  p.remote_cm_response_timeout = 20;
  const Id id = connect(p);

  for (std::uint64_t k = 1; k <= kMaxRetries; ++k) {
    run_until(k * kRepWait - 1);
    EXPECT_EQ(of(server(), CmMessageKind::rep).retried, k - 1);
    run_until(k * kRepWait);
    EXPECT_EQ(of(server(), CmMessageKind::rep).retried, k);
  }
  run_until((kMaxRetries + 1) * kRepWait - 1);
  EXPECT_EQ(server().count(EventType::rep_error), 0u);
  EXPECT_EQ(state_of(server(), server_id_), "rep_sent");

  // The server gives up: rep_error for its application, REJ "timeout" naming its CA to the
  // client, which is still waiting in req_sent and so learns the attempt failed (12.6.3).
  run_until((kMaxRetries + 1) * kRepWait);
  EXPECT_EQ(server().count(EventType::rep_error), 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rej).sent, 1u);
  EXPECT_EQ(state_of(server(), server_id_), "timewait");
  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  const RecordedEvent rej = client().of(EventType::rej_received)[0];
  EXPECT_EQ(std::get<RejReceived>(rej.params).reason, kRejTimeout);
  EXPECT_EQ(rej.info, guid_bytes(cluster_.server_port().node_guid));
  EXPECT_EQ(state_of(client(), id), "idle");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  EXPECT_EQ(lost_from(kServerPort), kMaxRetries + 1);
  EXPECT_EQ(client().events().size(), 1u);
  EXPECT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(server().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(server().events().size(), 3u);
}

TEST_F(HandshakeFaults, RtuLostTwiceThenTheThirdGetsThrough) {
  lose_all(kClientPort, kRtuAttr);
  const Id id = connect();

  // Each REP retransmission finds the client established: it answers with its RTU again.
  run_until(kRepWait);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, 1u);
  EXPECT_EQ(lost_from(kClientPort), 2u);
  EXPECT_EQ(state_of(server(), server_id_), "rep_sent");
  cluster_.fabric().clear_faults();

  run_until(2 * kRepWait - 1);
  EXPECT_EQ(state_of(server(), server_id_), "rep_sent");
  run_until(2 * kRepWait);
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(state_of(client(), id), "established");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 2u);
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, 2u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, 2u);
  EXPECT_EQ(of(server(), CmMessageKind::rtu).received, 1u);
  EXPECT_EQ(server().events().size(), 2u);
  EXPECT_EQ(server().count(EventType::rtu_received), 1u);
  EXPECT_EQ(client().events().size(), 1u);
}

TEST_F(HandshakeFaults, RtuLostUntilTheServerGivesUpEndsTheConnectionOnBothSides) {
  lose_all(kClientPort, kRtuAttr);
  const Id id = connect();

  run_until((kMaxRetries + 1) * kRepWait - 1);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, kMaxRetries);
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, kMaxRetries);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, kMaxRetries);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(server().count(EventType::rep_error), 0u);

  // The server gives up on the connection and says so with REJ "timeout". The client thought it
  // was established; the REJ ends it there too: time-wait, and the application hears of it.
  run_until((kMaxRetries + 1) * kRepWait);
  EXPECT_EQ(server().count(EventType::rep_error), 1u);
  EXPECT_EQ(state_of(server(), server_id_), "timewait");
  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  const RecordedEvent rej = client().of(EventType::rej_received)[0];
  EXPECT_EQ(std::get<RejReceived>(rej.params).reason, kRejTimeout);
  EXPECT_EQ(rej.info, guid_bytes(cluster_.server_port().node_guid));
  EXPECT_EQ(state_of(client(), id), "timewait");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(client().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(server().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(client().events().size(), 3u);  // rep_received, rej_received, timewait_exit
  EXPECT_EQ(server().events().size(), 3u);  // req_received, rep_error, timewait_exit
  EXPECT_EQ(lost_from(kClientPort), kMaxRetries + 1);
}

}  // namespace
}  // namespace fastcm::test
