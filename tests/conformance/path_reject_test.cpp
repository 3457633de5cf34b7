// REQs whose paths the receiving port cannot carry are rejected with the reason and ARI of IBTA
// Table 109, end to end: a raw peer on HCA 1 sends the REQ, the engine on HCA 0 answers it.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "engine/mad/codec.h"
#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"
#include "tests/conformance/harness.h"

namespace fastcm::test {
namespace {

constexpr std::uint64_t kService = 0x77;

void ignore_event(const Event&, void*) {}

class PathReject : public ::testing::Test {
 protected:
  void SetUp() override { FASTCM_LOOPBACK_ONLY("REQs sent by LID from a tool HCA of its own loopback fabric, LID ranges"); }
  PathReject()
      : fabric_(loopback::LoopbackConfig::two_hcas(1), clock_),
        engine_(make_engine(fabric_.hca(0), clock_, EngineConfig{.max_endpoints = 16, .mad_buffers = 64})) {
    ListenParams lp;
    lp.service_id = kService;
    lp.delivery.handler = &ignore_event;
    Id listen;
    EXPECT_EQ(engine_->listen(lp, listen), Status::ok);
  }

  [[nodiscard]] const PortAttr& server() { return fabric_.hca(0).ports()[0]; }
  [[nodiscard]] const PortAttr& peer() { return fabric_.hca(1).ports()[0]; }

  // A REQ from the peer that the server's port can carry.
  [[nodiscard]] mad::Req good_req() {
    mad::Req req;
    req.local_comm_id = 0xC0FFEE;
    req.service_id = kService;
    req.local_ca_guid = peer().node_guid;
    req.local_qpn = 0x4242;
    req.partition_key = 0xFFFF;
    req.path_packet_payload_mtu = mad::MtuCode::mtu_1024;
    req.max_cm_retries = 3;
    req.primary.local_port_lid = peer().lid;
    req.primary.remote_port_lid = server().lid;
    req.primary.local_port_gid = peer().gid_table[0];
    req.primary.remote_port_gid = server().gid_table[0];
    req.primary.subnet_local = true;
    req.primary.local_ack_timeout = 15;
    return req;
  }

  // Sends `req` to the server (by LID, no GRH) and returns every MAD that came back.
  std::vector<mad::DecodedMad> exchange(const mad::Req& req) {
    MadPacket out;
    out.addr.remote_lid = server().lid;
    EXPECT_TRUE(mad::encode(mad::cm_header(mad::Method::send, mad::AttrId::req, 7), req, mad::MadSpan(out.mad)).ok());
    const std::array<const MadPacket*, 1> burst{&out};
    EXPECT_EQ(fabric_.hca(1).send_burst(0, burst), 1u);
    while (engine_->progress() != 0) {
    }
    std::vector<mad::DecodedMad> back;
    MadPacket in;
    const std::array<MadPacket*, 1> slot{&in};
    while (fabric_.hca(1).recv_burst(0, slot) == 1) {
      mad::DecodedMad d;
      EXPECT_TRUE(mad::decode(in.mad, d).ok());
      back.push_back(d);
    }
    return back;
  }

  // The one REJ that came back for `req`.
  mad::Rej rejection_of(const mad::Req& req) {
    const auto back = exchange(req);
    EXPECT_EQ(back.size(), 1u);
    if (back.size() != 1 || !std::holds_alternative<mad::Rej>(back[0].message)) return {};
    const auto& rej = std::get<mad::Rej>(back[0].message);
    EXPECT_EQ(rej.remote_comm_id, req.local_comm_id);
    EXPECT_EQ(rej.message_rejected, mad::MessageKind::req);
    return rej;
  }

  VirtualClock clock_;
  loopback::LoopbackFabric fabric_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(PathReject, AcceptableRequestIsNotRejected) {
  EXPECT_TRUE(exchange(good_req()).empty());
  std::array<PortCounters, 2> counters{};
  engine_->counters(counters);
  EXPECT_EQ(counters[1].of(CmMessageKind::req).received, 1u);
  EXPECT_EQ(counters[1].of(CmMessageKind::rej).sent, 0u);
}

TEST_F(PathReject, GidNotOnThePortIsRejectedWithThePortsGid) {
  mad::Req req = good_req();
  req.primary.subnet_local = false;  // a routed path: the GID is what addresses us
  req.primary.hop_limit = 64;
  req.primary.remote_port_gid = Gid::from_parts(0xFE80'0000'0000'0000ull, 0xDEAD'BEEF);
  const mad::Rej rej = rejection_of(req);
  EXPECT_EQ(rej.reason, mad::RejReason::invalid_gid);
  ASSERT_EQ(rej.rejected_info_length, 16);
  EXPECT_TRUE(std::equal(server().gid_table[0].raw.begin(), server().gid_table[0].raw.end(), rej.ari.begin()));
}

TEST_F(PathReject, LidOutsideThePortsRangeIsRejectedWithItsBaseLid) {
  mad::Req req = good_req();
  req.primary.remote_port_lid = static_cast<Lid>(server().lid + 5);  // LMC 0: only the base LID is ours
  const mad::Rej rej = rejection_of(req);
  EXPECT_EQ(rej.reason, mad::RejReason::invalid_lid);
  ASSERT_EQ(rej.rejected_info_length, 2);
  EXPECT_EQ(rej.ari[0], server().lid >> 8);
  EXPECT_EQ(rej.ari[1], server().lid & 0xFF);
}

TEST_F(PathReject, AlternatePathIsCheckedWithItsOwnReason) {
  mad::Req req = good_req();
  req.alternate = req.primary;
  req.alternate.remote_port_lid = static_cast<Lid>(server().lid + 3);
  EXPECT_EQ(rejection_of(req).reason, mad::RejReason::invalid_alt_lid);
}

}  // namespace
}  // namespace fastcm::test
