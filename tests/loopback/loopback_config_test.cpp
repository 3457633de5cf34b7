// LoopbackConfig defaults and validation, and the port attributes each HCA's Fabric shows.
#include <gtest/gtest.h>

#include <stdexcept>

#include "fabric/loopback/loopback_config.h"
#include "loopback_test_support.h"

namespace fastcm::loopback::test {
namespace {

TEST(LoopbackConfig, DefaultPortsAreDeterministicAndDistinct) {
  const PortAttr a = LoopbackConfig::default_port(1, 2);
  EXPECT_EQ(a.port_num, 2);
  EXPECT_EQ(a.node_guid, 0x0002'c903'0000'0200u);
  EXPECT_EQ(a.port_guid, 0x0002'c903'0000'0202u);
  ASSERT_EQ(a.gids().size(), 1u);
  EXPECT_EQ(a.gids()[0], Gid::from_parts(0xfe80'0000'0000'0000, a.port_guid));
  EXPECT_EQ(a.lid, 18);
  EXPECT_EQ(a.sm_lid, 1);
  ASSERT_EQ(a.pkeys().size(), 2u);
  EXPECT_EQ(a.pkeys()[0], 0xffff);
  EXPECT_EQ(a.pkeys()[1], 0x8001);
  EXPECT_EQ(a.active_mtu, 5);
  EXPECT_EQ(a.active_rate, 16);
  EXPECT_EQ(a.link_layer, LinkLayer::infiniband);
  EXPECT_EQ(a.ca, (CaLimits{.max_qp_rd_atom = 16, .max_qp_init_rd_atom = 16,
                            .local_ca_ack_delay = 16}));
  EXPECT_EQ(LoopbackConfig::default_port(1, 2), a);
  EXPECT_NE(LoopbackConfig::default_port(0, 2).port_guid, a.port_guid);
}

TEST(LoopbackConfig, MakeBuildsTheRequestedShape) {
  const LoopbackConfig cfg = LoopbackConfig::make(3, 4);
  ASSERT_EQ(cfg.hcas.size(), 3u);
  for (std::uint16_t h = 0; h < 3; ++h) {
    ASSERT_EQ(cfg.hcas[h].ports.size(), 4u);
    for (std::uint8_t p = 0; p < 4; ++p) {
      EXPECT_EQ(cfg.hcas[h].ports[p], LoopbackConfig::default_port(h, static_cast<std::uint8_t>(p + 1)));
    }
  }
  EXPECT_NO_THROW(cfg.validate());
  EXPECT_EQ(LoopbackConfig::two_hcas(1).hcas.size(), 2u);
}

TEST(LoopbackConfig, MakeRejectsImpossibleShapes) {
  EXPECT_THROW((void)LoopbackConfig::make(0, 1), std::invalid_argument);
  EXPECT_THROW((void)LoopbackConfig::make(1, 0), std::invalid_argument);
  EXPECT_THROW((void)LoopbackConfig::make(1, 16), std::invalid_argument);
  EXPECT_THROW((void)LoopbackConfig::make(257, 1), std::invalid_argument);
  EXPECT_NO_THROW((void)LoopbackConfig::make(256, 1));
}

// Applies `mutate` to a valid two-HCA config and expects validate() and the fabric to reject it.
template <typename F>
void expect_rejected(F mutate) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(2);
  mutate(cfg);
  EXPECT_THROW(cfg.validate(), std::invalid_argument);
  VirtualClock clock;
  EXPECT_THROW((LoopbackFabric{cfg, clock}), std::invalid_argument);
}

TEST(LoopbackConfig, ValidateRejectsEachInconsistency) {
  expect_rejected([](LoopbackConfig& c) { c.hcas.clear(); });
  expect_rejected([](LoopbackConfig& c) { c.hcas[1].ports.clear(); });
  expect_rejected([](LoopbackConfig& c) { c.rx_queue_depth = 0; });
  expect_rejected([](LoopbackConfig& c) { c.rx_queue_depth = LoopbackConfig::kMaxRxQueueDepth + 1; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[1].port_num = 0; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[1].port_num = 1; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[0].gid_count = 0; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[0].gid_count = kMaxPortGids + 1; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[0].pkey_count = 0; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[0].gid_table[0] = Gid{}; });
  expect_rejected([](LoopbackConfig& c) {
    c.hcas[1].ports[0].gid_table[0] = c.hcas[0].ports[0].gid_table[0];
  });
  expect_rejected([](LoopbackConfig& c) { c.hcas[1].ports[0].lid = c.hcas[0].ports[1].lid; });
  expect_rejected([](LoopbackConfig& c) {  // LIDs 16..19 overlap port 17
    c.hcas[0].ports[0].lid = 16;
    c.hcas[0].ports[0].lmc = 2;
  });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[0].lmc = 8; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[0].lid = 0; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[0].lid = 0xc000; });
  expect_rejected([](LoopbackConfig& c) { c.hcas[0].ports[0].link_layer = LinkLayer::ethernet; });
}

TEST(LoopbackConfig, AcceptsLmcRangesThatTouchButDoNotOverlap) {
  LoopbackConfig c = LoopbackConfig::two_hcas(2);
  c.hcas[0].ports[0].lid = 12;  // 12..15, then port 2 at LID 2 and HCA 1 at 17, 18
  c.hcas[0].ports[0].lmc = 2;
  c.hcas[1].ports[0].lid = 16;  // 16..16
  EXPECT_NO_THROW(c.validate());
}

TEST(LoopbackFabricPorts, EachHcaShowsOnlyItsOwnPortsInConfigOrder) {
  LoopbackConfig cfg = LoopbackConfig::make(3, 2);
  cfg.hcas[2].ports[1].pkey_table[2] = 0x0123;
  cfg.hcas[2].ports[1].pkey_count = 3;
  cfg.hcas[2].ports[1].ca.max_qp_rd_atom = 4;
  Harness h(cfg);
  ASSERT_EQ(h.fabric.hca_count(), 3u);
  for (std::size_t hca = 0; hca < 3; ++hca) {
    const auto ports = h.fabric.hca(hca).ports();
    ASSERT_EQ(ports.size(), 2u);
    for (std::size_t p = 0; p < 2; ++p) EXPECT_EQ(ports[p], cfg.hcas[hca].ports[p]);
  }
  const PortAttr& custom = h.fabric.hca(2).ports()[1];
  EXPECT_EQ(custom.pkeys().size(), 3u);
  EXPECT_EQ(custom.pkeys()[2], 0x0123);
  EXPECT_EQ(custom.ca.max_qp_rd_atom, 4);
  EXPECT_THROW((void)h.fabric.hca(3), std::out_of_range);
}

TEST(LoopbackFabricPorts, OutOfRangePortsAreRefusedWithoutEffect) {
  Harness h;
  const MadPacket p = make_mad(to_lid(17), 1);
  EXPECT_EQ(send_one(h.client(), 2, p), 0u);
  MadPacket buf;
  MadPacket* bufs[] = {&buf};
  EXPECT_EQ(h.client().recv_burst(2, bufs), 0u);
  EXPECT_EQ(h.client().rx_event_fd(2), -1);
  EXPECT_FALSE(h.client().arm_rx_event(2));
  EXPECT_EQ(h.fabric.total_pending(), 0u);
  EXPECT_THROW((void)h.fabric.counters(PortRef{.hca = 0, .port = 2}), std::out_of_range);
  EXPECT_THROW((void)h.fabric.pending(PortRef{.hca = 2, .port = 0}), std::out_of_range);
  EXPECT_THROW((void)h.fabric.next_delivery_ns(PortRef{.hca = 9, .port = 0}), std::out_of_range);
}

}  // namespace
}  // namespace fastcm::loopback::test
