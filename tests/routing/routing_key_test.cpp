// The routing key of every CM attribute is read from the field the IBTA tables name (the shard
// router depends on it: a wrong field sends MADs to a shard that does not own their endpoint).
#include <gtest/gtest.h>

#include "engine/mad/codec.h"
#include "engine/routing_key.h"

namespace fastcm::engine {
namespace {

using Kind = RoutingKey::Kind;
constexpr std::uint32_t kOurs = 0x8123'4567;    // the receiver's comm ID, as the sender names it
constexpr std::uint32_t kTheirs = 0x0BAD'F00D;  // the sender's own comm ID: never a routing key

template <mad::CmMessage M>
RoutingKey key_of(const M& msg, const MadAddress& from = {}, mad::Method method = mad::Method::send) {
  MadPacket packet;
  const auto hdr = mad::cm_header(method, mad::WireLayout<M>::kAttr, 7);
  EXPECT_TRUE(mad::encode(hdr, msg, mad::MadSpan(packet.mad)).ok());
  return routing_key(mad::ConstMadSpan(packet.mad), from);
}

template <mad::CmMessage M>
void expect_routed_by_remote_comm_id() {
  M msg;
  msg.local_comm_id = kTheirs;
  msg.remote_comm_id = kOurs;
  const RoutingKey key = key_of(msg);
  EXPECT_EQ(key.kind, Kind::local_comm_id);
  EXPECT_EQ(key.comm_id, kOurs);
}

TEST(RoutingKey, MessagesNamingOurEndpointAreRoutedByTheirRemoteCommId) {
  expect_routed_by_remote_comm_id<mad::Mra>();
  expect_routed_by_remote_comm_id<mad::Rej>();
  expect_routed_by_remote_comm_id<mad::Rep>();
  expect_routed_by_remote_comm_id<mad::Rtu>();
  expect_routed_by_remote_comm_id<mad::Dreq>();
  expect_routed_by_remote_comm_id<mad::Drep>();
  expect_routed_by_remote_comm_id<mad::Lap>();
  expect_routed_by_remote_comm_id<mad::Apr>();
}

TEST(RoutingKey, SidrRepIsRoutedByItsRequestId) {
  mad::SidrRep rep;
  rep.request_id = kOurs;
  rep.qpn = 0x123456;
  const RoutingKey key = key_of(rep);
  EXPECT_EQ(key.kind, Kind::local_comm_id);
  EXPECT_EQ(key.comm_id, kOurs);
}

TEST(RoutingKey, ReqIsRoutedByTheSendersCaGuidAndQpn) {
  mad::Req req;
  req.local_comm_id = kTheirs;
  req.local_ca_guid = 0x0002'C903'0011'2233;
  req.local_qpn = 0xABCDEF;
  req.service_id = 0x1234;
  const RoutingKey key = key_of(req);
  EXPECT_EQ(key.kind, Kind::remote_qp);
  EXPECT_EQ(key.origin, req.local_ca_guid);
  EXPECT_EQ(key.id, req.local_qpn);
}

TEST(RoutingKey, SidrReqIsRoutedByItsSenderAndRequestId) {
  mad::SidrReq req;
  req.request_id = 0x5151'5151;
  MadAddress by_lid;
  by_lid.remote_lid = 0x21;
  RoutingKey key = key_of(req, by_lid);
  EXPECT_EQ(key.kind, Kind::sidr_request);
  EXPECT_EQ(key.id, req.request_id);
  EXPECT_EQ(key.origin, 0x21u);

  MadAddress by_gid = by_lid;
  by_gid.grh.present = true;
  by_gid.grh.remote_gid.raw = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  key = key_of(req, by_gid);
  EXPECT_EQ(key.origin, by_gid.grh.remote_gid.interface_id());
}

TEST(RoutingKey, RejTimeoutWithoutOurIdGoesToWhicheverShardHoldsTheReq) {
  mad::Rej rej;
  rej.local_comm_id = kTheirs;
  rej.remote_comm_id = 0;
  rej.reason = mad::RejReason::timeout;
  EXPECT_EQ(key_of(rej).kind, Kind::any_shard);
  // Any other reason without our ID names nothing a shard could match: routed as ID 0.
  rej.reason = mad::RejReason::consumer_reject;
  const RoutingKey key = key_of(rej);
  EXPECT_EQ(key.kind, Kind::local_comm_id);
  EXPECT_EQ(key.comm_id, 0u);
}

TEST(RoutingKey, ClassPortInfoAndUnknownAttributesAreUnrouted) {
  EXPECT_EQ(key_of(mad::ClassPortInfo{}, {}, mad::Method::get).kind, Kind::unrouted);
  MadPacket garbage;
  garbage.mad.fill(0xFF);
  EXPECT_EQ(routing_key(mad::ConstMadSpan(garbage.mad), {}).kind, Kind::unrouted);
}

// The router reads the attribute alone; the owning shard validates the rest of the header.
TEST(RoutingKey, AKnownAttributeIsRoutedEvenWhenTheRestOfItsHeaderIsBad) {
  mad::Rtu rtu;
  rtu.remote_comm_id = kOurs;
  MadPacket packet;
  ASSERT_TRUE(mad::encode(mad::cm_header(mad::Method::send, mad::AttrId::rtu, 7), rtu,
                          mad::MadSpan(packet.mad))
                  .ok());
  packet.mad[2] = 0x7F;  // class version
  mad::MadHeader hdr;
  ASSERT_FALSE(mad::decode_header(packet.mad, hdr).ok());
  const RoutingKey key = routing_key(mad::ConstMadSpan(packet.mad), {});
  EXPECT_EQ(key.kind, Kind::local_comm_id);
  EXPECT_EQ(key.comm_id, kOurs);
}

}  // namespace
}  // namespace fastcm::engine
