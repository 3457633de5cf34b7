// Service ID resolution (IBTA Vol. 1 12.11): SIDR_REQ and SIDR_REP, retries, duplicates, errors.
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

constexpr std::uint16_t kSidrReqAttr = 0x0017;
constexpr std::uint16_t kSidrRepAttr = 0x0018;
constexpr Qpn kUdQpn = 0x00ABCD;
constexpr QKey kUdQKey = 0x1234'5678;

// The server listens on kServiceId (ConnectScenario) and answers every SIDR_REQ with `answer_`
// unless it is empty; the client resolves from an idle endpoint.
class Sidr : public ConnectScenario {
 protected:
  void SetUp() override {
    ConnectScenario::SetUp();
    answer_.qpn = kUdQpn;
    answer_.qkey = kUdQKey;
    answer_.ece_vendor_id = 0x00C0FE;
    answer_.info = info_;
    answer_.private_data = rep_private_data_;
    server().react = [this](const Event& e) {
      if (e.type == EventType::sidr_req_received) {
        server_id_ = e.id;
        if (answering_) {
          EXPECT_EQ(server().engine().send_sidr_rep(e.id, answer_), Status::ok);
        }
      }
    };
    ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, client_id_), Status::ok);
  }

  [[nodiscard]] SidrReqParams sidr_params(std::uint64_t service_id = kServiceId) const {
    SidrReqParams p;
    p.service_id = service_id;
    p.path = cluster_.path_to_server();
    p.timeout = 16;  // 268 ms
    p.max_retries = 2;
    p.private_data = req_private_data_;
    return p;
  }
  void drop_all(std::uint16_t attr) {
    cluster_.fabric().set_fault(loopback::FaultRule{.attr_id = attr, .loss_pct = 100});
  }

  SidrRepParams answer_;
  bool answering_ = true;
  std::array<std::uint8_t, 4> info_{0x11, 0x22, 0x33, 0x44};
  std::array<std::uint8_t, 2> rep_private_data_{0x5D, 0x12};
  std::array<std::uint8_t, 3> req_private_data_{0xAA, 0xBB, 0xCC};
};

TEST_F(Sidr, ResolvesTheServiceToAQpnAndQKey) {
  FASTCM_LOOPBACK_ONLY("it checks an InfiniBand address (a LID, no GRH); over RoCE every MAD carries a GRH");
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::ok);
  EXPECT_EQ(state_of(client(), client_id_), "sidr_req_sent");
  cluster_.run_for(Cluster::kSecond / 10);

  ASSERT_EQ(server().count(EventType::sidr_req_received), 1u);
  const RecordedEvent req = server().of(EventType::sidr_req_received)[0];
  const auto seen = std::get<SidrReqReceived>(req.params);
  EXPECT_EQ(seen.listen_id, listen_id_);
  EXPECT_EQ(seen.service_id, kServiceId);
  EXPECT_EQ(seen.pkey, 0xFFFF);
  EXPECT_EQ(seen.port, cluster_.server_port().port_num);
  EXPECT_EQ(seen.remote_lid, cluster_.client_port().lid);
  EXPECT_FALSE(seen.remote_gid.has_value());  // subnet-local InfiniBand: no GRH
  ASSERT_EQ(req.private_data.size(), kMaxSidrReqPrivateData);
  EXPECT_TRUE(std::equal(req_private_data_.begin(), req_private_data_.end(), req.private_data.begin()));

  ASSERT_EQ(client().count(EventType::sidr_rep_received), 1u);
  const RecordedEvent rep = client().of(EventType::sidr_rep_received)[0];
  EXPECT_EQ(rep.id, client_id_);
  const auto got = std::get<SidrRepReceived>(rep.params);
  EXPECT_EQ(got.status, 0);
  EXPECT_EQ(got.qpn, kUdQpn);
  EXPECT_EQ(got.qkey, kUdQKey);
  EXPECT_EQ(got.ece_vendor_id, 0x00C0FEu);
  EXPECT_EQ(rep.info, std::vector<std::uint8_t>(info_.begin(), info_.end()));
  ASSERT_EQ(rep.private_data.size(), kMaxSidrRepPrivateData);
  EXPECT_TRUE(std::equal(rep_private_data_.begin(), rep_private_data_.end(), rep.private_data.begin()));

  // The active endpoint is idle again and may resolve once more; the passive one is gone.
  EXPECT_EQ(state_of(client(), client_id_), "idle");
  EXPECT_EQ(state_of(server(), server_id_), "stale");
  EXPECT_EQ(server().engine().destroy(server_id_), Status::stale_id);
  EXPECT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);
  EXPECT_EQ(client().count(EventType::sidr_rep_received), 2u);
}

TEST_F(Sidr, UnknownServiceIsAnsweredServiceIdUnsupported) {
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params(kServiceId + 1)), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);

  EXPECT_EQ(server().count(EventType::sidr_req_received), 0u);
  ASSERT_EQ(client().count(EventType::sidr_rep_received), 1u);
  EXPECT_EQ(std::get<SidrRepReceived>(client().of(EventType::sidr_rep_received)[0].params).status, 1);
  EXPECT_EQ(state_of(client(), client_id_), "idle");
}

TEST_F(Sidr, RetransmissionsWhileTheApplicationHoldsTheRequestAreDropped) {
  answering_ = false;
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 2);  // the client retries after 268 ms

  EXPECT_EQ(server().count(EventType::sidr_req_received), 1u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::sidr_req).retried, 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::sidr_req).duplicate, 1u);
  EXPECT_EQ(server().port_counters().dropped(DropReason::duplicate), 1u);

  ASSERT_EQ(server().engine().send_sidr_rep(server_id_, answer_), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);
  EXPECT_EQ(client().count(EventType::sidr_rep_received), 1u);
  EXPECT_EQ(client().count(EventType::sidr_req_error), 0u);
}

TEST_F(Sidr, DuplicatedRequestReachesTheApplicationOnce) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost or duplicated MADs)");
  cluster_.fabric().set_fault(loopback::FaultRule{.attr_id = kSidrReqAttr, .dup_pct = 100});
  answering_ = false;
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 100);
  EXPECT_EQ(server().count(EventType::sidr_req_received), 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::sidr_req).duplicate, 1u);
}

TEST_F(Sidr, UnansweredRequestRetriesThenReportsSidrReqError) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost or duplicated MADs)");
  drop_all(kSidrReqAttr);
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::ok);
  cluster_.run_for(5 * Cluster::kSecond);

  EXPECT_EQ(client().count(EventType::sidr_req_error), 1u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::sidr_req).retried, 2u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::sidr_req).sent, 1u);
  EXPECT_EQ(state_of(client(), client_id_), "idle");
}

TEST_F(Sidr, LostReplyMakesTheRetransmissionANewRequest) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost or duplicated MADs)");
  // The answer ends the passive endpoint, so a retransmission after it starts over (the kernel CM
  // behaves alike): the application sees the request again and answers again.
  drop_all(kSidrRepAttr);
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);
  ASSERT_EQ(server().count(EventType::sidr_req_received), 1u);
  cluster_.fabric().clear_faults();
  cluster_.run_for(Cluster::kSecond);

  EXPECT_EQ(server().count(EventType::sidr_req_received), 2u);
  ASSERT_EQ(client().count(EventType::sidr_rep_received), 1u);
  EXPECT_EQ(client().count(EventType::sidr_req_error), 0u);
}

TEST_F(Sidr, FullBacklogUnderTheRejectPolicyAnswersRejected) {
  constexpr std::uint64_t kNarrow = kServiceId + 0x100;
  ListenParams lp;
  lp.service_id = kNarrow;
  lp.backlog = 1;
  lp.backlog_policy = BacklogPolicy::reject;
  lp.delivery = server().delivery();
  Id narrow;
  ASSERT_EQ(server().engine().listen(lp, narrow), Status::ok);
  answering_ = false;
  Id second;
  ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, second), Status::ok);
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params(kNarrow)), Status::ok);
  cluster_.settle();  // the first is handled first: shards need not take requests in arrival order
  ASSERT_EQ(client().engine().send_sidr_req(second, sidr_params(kNarrow)), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);

  EXPECT_EQ(server().count(EventType::sidr_req_received), 1u);
  EXPECT_EQ(server().port_counters().dropped(DropReason::backlog_full), 1u);
  ASSERT_EQ(client().count(EventType::sidr_rep_received), 1u);
  const RecordedEvent rep = client().of(EventType::sidr_rep_received)[0];
  EXPECT_EQ(rep.id, second);
  EXPECT_EQ(std::get<SidrRepReceived>(rep.params).status, 2);

  // Answering frees the backlog: the next request reaches the application.
  ASSERT_EQ(server().engine().send_sidr_rep(server_id_, answer_), Status::ok);
  ASSERT_EQ(client().engine().send_sidr_req(second, sidr_params(kNarrow)), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);
  EXPECT_EQ(server().count(EventType::sidr_req_received), 2u);
}

TEST_F(Sidr, CommandsCheckStateAndArguments) {
  SidrReqParams p = sidr_params();
  std::array<std::uint8_t, kMaxSidrReqPrivateData + 1> too_long{};
  p.private_data = too_long;
  EXPECT_EQ(client().engine().send_sidr_req(client_id_, p), Status::invalid_argument);
  p = sidr_params();
  p.path.port = 9;  // no such port
  EXPECT_EQ(client().engine().send_sidr_req(client_id_, p), Status::invalid_argument);
  p = sidr_params();
  p.path.pkey = 0x1234;  // not in the port's P_Key table
  EXPECT_EQ(client().engine().send_sidr_req(client_id_, p), Status::invalid_argument);
  p = sidr_params();
  p.max_retries = 16;
  EXPECT_EQ(client().engine().send_sidr_req(client_id_, p), Status::invalid_argument);
  EXPECT_EQ(client().engine().send_sidr_rep(client_id_, answer_), Status::invalid_state);

  answering_ = false;
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::ok);
  EXPECT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::invalid_state);
  EXPECT_EQ(client().engine().send_req(client_id_, req_params()), Status::invalid_state);
  cluster_.run_for(Cluster::kSecond / 100);
  ASSERT_EQ(server().count(EventType::sidr_req_received), 1u);

  SidrRepParams bad = answer_;
  bad.status = 6;
  EXPECT_EQ(server().engine().send_sidr_rep(server_id_, bad), Status::invalid_argument);
  bad = answer_;
  bad.qpn = 1u << 24;
  EXPECT_EQ(server().engine().send_sidr_rep(server_id_, bad), Status::invalid_argument);
  std::array<std::uint8_t, kMaxAdditionalInfo + 1> long_info{};
  bad = answer_;
  bad.info = long_info;
  EXPECT_EQ(server().engine().send_sidr_rep(server_id_, bad), Status::invalid_argument);
  EXPECT_EQ(server().engine().send_sidr_rep(server_id_, answer_), Status::ok);
  EXPECT_EQ(server().engine().send_sidr_rep(server_id_, answer_), Status::stale_id);
}

TEST_F(Sidr, DestroyWhileResolvingEndsQuietly) {
  ASSERT_EQ(client().engine().send_sidr_req(client_id_, sidr_params()), Status::ok);
  ASSERT_EQ(client().engine().destroy(client_id_), Status::ok);
  cluster_.run_for(5 * Cluster::kSecond);
  EXPECT_EQ(client().count(EventType::sidr_rep_received), 0u);
  EXPECT_EQ(client().count(EventType::sidr_req_error), 0u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::sidr_req).retried, 0u);
  // The answer names a request ID that no longer exists.
  EXPECT_EQ(client().port_counters().dropped(DropReason::unknown_comm_id), 1u);
  EXPECT_EQ(state_of(client(), client_id_), "stale");
}

}  // namespace
}  // namespace fastcm::test
