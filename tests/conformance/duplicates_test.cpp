// Duplicated handshake messages (IBTA Vol. 1 12.9.8.1 and 12.9.8.2): the fabric delivers a copy of
// a REQ, MRA, REP, RTU or REJ, and the receiver answers it as its state says — resending what it
// already sent, rejecting a stale REQ, or dropping it — without telling the application twice.
#include <array>
#include <cstdint>
#include <vector>

#include "engine/mad/codec.h"
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

constexpr std::uint16_t kReqAttr = static_cast<std::uint16_t>(mad::AttrId::req);
constexpr std::uint16_t kMraAttr = static_cast<std::uint16_t>(mad::AttrId::mra);
constexpr std::uint16_t kRejAttr = static_cast<std::uint16_t>(mad::AttrId::rej);
constexpr std::uint16_t kRepAttr = static_cast<std::uint16_t>(mad::AttrId::rep);
constexpr std::uint16_t kRtuAttr = static_cast<std::uint16_t>(mad::AttrId::rtu);

// Well inside every wait of the scenario (the automatic MRA comes at 134 ms).
constexpr std::uint64_t kMoment = 1'000'000;

class Duplicates : public ConnectScenario {
 protected:
  void SetUp() override {
    FASTCM_LOOPBACK_ONLY("fault injection (duplicated MADs) and MADs sent from the loopback HCAs");
    ConnectScenario::SetUp();
  }
  // Every MAD of `attr`, in either direction, arrives twice.
  void duplicate_all(std::uint16_t attr) {
    cluster_.fabric().set_fault(loopback::FaultRule{.attr_id = attr, .dup_pct = 100});
  }
  [[nodiscard]] static MessageCounters of(const Peer& peer, CmMessageKind kind) {
    return peer.port_counters().of(kind);
  }
  [[nodiscard]] static RepParams rep_params() {
    RepParams rep;
    rep.qpn = kServerQpn;
    rep.starting_psn = 0x2222;
    return rep;
  }
  // An MRA asking for 4.3 s: far longer than the scenario runs before answering.
  // The server answers every REQ with an MRA (and nothing more yet).
  void mra_every_req() {
    server().react = [this](const Event& e) {
      if (e.type == EventType::req_received) {
        server_id_ = e.id;
        EXPECT_EQ(server().engine().send_mra(e.id, mra_params()), Status::ok);
      }
    };
  }
  [[nodiscard]] static MraParams mra_params() {
    MraParams mra;
    mra.service_timeout = 20;
    return mra;
  }
  // The MADs waiting at HCA `hca`'s port, taken off the wire before its engine reads them.
  std::vector<MadPacket> take_arriving_at(std::uint16_t hca) {
    std::vector<MadPacket> out;
    MadPacket in;
    const std::array<MadPacket*, 1> slot{&in};
    while (cluster_.fabric().hca(hca).recv_burst(0, slot) == 1) out.push_back(in);
    return out;
  }
  // Sends `mad` from the client's port to the server's, as the client's own MAD would go.
  void send_to_server(const MadPacket& mad) { send_from(1, cluster_.server_port().lid, mad); }
  void send_to_client(const MadPacket& mad) { send_from(0, cluster_.client_port().lid, mad); }
  void send_from(std::uint16_t hca, Lid to, const MadPacket& mad) {
    MadPacket out;
    out.mad = mad.mad;
    out.addr.remote_lid = to;
    const std::array<const MadPacket*, 1> burst{&out};
    ASSERT_EQ(cluster_.fabric().hca(hca).send_burst(0, burst), 1u);
  }
};

TEST_F(Duplicates, ReqWhileTheApplicationHoldsItIsDropped) {
  accept_ = false;
  duplicate_all(kReqAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);

  EXPECT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(of(server(), CmMessageKind::req).received, 2u);
  EXPECT_EQ(of(server(), CmMessageKind::req).duplicate, 1u);
  EXPECT_EQ(server().port_counters().dropped(DropReason::duplicate), 1u);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 0u);
  EXPECT_EQ(of(server(), CmMessageKind::rep).sent, 0u);
  EXPECT_EQ(state_of(server(), server_id_), "req_rcvd");

  cluster_.fabric().clear_faults();
  ASSERT_EQ(server().engine().send_rep(server_id_, rep_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
}

TEST_F(Duplicates, ReqAfterTheMraResendsTheMra) {
  mra_every_req();
  duplicate_all(kReqAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);

  EXPECT_EQ(of(server(), CmMessageKind::req).duplicate, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::mra).sent, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::mra).retried, 1u);
  EXPECT_EQ(state_of(server(), server_id_), "mra_req_sent");
  EXPECT_EQ(of(client(), CmMessageKind::mra).received, 2u);
  EXPECT_EQ(of(client(), CmMessageKind::mra).duplicate, 1u);
  EXPECT_EQ(client().count(EventType::mra_received), 1u);
  EXPECT_EQ(state_of(client(), id), "mra_req_rcvd");

  cluster_.fabric().clear_faults();
  ASSERT_EQ(server().engine().send_rep(server_id_, rep_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
  EXPECT_EQ(client().events().size(), 2u);  // mra_received, rep_received
}

TEST_F(Duplicates, ReqAfterTheRepResendsTheRep) {
  duplicate_all(kReqAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);

  EXPECT_EQ(of(server(), CmMessageKind::req).duplicate, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rep).sent, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 1u);
  // The second REP finds the client established: it repeats its RTU, which the server drops.
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rtu).duplicate, 1u);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
}

TEST_F(Duplicates, ReqInTimewaitIsRejectedAsAStaleConnection) {
  const Id id = connect();
  // Keep a copy of the REQ as it crossed the fabric, then let the original through: the copy is
  // a duplicate the fabric will deliver late.
  const std::vector<MadPacket> first = take_arriving_at(0);
  ASSERT_EQ(first.size(), 1u);
  send_to_server(first[0]);
  cluster_.run_for(kMoment);
  ASSERT_EQ(state_of(server(), server_id_), "established");

  const auto accept = server().react;
  server().react = [this, accept](const Event& e) {
    accept(e);
    if (e.type == EventType::dreq_received) {
      EXPECT_EQ(server().engine().send_drep(e.id, {}), Status::ok);
    }
  };
  ASSERT_EQ(client().engine().send_dreq(id, {}), Status::ok);
  cluster_.run_for(kMoment);
  ASSERT_EQ(state_of(server(), server_id_), "timewait");

  // The late copy arrives: the server answers it with REJ "stale connection" naming both IDs.
  send_to_server(first[0]);
  server().engine().progress();
  const std::vector<MadPacket> answer = take_arriving_at(1);
  ASSERT_EQ(answer.size(), 1u);
  mad::DecodedMad decoded;
  ASSERT_TRUE(mad::decode(answer[0].mad, decoded).ok());
  ASSERT_TRUE(std::holds_alternative<mad::Rej>(decoded.message));
  const auto& rej = std::get<mad::Rej>(decoded.message);
  EXPECT_EQ(rej.reason, mad::RejReason::stale_conn);
  EXPECT_EQ(rej.message_rejected, mad::MessageKind::req);
  EXPECT_EQ(rej.remote_comm_id, id.comm_id());
  EXPECT_EQ(rej.local_comm_id, server_id_.comm_id());
  EXPECT_EQ(of(server(), CmMessageKind::req).duplicate, 1u);
  EXPECT_EQ(state_of(server(), server_id_), "timewait");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(server().count(EventType::timewait_exit), 1u);
  // req_received, rtu_received, dreq_received, timewait_exit
  EXPECT_EQ(server().events().size(), 4u);
  EXPECT_EQ(client().events().size(), 3u);  // rep_received, drep_received, timewait_exit
}

TEST_F(Duplicates, RepAfterTheRtuResendsTheRtu) {
  duplicate_all(kRepAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);

  EXPECT_EQ(of(client(), CmMessageKind::rep).received, 2u);
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).sent, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rtu).duplicate, 1u);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
}

TEST_F(Duplicates, RepAfterTheRtuGetsTheSameRtuByteForByte) {
  // Carry each MAD by hand: REQ to the server, its REP to the client (keeping a copy), the RTU on.
  const Id id = connect();
  const std::vector<MadPacket> req = take_arriving_at(0);
  ASSERT_EQ(req.size(), 1u);
  send_to_server(req[0]);
  server().engine().progress();
  const std::vector<MadPacket> rep = take_arriving_at(1);
  ASSERT_EQ(rep.size(), 1u);
  send_to_client(rep[0]);
  client().engine().progress();
  const std::vector<MadPacket> rtu = take_arriving_at(0);
  ASSERT_EQ(rtu.size(), 1u);
  ASSERT_EQ(state_of(client(), id), "established");
  // An RTU without private data is not kept once sent (only the REP, whose private data the
  // application may still read): the duplicate REP gets it re-encoded, the same bytes.
  EXPECT_EQ(client().engine().mad_buffers_in_use(), 1u);

  send_to_client(rep[0]);
  client().engine().progress();
  const std::vector<MadPacket> again = take_arriving_at(0);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].mad, rtu[0].mad);
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).sent, 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).retried, 1u);
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
}

TEST_F(Duplicates, RepWhileTheApplicationHoldsItIsDropped) {
  complete_ = false;
  duplicate_all(kRepAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);

  EXPECT_EQ(client().count(EventType::rep_received), 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rep).duplicate, 1u);
  EXPECT_EQ(client().port_counters().dropped(DropReason::duplicate), 1u);
  EXPECT_EQ(of(client(), CmMessageKind::rtu).sent, 0u);
  EXPECT_EQ(of(client(), CmMessageKind::mra).sent, 0u);
  EXPECT_EQ(state_of(client(), id), "rep_rcvd");

  cluster_.fabric().clear_faults();
  ASSERT_EQ(client().engine().send_rtu(id, {}), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
}

TEST_F(Duplicates, RtuIsDropped) {
  duplicate_all(kRtuAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);

  EXPECT_EQ(of(server(), CmMessageKind::rtu).received, 2u);
  EXPECT_EQ(of(server(), CmMessageKind::rtu).duplicate, 1u);
  EXPECT_EQ(server().port_counters().dropped(DropReason::duplicate), 1u);
  EXPECT_EQ(of(server(), CmMessageKind::rep).retried, 0u);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
}

TEST_F(Duplicates, MraOfAReqIsDropped) {
  mra_every_req();
  duplicate_all(kMraAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);

  EXPECT_EQ(of(server(), CmMessageKind::mra).retried, 0u);
  EXPECT_EQ(of(client(), CmMessageKind::mra).received, 2u);
  EXPECT_EQ(of(client(), CmMessageKind::mra).duplicate, 1u);
  EXPECT_EQ(client().port_counters().dropped(DropReason::duplicate), 1u);
  EXPECT_EQ(client().count(EventType::mra_received), 1u);
  EXPECT_EQ(state_of(client(), id), "mra_req_rcvd");

  cluster_.fabric().clear_faults();
  ASSERT_EQ(server().engine().send_rep(server_id_, rep_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(client().events().size(), 2u);  // mra_received, rep_received
  EXPECT_EQ(server().events().size(), 2u);  // req_received, rtu_received
}

TEST_F(Duplicates, MraOfARepIsDropped) {
  complete_ = false;
  client().react = [this](const Event& e) {
    if (e.type == EventType::rep_received) {
      EXPECT_EQ(client().engine().send_mra(e.id, mra_params()), Status::ok);
    }
  };
  duplicate_all(kMraAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);

  EXPECT_EQ(of(server(), CmMessageKind::mra).received, 2u);
  EXPECT_EQ(of(server(), CmMessageKind::mra).duplicate, 1u);
  EXPECT_EQ(server().port_counters().dropped(DropReason::duplicate), 1u);
  EXPECT_EQ(server().count(EventType::mra_received), 1u);
  EXPECT_EQ(state_of(server(), server_id_), "mra_rep_rcvd");

  cluster_.fabric().clear_faults();
  ASSERT_EQ(client().engine().send_rtu(id, {}), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(server(), server_id_), "established");
  EXPECT_EQ(server().events().size(), 3u);  // req_received, mra_received, rtu_received
  EXPECT_EQ(client().events().size(), 1u);  // rep_received
}

TEST_F(Duplicates, RejIsDropped) {
  accept_ = false;
  duplicate_all(kRejAttr);
  const Id id = connect();
  cluster_.run_for(kMoment);
  ASSERT_EQ(server().engine().send_rej(server_id_, RejParams{}), Status::ok);
  cluster_.run_for(kMoment);

  EXPECT_EQ(of(client(), CmMessageKind::rej).received, 2u);
  EXPECT_EQ(of(client(), CmMessageKind::rej).duplicate, 1u);
  EXPECT_EQ(client().port_counters().dropped(DropReason::duplicate), 1u);
  EXPECT_EQ(client().count(EventType::rej_received), 1u);
  EXPECT_EQ(state_of(client(), id), "idle");

  cluster_.run_for(10 * Cluster::kSecond);
  EXPECT_EQ(of(client(), CmMessageKind::req).retried, 0u);
  EXPECT_EQ(client().events().size(), 1u);  // rej_received
  EXPECT_EQ(server().events().size(), 1u);  // req_received
}

}  // namespace
}  // namespace fastcm::test
