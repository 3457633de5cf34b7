// What send_rep puts in the REP beyond the application's values: RDMA read/atomic resources
// bounded by the REQ's offer and the CA's limits, and the defaults a Linux peer expects.
#include <cstdint>

#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

class RepParamsScenario : public ConnectScenario {
 protected:
  void SetUp() override {
    ConnectScenario::SetUp();
    server().react = [this](const Event& e) {
      if (e.type == EventType::req_received) {
        server_id_ = e.id;
        EXPECT_EQ(server().engine().send_rep(e.id, rep_), Status::ok);
      }
    };
  }
  // The REP the client received.
  [[nodiscard]] RepReceived received_rep() {
    const auto reps = client().of(EventType::rep_received);
    EXPECT_EQ(reps.size(), 1u);
    return reps.empty() ? RepReceived{} : std::get<RepReceived>(reps[0].params);
  }
  [[nodiscard]] QpAttr server_qp(QpState state) {
    QpAttr attr;
    EXPECT_EQ(server().engine().init_qp_attr(server_id_, state, attr), Status::ok);
    return attr;
  }

  RepParams rep_ = [] {
    RepParams p;
    p.qpn = kServerQpn;
    p.starting_psn = 0x2222;
    return p;
  }();
};

TEST_F(RepParamsScenario, ResourcesAboveTheReqOfferAreClampedToIt) {
  rep_.responder_resources = 16;
  rep_.initiator_depth = 16;
  ReqParams req = req_params();
  req.responder_resources = 1;  // the client serves one read at a time...
  req.initiator_depth = 2;      // ...and issues at most two
  connect(req);
  cluster_.run_for(Cluster::kSecond);

  const RepReceived rep = received_rep();
  EXPECT_EQ(rep.responder_resources, 2u);
  EXPECT_EQ(rep.initiator_depth, 1u);
  EXPECT_EQ(server_qp(QpState::rtr).max_dest_rd_atomic, 2u);
  EXPECT_EQ(server_qp(QpState::rts).max_rd_atomic, 1u);
}

TEST_F(RepParamsScenario, ResourcesAboveTheCaLimitsAreClampedToThem) {
  // Both sides ask for as many as the fields hold: only the server's CA limits can bound the REP
  // (the loopback CA holds 16, the udp fabric's, like rxe, 128).
  rep_.responder_resources = 255;
  rep_.initiator_depth = 255;
  ReqParams req = req_params();
  req.responder_resources = 255;
  req.initiator_depth = 255;
  const CaLimits& ca = cluster_.server_port().ca;
  ASSERT_LT(ca.max_qp_rd_atom, 255);
  ASSERT_LT(ca.max_qp_init_rd_atom, 255);
  connect(req);
  cluster_.run_for(Cluster::kSecond);

  const RepReceived rep = received_rep();
  EXPECT_EQ(rep.responder_resources, ca.max_qp_rd_atom);
  EXPECT_EQ(rep.initiator_depth, ca.max_qp_init_rd_atom);
}

TEST_F(RepParamsScenario, DefaultsSendTheCaAckDelayAndNoEndToEndFlowControl) {
  connect();
  cluster_.run_for(Cluster::kSecond);

  const RepReceived rep = received_rep();
  ASSERT_NE(cluster_.server_port().ca.local_ca_ack_delay, 0u);
  EXPECT_EQ(rep.target_ack_delay, cluster_.server_port().ca.local_ca_ack_delay);
  EXPECT_FALSE(rep.flow_control);
  EXPECT_FALSE(std::get<ReqReceived>(server().of(EventType::req_received).at(0).params).flow_control);
}

TEST_F(RepParamsScenario, AnExplicitTargetAckDelayIsSentAsGiven) {
  rep_.target_ack_delay = 3;
  connect();
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(received_rep().target_ack_delay, 3u);
}

}  // namespace
}  // namespace fastcm::test
