// REQs that reach the server at another port than the connection they belong to (IBTA Vol. 1
// 12.9.8.1 duplicates, 12.9.8.3.2 stale connections). The shard that receives a REQ makes its
// endpoint, so at 2 and 4 shards over 4 ports these copies arrive at a shard other than the one
// holding the connection: they must still meet it, as they would at one shard.
#include <array>
#include <vector>

#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

constexpr std::uint16_t kServerHca = 0;
constexpr std::uint16_t kClientHca = 1;
constexpr std::uint8_t kPorts = 4;
constexpr std::uint16_t kStaleConn = 10;
constexpr EngineConfig kSmallEngine{.max_endpoints = 16, .mad_buffers = 256};

class CrossPort : public ConnectScenario {
 protected:
  CrossPort() : ConnectScenario(loopback::LoopbackConfig::two_hcas(kPorts), kSmallEngine) {}

  void SetUp() override {
    FASTCM_LOOPBACK_ONLY("four ports per HCA, and MADs taken off the wire and sent again");
    ConnectScenario::SetUp();
  }

  // The REQ of `params` from client port `from` to server port `to`.
  [[nodiscard]] ReqParams req_between(std::size_t from, std::size_t to) const {
    ReqParams p = req_params();
    p.primary = cluster_.path_to_server(from, to);
    return p;
  }
  // The MADs waiting at server port `port`, taken off the wire before the engine reads them.
  std::vector<MadPacket> take_arriving_at_server(std::uint16_t port) {
    std::vector<MadPacket> out;
    MadPacket in;
    const std::array<MadPacket*, 1> slot{&in};
    while (cluster_.fabric().hca(kServerHca).recv_burst(port, slot) == 1) out.push_back(in);
    return out;
  }
  // Sends `mad` from client port `from` to server port `to`.
  void send_to_server(const MadPacket& mad, std::uint16_t from, std::size_t to) {
    MadPacket out;
    out.mad = mad.mad;
    out.addr.remote_lid = cluster_.server_port(to).lid;
    const std::array<const MadPacket*, 1> burst{&out};
    ASSERT_EQ(cluster_.fabric().hca(kClientHca).send_burst(from, burst), 1u);
  }
  [[nodiscard]] std::uint64_t rejs_sent() {
    std::uint64_t sent = 0;
    for (std::uint8_t p = 1; p <= kPorts; ++p) sent += server().port_counters(p).of(CmMessageKind::rej).sent;
    return sent;
  }
};

// The copy is answered by the endpoint its first copy made (dropped, since it came in at another
// port than the connection's), not taken for a new REQ from a QP already connected.
TEST_F(CrossPort, ACopyOfAReqAtAnotherPortMeetsTheEndpointItsFirstCopyMade) {
  const Id id = connect(req_between(0, 0));
  const std::vector<MadPacket> req = take_arriving_at_server(0);
  ASSERT_EQ(req.size(), 1u);
  send_to_server(req[0], 0, 0);
  cluster_.settle();
  ASSERT_EQ(server().count(EventType::req_received), 1u);
  for (std::size_t to = 1; to < kPorts; ++to) send_to_server(req[0], 0, to);
  cluster_.run_for(Cluster::kSecond / 100);

  EXPECT_EQ(server().count(EventType::req_received), 1u);
  for (std::uint8_t p = 1; p <= kPorts; ++p) {
    // Counted once, where it arrived, also when another shard handled it.
    EXPECT_EQ(server().port_counters(p).of(CmMessageKind::req).received, 1u) << "port " << int{p};
    if (p > 1) {
      EXPECT_EQ(server().port_counters(p).dropped(DropReason::wrong_port), 1u) << "port " << int{p};
    }
  }
  EXPECT_EQ(rejs_sent(), 0u);
  EXPECT_EQ(client().count(EventType::rej_received), 0u);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
}

// Both copies at once, before the server handled either: one endpoint, one event.
TEST_F(CrossPort, TwoCopiesOfAReqAtTwoPortsMakeOneEndpoint) {
  const Id id = connect(req_between(0, 0));
  const std::vector<MadPacket> req = take_arriving_at_server(0);
  ASSERT_EQ(req.size(), 1u);
  send_to_server(req[0], 0, 3);
  send_to_server(req[0], 0, 0);
  cluster_.run_for(Cluster::kSecond / 100);

  EXPECT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(rejs_sent(), 0u);
  EXPECT_EQ(state_of(client(), id), "established");
}

// A REQ from the QP of an established connection, arriving at another port: rejected as stale.
// The old connection stays, as it does at one shard: only its peer's address may tear it down
// (Protocol::on_stale), and the REQ came in at another port than the connection's.
TEST_F(CrossPort, AReqFromAConnectedQpAtAnotherPortIsRejectedAsStale) {
  const Id first = connect(req_between(0, 0));
  cluster_.run_for(Cluster::kSecond / 100);
  const Id first_server = server_id_;
  ASSERT_EQ(state_of(server(), first_server), "established");

  const Id again = connect(req_between(2, 2));
  cluster_.run_for(Cluster::kSecond / 100);

  EXPECT_EQ(server().count(EventType::req_received), 1u);
  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  const RecordedEvent rej = client().of(EventType::rej_received).at(0);
  EXPECT_EQ(rej.id, again);
  EXPECT_EQ(std::get<RejReceived>(rej.params).reason, kStaleConn);
  EXPECT_EQ(server().port_counters(3).dropped(DropReason::wrong_port), 1u);
  EXPECT_EQ(client().count(EventType::dreq_received), 0u);
  EXPECT_EQ(state_of(client(), first), "established");
  EXPECT_EQ(state_of(server(), first_server), "established");
}

}  // namespace
}  // namespace fastcm::test
