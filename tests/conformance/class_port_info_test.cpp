// The CM's ClassPortInfo (IBTA Vol. 1 13.4.8.1): what a management tool sees when it asks.
//
// One engine on HCA 0 of a loopback fabric; HCA 1 is the tool, speaking raw MADs on its QP1.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "engine/mad/codec.h"
#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"
#include "tests/conformance/harness.h"

namespace fastcm::test {
namespace {

class ClassPortInfoTest : public ::testing::Test {
 protected:
  void SetUp() override { FASTCM_LOOPBACK_ONLY("MADs sent by LID from a tool HCA of its own loopback fabric"); }
  ClassPortInfoTest()
      : fabric_(loopback::LoopbackConfig::two_hcas(1), clock_),
        engine_(make_engine(fabric_.hca(0), clock_, EngineConfig{})) {}

  // Sends a ClassPortInfo MAD with `method` from the tool to the engine, lets the engine run, and
  // returns every MAD that came back to the tool.
  std::vector<mad::DecodedMad> exchange(mad::Method method, std::uint64_t tid, const mad::ClassPortInfo& body = {}) {
    MadPacket out;
    out.addr.remote_lid = fabric_.hca(0).ports()[0].lid;
    const mad::MadHeader hdr = mad::cm_header(method, mad::AttrId::class_port_info, tid);
    EXPECT_TRUE(mad::encode(hdr, body, mad::MadSpan(out.mad)).ok());
    const std::array<const MadPacket*, 1> burst{&out};
    EXPECT_EQ(tool().send_burst(0, burst), 1u);
    while (engine_->progress() != 0) {
    }
    std::vector<mad::DecodedMad> back;
    MadPacket in;
    const std::array<MadPacket*, 1> slot{&in};
    while (tool().recv_burst(0, slot) == 1) {
      mad::DecodedMad d;
      EXPECT_TRUE(mad::decode(in.mad, d).ok());
      EXPECT_EQ(in.addr.remote_lid, fabric_.hca(0).ports()[0].lid);
      back.push_back(d);
    }
    return back;
  }

  [[nodiscard]] PortCounters engine_counters() const {
    std::array<PortCounters, 2> all{};
    engine_->counters(all);
    return all[1];
  }
  [[nodiscard]] Fabric& tool() { return fabric_.hca(1); }

  VirtualClock clock_;
  loopback::LoopbackFabric fabric_;
  std::unique_ptr<Engine> engine_;
};

// CapabilityMask bits of the CM class: IsReliableConnectionCapable (9),
// IsUnreliableConnectionCapable (12), IsSIDRCapable (13); no RD, no traps.
constexpr std::uint16_t kExpectedCapabilities = (1u << 9) | (1u << 12) | (1u << 13);

TEST_F(ClassPortInfoTest, GetIsAnsweredWithTheCmCapabilities) {
  const auto back = exchange(mad::Method::get, 0x1234'5678'9ABC'DEF0);
  ASSERT_EQ(back.size(), 1u);
  const mad::MadHeader& hdr = back[0].header;
  EXPECT_EQ(hdr.method, mad::Method::get_resp);
  EXPECT_EQ(hdr.status, 0);
  EXPECT_EQ(hdr.transaction_id, 0x1234'5678'9ABC'DEF0u);
  EXPECT_EQ(hdr.attribute_id, mad::AttrId::class_port_info);
  ASSERT_TRUE(std::holds_alternative<mad::ClassPortInfo>(back[0].message));
  const auto& cpi = std::get<mad::ClassPortInfo>(back[0].message);
  EXPECT_EQ(cpi.base_version, 1);
  EXPECT_EQ(cpi.class_version, 2);
  EXPECT_EQ(cpi.capability_mask, kExpectedCapabilities);
  EXPECT_EQ(cpi.capability_mask2, 0u);
  EXPECT_EQ(cpi.resp_time_value, 18);
  EXPECT_EQ(cpi.redirect_lid, 0);  // no redirection
  EXPECT_EQ(cpi.redirect_qp, 0u);
  EXPECT_EQ(cpi.redirect_gid, Gid{});
  EXPECT_EQ(cpi.trap_lid, 0);

  const PortCounters c = engine_counters();
  EXPECT_EQ(c.of(CmMessageKind::class_port_info).received, 1u);
  EXPECT_EQ(c.of(CmMessageKind::class_port_info).sent, 1u);
}

TEST_F(ClassPortInfoTest, SetIsRefusedAsAnUnsupportedMethodAttributeCombination) {
  mad::ClassPortInfo want;
  want.trap_lid = 0x55;
  want.resp_time_value = 3;
  const auto back = exchange(mad::Method::set, 77, want);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].header.method, mad::Method::get_resp);
  EXPECT_EQ(back[0].header.status, 0x000C);  // invalid field code 3 (IBTA 13.4.7)
  EXPECT_EQ(back[0].header.transaction_id, 77u);
  const auto& cpi = std::get<mad::ClassPortInfo>(back[0].message);
  EXPECT_EQ(cpi.trap_lid, 0);  // nothing was set
  EXPECT_EQ(cpi.resp_time_value, 18);
  EXPECT_EQ(cpi.capability_mask, kExpectedCapabilities);

  // Still the same afterwards.
  const auto again = exchange(mad::Method::get, 78);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(std::get<mad::ClassPortInfo>(again[0].message).trap_lid, 0);
}

TEST_F(ClassPortInfoTest, UnaskedGetRespIsDroppedAsOutOfState) {
  const auto back = exchange(mad::Method::get_resp, 5);
  EXPECT_TRUE(back.empty());
  const PortCounters c = engine_counters();
  EXPECT_EQ(c.of(CmMessageKind::class_port_info).received, 1u);
  EXPECT_EQ(c.of(CmMessageKind::class_port_info).sent, 0u);
  EXPECT_EQ(c.dropped(DropReason::out_of_state), 1u);
}

}  // namespace
}  // namespace fastcm::test
