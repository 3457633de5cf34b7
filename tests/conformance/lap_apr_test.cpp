// Alternate path loading (IBTA Vol. 1 12.8): LAP, APR, their retries, duplicates and errors.
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

constexpr std::uint16_t kLapAttr = 0x0019;
constexpr std::uint16_t kAprAttr = 0x001A;

// An established connection, the client about to load an alternate path. The server answers a
// LAP as `server_answer` says (nothing when empty).
class LapApr : public ConnectScenario {
 protected:
  void SetUp() override {
    ConnectScenario::SetUp();
    connect();
    cluster_.run_for(Cluster::kSecond);
    ASSERT_EQ(state_of(client(), client_id_), "established");
    ASSERT_EQ(state_of(server(), server_id_), "established");
    server().react = [this](const Event& e) {
      if (e.type == EventType::lap_received && server_answer_) {
        EXPECT_EQ(server().engine().send_apr(e.id, *server_answer_), Status::ok);
      }
    };
  }

  // The alternate: the same ports on another SL and traffic class, so it differs from the primary.
  [[nodiscard]] Path alternate() const {
    Path p = cluster_.path_to_server();
    p.sl = 3;
    p.traffic_class = 0x20;
    p.packet_life_time = 12;
    return p;
  }
  [[nodiscard]] LapParams lap_params() const {
    LapParams p;
    p.alternate = alternate();
    p.remote_cm_response_timeout = 16;  // 268 ms: the client retries after ~0.4 s
    p.private_data = lap_private_data_;
    return p;
  }
  [[nodiscard]] std::optional<Path> alternate_of(Peer& peer, Id id) {
    ConnectionInfo info;
    EXPECT_EQ(peer.engine().connection_info(id, info), Status::ok);
    return info.alternate;
  }
  void drop_all(std::uint16_t attr, std::uint16_t from_hca) {
    cluster_.fabric().set_fault(loopback::FaultRule{
        .from = loopback::PortRef{from_hca, 0}, .attr_id = attr, .loss_pct = 100});
  }

  std::optional<AprParams> server_answer_ = AprParams{};
  std::array<std::uint8_t, 3> lap_private_data_{0x1A, 0xB0, 0x01};
};

TEST_F(LapApr, AcceptedPathBecomesTheAlternateOnBothSides) {
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);

  ASSERT_EQ(server().count(EventType::lap_received), 1u);
  const RecordedEvent lap = server().of(EventType::lap_received)[0];
  EXPECT_EQ(lap.id, server_id_);
  ASSERT_EQ(lap.private_data.size(), kMaxLapPrivateData);
  EXPECT_TRUE(std::equal(lap_private_data_.begin(), lap_private_data_.end(), lap.private_data.begin()));
  const Path seen = std::get<LapReceived>(lap.params).alternate;
  EXPECT_EQ(seen.local_lid, cluster_.server_port().lid);  // turned around: local is the server
  EXPECT_EQ(seen.remote_lid, cluster_.client_port().lid);
  EXPECT_EQ(seen.local_gid, cluster_.server_port().gid_table[0]);
  EXPECT_EQ(seen.remote_gid, cluster_.client_port().gid_table[0]);
  EXPECT_EQ(seen.sl, 3);
  EXPECT_EQ(seen.traffic_class, 0x20);
  EXPECT_EQ(seen.port, cluster_.server_port().port_num);

  ASSERT_EQ(client().count(EventType::apr_received), 1u);
  const auto apr = std::get<AprReceived>(client().of(EventType::apr_received)[0].params);
  EXPECT_EQ(apr.status, 0);
  EXPECT_EQ(alternate_of(client(), client_id_), alternate());
  EXPECT_EQ(alternate_of(server(), server_id_), seen);
  EXPECT_EQ(state_of(client(), client_id_), "established");

  QpAttr rtr;
  ASSERT_EQ(client().engine().init_qp_attr(client_id_, QpState::rtr, rtr), Status::ok);
  EXPECT_NE(rtr.mask & qp_mask::alt_path, 0u);
  EXPECT_EQ(rtr.alt_ah_attr.sl, 3);
}

TEST_F(LapApr, RejectedPathLeavesNoAlternateAndCarriesTheInfo) {
  const std::array<std::uint8_t, 5> info{9, 8, 7, 6, 5};
  server_answer_->status = 3;  // rejected
  server_answer_->info = info;
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);

  ASSERT_EQ(client().count(EventType::apr_received), 1u);
  const RecordedEvent apr = client().of(EventType::apr_received)[0];
  EXPECT_EQ(std::get<AprReceived>(apr.params).status, 3);
  EXPECT_EQ(apr.info, std::vector<std::uint8_t>(info.begin(), info.end()));
  EXPECT_FALSE(alternate_of(client(), client_id_).has_value());
  EXPECT_FALSE(alternate_of(server(), server_id_).has_value());
  // The exchange is over: the client may load another path.
  EXPECT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
}

TEST_F(LapApr, LostAprIsResentToTheRetransmittedLapWithoutTellingTheApplicationAgain) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost or duplicated MADs)");
  drop_all(kAprAttr, 0);
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);
  ASSERT_EQ(server().count(EventType::lap_received), 1u);
  ASSERT_EQ(client().count(EventType::apr_received), 0u);

  cluster_.fabric().clear_faults();
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(server().count(EventType::lap_received), 1u);
  ASSERT_EQ(client().count(EventType::apr_received), 1u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::lap).retried, 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::lap).duplicate, 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::apr).retried, 1u);
  EXPECT_EQ(alternate_of(client(), client_id_), alternate());
}

TEST_F(LapApr, DuplicateLapWhileTheApplicationHoldsItIsDropped) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost or duplicated MADs)");
  server_answer_.reset();
  cluster_.fabric().set_fault(loopback::FaultRule{.attr_id = kLapAttr, .dup_pct = 100});
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 100);  // before the automatic MRA

  EXPECT_EQ(server().count(EventType::lap_received), 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::lap).duplicate, 1u);
  EXPECT_EQ(server().port_counters().dropped(DropReason::duplicate), 1u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::apr).received, 0u);
}

TEST_F(LapApr, MraOfALapIsResentToItsRetransmissionAndTheAprFollows) {
  server_answer_.reset();
  server().react = [this](const Event& e) {
    if (e.type == EventType::lap_received) {
      MraParams mra;
      mra.service_timeout = 10;  // 4 ms: the client soon retries its LAP
      EXPECT_EQ(server().engine().send_mra(e.id, mra), Status::ok);
    }
  };
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 2);

  ASSERT_EQ(client().count(EventType::mra_received), 1u);
  EXPECT_EQ(std::get<MraReceived>(client().of(EventType::mra_received)[0].params).service_timeout, 10);
  EXPECT_GE(server().port_counters().of(CmMessageKind::lap).duplicate, 1u);
  EXPECT_GE(server().port_counters().of(CmMessageKind::mra).retried, 1u);
  EXPECT_EQ(server().count(EventType::lap_received), 1u);
  EXPECT_EQ(client().count(EventType::lap_error), 0u);

  ASSERT_EQ(server().engine().send_apr(server_id_, AprParams{}), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);
  EXPECT_EQ(client().count(EventType::apr_received), 1u);
  EXPECT_EQ(alternate_of(client(), client_id_), alternate());
}

TEST_F(LapApr, SlowApplicationGetsAnAutomaticMra) {
  server_answer_.reset();
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 5);  // past half of the LAP's 268 ms response timeout

  EXPECT_EQ(client().count(EventType::mra_received), 1u);
  EXPECT_EQ(server().port_counters().of(CmMessageKind::mra).sent, 1u);
  // The MRA moved the server on; the APR is still the application's to send.
  EXPECT_EQ(server().engine().send_apr(server_id_, AprParams{}), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);
  EXPECT_EQ(client().count(EventType::apr_received), 1u);
}

TEST_F(LapApr, UnansweredLapRetriesThenReportsLapErrorAndStaysConnected) {
  FASTCM_LOOPBACK_ONLY("fault injection (lost or duplicated MADs)");
  drop_all(kLapAttr, 1);
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  cluster_.run_for(10 * Cluster::kSecond);

  EXPECT_EQ(client().count(EventType::lap_error), 1u);
  EXPECT_EQ(client().port_counters().of(CmMessageKind::lap).retried, 3u);  // the REQ's max CM retries
  EXPECT_EQ(state_of(client(), client_id_), "established");
  EXPECT_FALSE(alternate_of(client(), client_id_).has_value());
  EXPECT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
}

TEST_F(LapApr, CommandsCheckStateAndArguments) {
  EXPECT_EQ(server().engine().send_apr(server_id_, AprParams{}), Status::invalid_state);  // no LAP
  LapParams p = lap_params();
  std::array<std::uint8_t, kMaxLapPrivateData + 1> too_long{};
  p.private_data = too_long;
  EXPECT_EQ(client().engine().send_lap(client_id_, p), Status::invalid_argument);
  p = lap_params();
  p.alternate.rate = 1;  // reserved rate code
  EXPECT_EQ(client().engine().send_lap(client_id_, p), Status::invalid_argument);
  p = lap_params();
  p.alternate.port = 2;  // not the connection's port
  EXPECT_EQ(client().engine().send_lap(client_id_, p), Status::not_supported);

  Id idle;
  ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, idle), Status::ok);
  EXPECT_EQ(client().engine().send_lap(idle, lap_params()), Status::invalid_state);

  server_answer_.reset();
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  EXPECT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::invalid_state);  // one at a time
  cluster_.run_for(Cluster::kSecond / 100);
  ASSERT_EQ(server().count(EventType::lap_received), 1u);
  EXPECT_EQ(server().engine().send_lap(server_id_, lap_params()), Status::invalid_state);  // answer first
  AprParams bad;
  bad.status = 14;
  EXPECT_EQ(server().engine().send_apr(server_id_, bad), Status::invalid_argument);
  std::array<std::uint8_t, kMaxAdditionalInfo + 1> long_info{};
  bad = AprParams{};
  bad.info = long_info;
  EXPECT_EQ(server().engine().send_apr(server_id_, bad), Status::invalid_argument);
  EXPECT_EQ(server().engine().send_apr(server_id_, AprParams{}), Status::ok);
  EXPECT_EQ(server().engine().send_apr(server_id_, AprParams{}), Status::invalid_state);  // answered

  ASSERT_EQ(client().engine().destroy(idle), Status::ok);
  EXPECT_EQ(client().engine().send_lap(idle, lap_params()), Status::stale_id);
  EXPECT_EQ(client().engine().send_apr(idle, AprParams{}), Status::stale_id);
}

TEST_F(LapApr, EitherSideMayLoadAPath) {
  client().react = [this](const Event& e) {
    if (e.type == EventType::lap_received) {
      EXPECT_EQ(client().engine().send_apr(e.id, AprParams{}), Status::ok);
    }
  };
  LapParams p = lap_params();
  p.alternate = Cluster::make_path(cluster_.server_port(), cluster_.client_port());
  p.alternate.sl = 5;
  ASSERT_EQ(server().engine().send_lap(server_id_, p), Status::ok);
  cluster_.run_for(Cluster::kSecond / 10);

  ASSERT_EQ(client().count(EventType::lap_received), 1u);
  ASSERT_EQ(server().count(EventType::apr_received), 1u);
  EXPECT_EQ(alternate_of(server(), server_id_), p.alternate);
  const std::optional<Path> client_alt = alternate_of(client(), client_id_);
  ASSERT_TRUE(client_alt.has_value());
  EXPECT_EQ(client_alt->sl, 5);
  EXPECT_EQ(client_alt->local_lid, cluster_.client_port().lid);
}

TEST_F(LapApr, DisconnectEndsAPendingLap) {
  server_answer_.reset();
  ASSERT_EQ(client().engine().send_lap(client_id_, lap_params()), Status::ok);
  cluster_.run_for(Cluster::kSecond / 100);
  ASSERT_EQ(server().count(EventType::lap_received), 1u);
  ASSERT_EQ(client().engine().send_dreq(client_id_, {}), Status::ok);
  cluster_.run_for(Cluster::kSecond / 100);
  ASSERT_EQ(server().count(EventType::dreq_received), 1u);
  EXPECT_EQ(server().engine().send_apr(server_id_, AprParams{}), Status::invalid_state);
  EXPECT_EQ(client().count(EventType::lap_error), 0u);
}

}  // namespace
}  // namespace fastcm::test
