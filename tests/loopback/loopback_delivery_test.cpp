// The loopback switch without faults: routing by LID and by GID, the receive-side checks of QP1,
// the address the receiver sees, queue-full drops, counters and pending counts.
#include <gtest/gtest.h>

#include "loopback_test_support.h"

namespace fastcm::loopback::test {
namespace {

constexpr PortRef kClient0{.hca = 0, .port = 0};
constexpr PortRef kClient1{.hca = 0, .port = 1};
constexpr PortRef kServer0{.hca = 1, .port = 0};
constexpr PortRef kServer1{.hca = 1, .port = 1};

TEST(LoopbackDelivery, ByLidReachesThePortOwningTheLidWithTheSendersAddress) {
  Harness h;
  MadAddress to = to_lid(18);
  to.sl = 3;
  const MadPacket sent = make_mad(to, 42);
  EXPECT_EQ(send_one(h.client(), 1, sent), 1u);
  EXPECT_TRUE(drain(h.server(), 0).empty());
  const auto got = drain(h.server(), 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].mad, sent.mad);
  MadAddress expected;
  expected.port_index = 1;
  expected.remote_lid = 2;  // HCA 0 port 2
  expected.remote_qpn = kGsiQpn;
  expected.remote_qkey = kGsiQKey;
  expected.pkey_index = 0;
  expected.sl = 3;
  EXPECT_EQ(got[0].addr, expected);
  EXPECT_EQ(h.fabric.counters(kClient1).sent, 1u);
  EXPECT_EQ(h.fabric.counters(kServer1).delivered, 1u);
  EXPECT_EQ(h.fabric.counters(kServer0), PortCounters{});
  EXPECT_EQ(h.fabric.total_pending(), 0u);
}

TEST(LoopbackDelivery, ARepliedAddressReachesTheOriginalSender) {
  Harness h;
  send_one(h.client(), 0, make_mad(to_lid(17), 1));
  const auto req = drain(h.server(), 0);
  ASSERT_EQ(req.size(), 1u);
  send_one(h.server(), req[0].addr.port_index, make_mad(req[0].addr, 2, kAttrRep));
  const auto rep = drain(h.client(), 0);
  ASSERT_EQ(rep.size(), 1u);
  EXPECT_EQ(tag_of(rep[0]), 2u);
  EXPECT_EQ(rep[0].addr.remote_lid, 17);
}

TEST(LoopbackDelivery, APortCanSendToItselfAndToItsOwnHca) {
  Harness h;
  send_one(h.client(), 0, make_mad(to_lid(1), 1));
  send_one(h.client(), 0, make_mad(to_lid(2), 2));
  EXPECT_EQ(tags(drain(h.client(), 0)), std::vector<std::uint32_t>{1});
  EXPECT_EQ(tags(drain(h.client(), 1)), std::vector<std::uint32_t>{2});
}

TEST(LoopbackDelivery, LmcGivesAPortARangeOfLids) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(1);
  cfg.hcas[1].ports[0].lid = 32;
  cfg.hcas[1].ports[0].lmc = 2;
  Harness h(cfg);
  for (Lid lid = 32; lid <= 35; ++lid) send_one(h.client(), 0, make_mad(to_lid(lid), lid));
  send_one(h.client(), 0, make_mad(to_lid(36), 36));
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{32, 33, 34, 35}));
  EXPECT_EQ(h.fabric.counters(kClient0).no_route, 1u);
}

TEST(LoopbackDelivery, ByGidUsesTheGrhAndReportsBothGids) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(2);
  PortAttr& client = cfg.hcas[0].ports[0];
  client.gid_table[1] = Gid::from_parts(0xfec0'0000'0000'0001, client.port_guid);
  client.gid_count = 2;
  PortAttr& server = cfg.hcas[1].ports[1];
  server.gid_table[1] = Gid::from_parts(0xfec0'0000'0000'0002, server.port_guid);
  server.gid_count = 2;
  Harness h(cfg);

  MadAddress to = to_gid(server.gid_table[1], 1);
  to.remote_lid = 17;  // the GRH decides, not the LID (routed traffic)
  to.grh.hop_limit = 64;
  to.grh.traffic_class = 0x20;
  to.grh.flow_label = 0xabcde;
  send_one(h.client(), 0, make_mad(to, 7));
  EXPECT_TRUE(drain(h.server(), 0).empty());
  const auto got = drain(h.server(), 1);
  ASSERT_EQ(got.size(), 1u);
  const GrhInfo expected{.present = true,
                         .gid_index = 1,
                         .hop_limit = 64,
                         .traffic_class = 0x20,
                         .flow_label = 0xabcde,
                         .remote_gid = client.gid_table[1]};
  EXPECT_EQ(got[0].addr.grh, expected);
  EXPECT_EQ(got[0].addr.remote_lid, 1);
  EXPECT_EQ(got[0].addr.port_index, 1);

  send_one(h.client(), 0, make_mad(to_gid(cfg.hcas[1].ports[0].gid_table[0]), 8));
  const auto by_default_gid = drain(h.server(), 0);
  ASSERT_EQ(by_default_gid.size(), 1u);
  EXPECT_EQ(by_default_gid[0].addr.grh.gid_index, 0);
  EXPECT_EQ(by_default_gid[0].addr.grh.remote_gid, client.gid_table[0]);
}

TEST(LoopbackDelivery, RoceNeedsAGrhAndDoesNotReachInfiniBand) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(1);
  for (auto& hca : cfg.hcas) {
    hca.ports[0].link_layer = LinkLayer::ethernet;
    hca.ports[0].lid = 0;
  }
  cfg.hcas.push_back(LoopbackHcaConfig{.ports = {LoopbackConfig::default_port(2, 1)}});
  Harness h(cfg);
  const Gid server_gid = cfg.hcas[1].ports[0].gid_table[0];
  send_one(h.client(), 0, make_mad(to_gid(server_gid), 1));
  send_one(h.client(), 0, make_mad(to_lid(0), 2));
  send_one(h.client(), 0, make_mad(to_gid(cfg.hcas[2].ports[0].gid_table[0]), 3));
  EXPECT_EQ(tags(drain(h.server(), 0)), std::vector<std::uint32_t>{1});
  EXPECT_EQ(h.fabric.counters(kClient0).no_route, 2u);
  EXPECT_TRUE(drain(h.fabric.hca(2), 0).empty());
}

TEST(LoopbackDelivery, UnknownDestinationsCountAsNoRoute) {
  Harness h;
  send_one(h.client(), 0, make_mad(to_lid(999), 1));     // nobody's LID
  send_one(h.client(), 0, make_mad(to_lid(0), 2));       // no LID, no GRH
  send_one(h.client(), 0, make_mad(to_lid(0xc001), 3));  // multicast
  send_one(h.client(), 0, make_mad(to_lid(0xffff), 4));  // permissive
  send_one(h.client(), 0, make_mad(to_gid(Gid::from_parts(0xfe80'0000'0000'0000, 5)), 5));
  EXPECT_EQ(h.fabric.counters(kClient0).no_route, 5u);
  EXPECT_EQ(h.fabric.counters(kClient0).sent, 5u);
  EXPECT_EQ(h.fabric.total_pending(), 0u);
  for (std::uint16_t p = 0; p < 2; ++p) {
    EXPECT_TRUE(drain(h.server(), p).empty());
    EXPECT_TRUE(drain(h.client(), p).empty());
  }
}

TEST(LoopbackDelivery, IndexesOutsideTheSendersTablesAreInvalidAddresses) {
  Harness h;
  MadAddress bad_pkey = to_lid(17);
  bad_pkey.pkey_index = 2;  // the default table has two entries
  MadAddress bad_gid = to_gid(h.server().ports()[0].gids()[0], 1);
  send_one(h.client(), 0, make_mad(bad_pkey, 1));
  send_one(h.client(), 0, make_mad(bad_gid, 2));
  EXPECT_EQ(h.fabric.counters(kClient0).invalid_address, 2u);
  EXPECT_TRUE(drain(h.server(), 0).empty());
}

TEST(LoopbackDelivery, PKeysMatchOnTheBaseAndNeedOneFullMember) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(1);
  PortAttr& client = cfg.hcas[0].ports[0];
  client.pkey_table = {0xffff, 0x8001, 0x0002, 0x0003, 0x8004};
  client.pkey_count = 5;
  PortAttr& server = cfg.hcas[1].ports[0];
  server.pkey_table = {0xffff, 0x0001, 0x8002, 0x0003};
  server.pkey_count = 4;
  Harness h(cfg);
  for (std::uint16_t i = 0; i < 5; ++i) {
    MadAddress to = to_lid(17);
    to.pkey_index = i;
    send_one(h.client(), 0, make_mad(to, i));
  }
  const auto got = drain(h.server(), 0);
  ASSERT_EQ(got.size(), 3u);
  // 0xffff -> 0; full 0x8001 -> limited 0x0001 at 1; limited 0x0002 -> full 0x8002 at 2.
  EXPECT_EQ(tag_of(got[0]), 0u);
  EXPECT_EQ(got[0].addr.pkey_index, 0);
  EXPECT_EQ(tag_of(got[1]), 1u);
  EXPECT_EQ(got[1].addr.pkey_index, 1);
  EXPECT_EQ(tag_of(got[2]), 2u);
  EXPECT_EQ(got[2].addr.pkey_index, 2);
  // Limited 0x0003 to limited 0x0003, and 0x8004 the server lacks: rejected on arrival.
  EXPECT_EQ(h.fabric.counters(kServer0).dropped_invalid, 2u);
}

TEST(LoopbackDelivery, QpOneAcceptsOnlyItsOwnQpnAndQKey) {
  Harness h;
  MadAddress wrong_qp = to_lid(17);
  wrong_qp.remote_qpn = 2;
  MadAddress wrong_qkey = to_lid(17);
  wrong_qkey.remote_qkey = 0x1234;
  send_one(h.client(), 0, make_mad(wrong_qp, 1));
  send_one(h.client(), 0, make_mad(wrong_qkey, 2));
  send_one(h.client(), 0, make_mad(to_lid(17), 3));
  EXPECT_EQ(tags(drain(h.server(), 0)), std::vector<std::uint32_t>{3});
  EXPECT_EQ(h.fabric.counters(kServer0).dropped_invalid, 2u);
}

TEST(LoopbackDelivery, BurstsKeepOrderAndFillOnlyWhatIsReady) {
  Harness h;
  send_tagged(h.client(), 0, to_lid(17), 100, 40);
  EXPECT_EQ(h.fabric.pending(kServer0), 40u);
  MadPacket bufs[64];
  MadPacket* ptrs[64];
  for (std::size_t i = 0; i < 64; ++i) ptrs[i] = &bufs[i];
  EXPECT_EQ(h.server().recv_burst(0, std::span<MadPacket* const>(ptrs, 5)), 5u);
  EXPECT_EQ(h.fabric.pending(kServer0), 35u);
  EXPECT_EQ(h.server().recv_burst(0, ptrs), 35u);
  for (std::uint32_t i = 0; i < 35; ++i) EXPECT_EQ(tag_of(bufs[i]), 105 + i);
  EXPECT_EQ(h.server().recv_burst(0, ptrs), 0u);
  EXPECT_EQ(h.fabric.counters(kServer0).delivered, 40u);
  EXPECT_EQ(h.fabric.pending(kServer0), 0u);
}

TEST(LoopbackDelivery, AFullQueueDropsAndCountsThenRecovers) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(2);
  cfg.rx_queue_depth = 4;
  Harness h(cfg);
  send_tagged(h.client(), 0, to_lid(17), 0, 6);
  send_one(h.client(), 1, make_mad(to_lid(18), 50));  // other ports have their own queues
  EXPECT_EQ(h.fabric.pending(kServer0), 4u);
  EXPECT_EQ(h.fabric.counters(kServer0).dropped_queue_full, 2u);
  EXPECT_EQ(h.fabric.counters(kClient0).sent, 6u);
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(tags(drain(h.server(), 1)), std::vector<std::uint32_t>{50});
  for (std::uint32_t round = 0; round < 3; ++round) {  // every slot comes back
    send_tagged(h.client(), 0, to_lid(17), 10 * round, 4);
    EXPECT_EQ(drain(h.server(), 0).size(), 4u);
  }
  EXPECT_EQ(h.fabric.counters(kServer0).dropped_queue_full, 2u);
  EXPECT_EQ(h.fabric.total_pending(), 0u);
}

// The switch queues a burst's MADs a run at a time, a run being consecutive MADs to one port, up
// to the ring operation's size: runs longer than that, runs broken by another port, and a queue
// that fills in the middle of a run keep each port's order and drop only what did not fit.
TEST(LoopbackDelivery, OneBurstToSeveralPortsKeepsEachPortsOrderAndDropsOnlyTheOverflow) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(2);
  cfg.rx_queue_depth = 64;
  Harness h(cfg);
  std::vector<MadPacket> pkts;
  std::vector<std::uint32_t> to_port0, to_port1;
  for (std::uint32_t t = 0; t < 100; ++t) {
    const bool port0 = t < 40 || (t >= 45 && t < 80) || (t >= 80 && t % 2 == 0);
    pkts.push_back(make_mad(to_lid(port0 ? 17 : 18), t));
    (port0 ? to_port0 : to_port1).push_back(t);
  }
  std::vector<const MadPacket*> ptrs;
  for (const MadPacket& p : pkts) ptrs.push_back(&p);
  EXPECT_EQ(h.client().send_burst(0, ptrs), 100u);
  ASSERT_EQ(to_port0.size(), 85u);
  to_port0.resize(64);  // the queue's depth: the last 21 of port 0's MADs found it full
  EXPECT_EQ(tags(drain(h.server(), 0)), to_port0);
  EXPECT_EQ(tags(drain(h.server(), 1)), to_port1);
  EXPECT_EQ(h.fabric.counters(kServer0).dropped_queue_full, 21u);
  EXPECT_EQ(h.fabric.counters(kServer1).dropped_queue_full, 0u);
  EXPECT_EQ(h.fabric.total_pending(), 0u);
}

// A receive hands the slots it copied out back to the senders in batches: every one of them, the
// last partial batch included, is free again when recv_burst returns.
TEST(LoopbackDelivery, EverySlotAReceiveCopiedOutIsFreeWhenItReturns) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(1);
  cfg.rx_queue_depth = 70;
  Harness h(cfg);
  send_tagged(h.client(), 0, to_lid(17), 0, 70);
  std::vector<MadPacket> bufs(45);
  std::vector<MadPacket*> ptrs;
  for (MadPacket& b : bufs) ptrs.push_back(&b);
  ASSERT_EQ(h.server().recv_burst(0, ptrs), 45u);
  for (std::uint32_t i = 0; i < 45; ++i) EXPECT_EQ(tag_of(bufs[i]), i);
  EXPECT_EQ(h.fabric.pending(kServer0), 25u);
  send_tagged(h.client(), 0, to_lid(17), 100, 45);
  EXPECT_EQ(h.fabric.counters(kServer0).dropped_queue_full, 0u);
  send_one(h.client(), 0, make_mad(to_lid(17), 200));  // the queue is full again
  EXPECT_EQ(h.fabric.counters(kServer0).dropped_queue_full, 1u);
  std::vector<std::uint32_t> expected;
  for (std::uint32_t t = 45; t < 70; ++t) expected.push_back(t);
  for (std::uint32_t t = 100; t < 145; ++t) expected.push_back(t);
  EXPECT_EQ(tags(drain(h.server(), 0)), expected);
  EXPECT_EQ(h.fabric.total_pending(), 0u);
}

TEST(LoopbackDelivery, NextDeliveryIsNowForUndelayedMadsAndEmptyWhenIdle) {
  Harness h;
  h.clock.set(1000);
  EXPECT_EQ(h.fabric.next_delivery_ns(kServer0), std::nullopt);
  send_tagged(h.client(), 0, to_lid(17), 0, 3);
  EXPECT_EQ(h.fabric.next_delivery_ns(kServer0), 1000u);
  send_tagged(h.client(), 0, to_lid(17), 3, 2);
  EXPECT_EQ(tags(drain(h.server(), 0)), (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(h.fabric.next_delivery_ns(kServer0), std::nullopt);
  EXPECT_EQ(h.fabric.counters(kServer1), PortCounters{});
  EXPECT_EQ(h.fabric.counters(kClient1), PortCounters{});
}

}  // namespace
}  // namespace fastcm::loopback::test
