// Connection establishment: REQ, REP, RTU, and what each side ends up with.
#include <algorithm>
#include <cstdint>
#include <span>

#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

using Connect = ConnectScenario;

TEST_F(Connect, HandshakeEstablishesBothSides) {
  const Id id = connect();
  cluster_.run_for(Cluster::kSecond);

  ASSERT_EQ(server().count(EventType::req_received), 1u);
  ASSERT_EQ(client().count(EventType::rep_received), 1u);
  ASSERT_EQ(server().count(EventType::rtu_received), 1u);
  EXPECT_EQ(state_of(client(), id), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");

  const auto req = std::get<ReqReceived>(server().of(EventType::req_received)[0].params);
  EXPECT_EQ(req.listen_id, listen_id_);
  EXPECT_EQ(req.service_id, kServiceId);
  EXPECT_EQ(req.remote_qpn, kClientQpn);
  EXPECT_EQ(req.starting_psn, 0x1111u);
  EXPECT_EQ(req.remote_ca_guid, cluster_.client_port().node_guid);
  EXPECT_EQ(req.primary.local_lid, cluster_.server_port().lid);
  EXPECT_EQ(req.primary.remote_lid, cluster_.client_port().lid);

  const auto rep = std::get<RepReceived>(client().of(EventType::rep_received)[0].params);
  EXPECT_EQ(rep.remote_qpn, kServerQpn);
  EXPECT_EQ(rep.starting_psn, 0x2222u);
  EXPECT_EQ(rep.remote_ca_guid, cluster_.server_port().node_guid);
}

TEST_F(Connect, PrivateDataTravelsAndStaysReadable) {
  const Id id = connect();
  cluster_.run_for(Cluster::kSecond);

  const auto req_event = server().of(EventType::req_received).at(0);
  ASSERT_EQ(req_event.private_data.size(), fastcm::kMaxReqPrivateData);
  EXPECT_TRUE(std::equal(client_private_data_.begin(), client_private_data_.end(), req_event.private_data.begin()));
  const auto rep_event = client().of(EventType::rep_received).at(0);
  ASSERT_EQ(rep_event.private_data.size(), fastcm::kMaxRepPrivateData);
  EXPECT_TRUE(std::equal(server_private_data_.begin(), server_private_data_.end(), rep_event.private_data.begin()));

  std::span<const std::uint8_t> last;
  ASSERT_EQ(client().engine().last_private_data(id, last), Status::ok);
  ASSERT_EQ(last.size(), fastcm::kMaxRepPrivateData);
  EXPECT_TRUE(std::equal(server_private_data_.begin(), server_private_data_.end(), last.begin()));
}

TEST_F(Connect, EstablishedEndpointsKeepOnlyMadsWithPrivateData) {
  const Id id = connect();
  cluster_.run_for(Cluster::kSecond);
  ASSERT_EQ(state_of(server(), server_id_), "established");

  // The client keeps the REP: its private data is readable. The server keeps neither its REP
  // (never sent again once established) nor the RTU, whose private data was all zeros.
  EXPECT_EQ(client().engine().mad_buffers_in_use(), 1u);
  EXPECT_EQ(server().engine().mad_buffers_in_use(), 0u);
  std::span<const std::uint8_t> last;
  ASSERT_EQ(server().engine().last_private_data(server_id_, last), Status::ok);
  EXPECT_EQ(last.size(), fastcm::kMaxRtuPrivateData);
  EXPECT_TRUE(std::all_of(last.begin(), last.end(), [](std::uint8_t b) { return b == 0; }));
  ASSERT_EQ(client().engine().last_private_data(id, last), Status::ok);
  EXPECT_EQ(last.size(), fastcm::kMaxRepPrivateData);
}

TEST_F(Connect, ZeroPrivateDataLeavesNoMadsHeld) {
  server_private_data_ = {};
  const Id id = connect();
  cluster_.run_for(Cluster::kSecond);
  ASSERT_EQ(state_of(client(), id), "established");

  EXPECT_EQ(client().engine().mad_buffers_in_use(), 0u);
  EXPECT_EQ(server().engine().mad_buffers_in_use(), 0u);
  // The REP's private data reads back as what it was: as long as a REP's, all zeros.
  std::span<const std::uint8_t> last;
  ASSERT_EQ(client().engine().last_private_data(id, last), Status::ok);
  EXPECT_EQ(last.size(), fastcm::kMaxRepPrivateData);
  EXPECT_TRUE(std::all_of(last.begin(), last.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST_F(Connect, NegotiatedParametersAreCrosswise) {
  const Id id = connect();
  cluster_.run_for(Cluster::kSecond);

  ConnectionInfo active;
  ASSERT_EQ(client().engine().connection_info(id, active), Status::ok);
  EXPECT_TRUE(active.active);
  EXPECT_EQ(active.remote_qpn, kServerQpn);
  // A Starting PSN is its sender's receive PSN (the kernel CM reads it the same way).
  EXPECT_EQ(active.remote_psn, 0x1111u);
  EXPECT_EQ(active.local_psn, 0x2222u);
  EXPECT_EQ(active.initiator_depth, 4);      // the server's responder resources
  EXPECT_EQ(active.responder_resources, 4);  // the server's initiator depth

  ConnectionInfo passive;
  ASSERT_EQ(server().engine().connection_info(server_id_, passive), Status::ok);
  EXPECT_FALSE(passive.active);
  EXPECT_EQ(passive.remote_qpn, kClientQpn);
  EXPECT_EQ(passive.remote_comm_id, active.local_comm_id);
  EXPECT_EQ(active.remote_comm_id, passive.local_comm_id);
}

TEST_F(Connect, NoListenIsRejectedAsInvalidServiceId) {
  ReqParams p = req_params();
  p.service_id = kServiceId + 1;
  const Id id = connect(p);
  cluster_.run_for(Cluster::kSecond);

  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  const auto rej = std::get<RejReceived>(client().of(EventType::rej_received)[0].params);
  EXPECT_EQ(rej.reason, 8);  // invalid service ID
  EXPECT_EQ(rej.message_rejected, 0);  // the REQ
  EXPECT_EQ(server().count(EventType::req_received), 0u);
  EXPECT_EQ(state_of(client(), id), "idle");
}

TEST_F(Connect, ConsumerRejectReachesTheClient) {
  accept_ = false;
  const Id id = connect();
  cluster_.run_for(Cluster::kSecond / 100);
  ASSERT_EQ(server().count(EventType::req_received), 1u);
  const std::array<std::uint8_t, 2> why{0xAB, 0xCD};
  RejParams rej;
  rej.private_data = why;
  ASSERT_EQ(server().engine().send_rej(server_id_, rej), Status::ok);
  cluster_.run_for(Cluster::kSecond);

  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  const auto ev = client().of(EventType::rej_received)[0];
  EXPECT_EQ(std::get<RejReceived>(ev.params).reason, 28);
  EXPECT_EQ(ev.private_data[0], 0xAB);
  EXPECT_EQ(state_of(client(), id), "idle");
}

TEST_F(Connect, StaleHandleGivesAnErrorNeverReusedMemory) {
  Id id;
  ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, id), Status::ok);
  ASSERT_EQ(client().engine().destroy(id), Status::ok);
  EXPECT_EQ(client().engine().send_req(id, req_params()), Status::stale_id);
  EXPECT_EQ(client().engine().destroy(id), Status::stale_id);
  Id reused;
  ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, reused), Status::ok);
  EXPECT_NE(reused, id);
  EXPECT_EQ(client().engine().send_dreq(id, {}), Status::stale_id);
}

}  // namespace
}  // namespace fastcm::test
