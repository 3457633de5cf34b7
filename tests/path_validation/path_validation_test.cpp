// validate_req_paths: every REJ reason it can produce, with the exact ARI bytes, on InfiniBand and
// RoCE ports; what it must accept (LMC ranges, P_Key membership, routed and RoCE paths as Linux
// sends them); and the order of the checks.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/path_validation.h"

namespace fastcm::engine {
namespace {

using mad::RejReason;

constexpr Gid kIbGid0 = Gid::from_parts(0xFE80'0000'0000'0000, 0x0002'C903'000A'0B0C);
constexpr Gid kIbGid1 = Gid::from_parts(0x2001'0DB8'0000'0001, 0x0002'C903'000A'0B0C);
constexpr Gid kRoceGid0 = Gid::from_parts(0xFE80'0000'0000'0000, 0x0202'C9FF'FE0A'0B0C);
constexpr Gid kRoceGidV4 = Gid::from_parts(0x0000'0000'0000'0000, 0x0000'FFFF'C0A8'010A);
constexpr Gid kPeerGid = Gid::from_parts(0xFE80'0000'0000'0000, 0x0002'C903'00FF'0001);
constexpr Gid kStrangerGid = Gid::from_parts(0xFE80'0000'0000'0000, 0x0002'C903'00EE'0002);

constexpr Lid kBaseLid = 0x0010;  // with LMC 2 the port owns 0x10..0x13
constexpr std::uint8_t kRate40G = 7;
constexpr std::uint8_t kMtu2048 = 4;

PortAttr ib_port() {
  PortAttr p;
  p.gid_table[0] = kIbGid0;
  p.gid_table[1] = kIbGid1;
  p.gid_count = 2;
  p.lid = kBaseLid;
  p.lmc = 2;
  p.pkey_table[0] = 0xFFFF;
  p.pkey_table[1] = 0x8001;  // full member of partition 1
  p.pkey_table[2] = 0x0002;  // limited member of partition 2
  p.pkey_count = 3;
  p.active_mtu = kMtu2048;
  p.active_rate = kRate40G;
  p.link_layer = LinkLayer::infiniband;
  return p;
}

PortAttr roce_port() {
  PortAttr p;
  p.gid_table[0] = kRoceGid0;
  p.gid_table[1] = kRoceGidV4;
  p.gid_count = 2;
  p.pkey_table[0] = 0xFFFF;
  p.pkey_count = 1;
  p.active_mtu = 3;    // 1024
  p.active_rate = 16;  // 100 Gb/s
  p.link_layer = LinkLayer::ethernet;
  return p;
}

// A subnet-local InfiniBand path to `our_lid` and our default GID.
mad::PathFields ib_path(Lid our_lid = kBaseLid) {
  mad::PathFields f;
  f.local_port_lid = 0x0042;
  f.remote_port_lid = our_lid;
  f.local_port_gid = kPeerGid;
  f.remote_port_gid = kIbGid0;
  f.packet_rate = kRate40G;
  f.sl = 3;
  f.subnet_local = true;
  f.hop_limit = 0;
  f.local_ack_timeout = 14;
  return f;
}

mad::Req ib_req() {
  mad::Req r;
  r.local_comm_id = 0x1234'5678;
  r.service_id = 0x0106'0000'0000'4321;
  r.partition_key = 0xFFFF;
  r.path_packet_payload_mtu = mad::MtuCode::mtu_2048;
  r.primary = ib_path();
  return r;
}

// A RoCEv2 REQ as Linux' cm_format_req() builds it: hop limit from the IP route, so not subnet
// local, and permissive LIDs because the LIDs of a routed path are unknown.
mad::Req roce_req() {
  mad::Req r = ib_req();
  r.path_packet_payload_mtu = mad::MtuCode::mtu_1024;
  r.primary.local_port_lid = 0xFFFF;
  r.primary.remote_port_lid = 0xFFFF;
  r.primary.local_port_gid = Gid::from_parts(0, 0x0000'FFFF'C0A8'0114);
  r.primary.remote_port_gid = kRoceGidV4;
  r.primary.subnet_local = false;
  r.primary.hop_limit = 64;
  r.primary.packet_rate = 16;
  return r;
}

// The rejection's ARI, checking that nothing is set past its length (a REJ carries all 72 bytes).
std::vector<std::uint8_t> ari_of(const PathRejection& r) {
  EXPECT_LE(r.ari_length, r.ari.size());
  for (std::size_t i = r.ari_length; i < r.ari.size(); ++i) EXPECT_EQ(r.ari[i], 0) << "byte " << i;
  return {r.ari.begin(), r.ari.begin() + r.ari_length};
}

std::vector<std::uint8_t> bytes_of(const Gid& g) { return {g.raw.begin(), g.raw.end()}; }

// ---- Accepted REQs ------------------------------------------------------------------------------

TEST(PathValidation, AcceptsSubnetLocalIbReq) {
  EXPECT_EQ(validate_req_paths(ib_req(), ib_port()), std::nullopt);
}

TEST(PathValidation, AcceptsLinuxStyleRoceReq) {
  EXPECT_EQ(validate_req_paths(roce_req(), roce_port()), std::nullopt);
}

TEST(PathValidation, AcceptsRoutedIbPathWithPermissiveLids) {
  mad::Req req = ib_req();
  req.primary.subnet_local = false;
  req.primary.hop_limit = 2;
  req.primary.remote_port_lid = 0xFFFF;
  req.primary.remote_port_gid = kIbGid1;  // any GID of the table, not only index 0
  EXPECT_EQ(validate_req_paths(req, ib_port()), std::nullopt);
}

TEST(PathValidation, AcceptsValidAlternateOnAnotherLidOfTheRange) {
  mad::Req req = ib_req();
  req.alternate = ib_path(kBaseLid + 3);
  EXPECT_EQ(validate_req_paths(req, ib_port()), std::nullopt);
}

TEST(PathValidation, IgnoresGidWithoutGrh) {
  mad::Req req = ib_req();
  req.primary.remote_port_gid = kStrangerGid;
  for (const std::uint8_t hop_limit : {std::uint8_t{0}, std::uint8_t{1}}) {
    req.primary.hop_limit = hop_limit;
    EXPECT_EQ(validate_req_paths(req, ib_port()), std::nullopt) << "hop limit " << int{hop_limit};
  }
}

TEST(PathValidation, IgnoresLidsOnEthernetPorts) {
  mad::Req req = roce_req();
  req.primary.subnet_local = true;  // RoCE v1 style: same L2 segment
  req.primary.hop_limit = 1;
  for (Lid lid : {Lid{0}, Lid{0x1234}, Lid{0xFFFF}}) {
    req.primary.remote_port_lid = lid;
    EXPECT_EQ(validate_req_paths(req, roce_port()), std::nullopt) << "LID " << lid;
  }
}

// ---- LID ranges (LMC) ---------------------------------------------------------------------------

TEST(PathValidation, AcceptsEveryLidOfTheLmcRangeAndNoOther) {
  const PortAttr port = ib_port();  // LMC 2: 0x10..0x13
  mad::Req req = ib_req();
  for (Lid lid = kBaseLid; lid < kBaseLid + 4; ++lid) {
    req.primary.remote_port_lid = lid;
    EXPECT_EQ(validate_req_paths(req, port), std::nullopt) << "LID " << lid;
  }
  for (Lid lid : {Lid{kBaseLid - 1}, Lid{kBaseLid + 4}, Lid{0}, Lid{0xFFFF}}) {
    req.primary.remote_port_lid = lid;
    const auto bad = validate_req_paths(req, port);
    ASSERT_TRUE(bad.has_value()) << "LID " << lid;
    EXPECT_EQ(bad->reason, RejReason::invalid_lid);
    EXPECT_EQ(ari_of(*bad), (std::vector<std::uint8_t>{0x00, 0x10}));
  }
}

TEST(PathValidation, LmcZeroOwnsOnlyTheBaseLid) {
  PortAttr port = ib_port();
  port.lmc = 0;
  mad::Req req = ib_req();
  EXPECT_EQ(validate_req_paths(req, port), std::nullopt);
  req.primary.remote_port_lid = kBaseLid + 1;
  const auto bad = validate_req_paths(req, port);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, RejReason::invalid_lid);
}

TEST(PathValidation, LidRangeReachesTheTopOfTheLidSpace) {
  PortAttr port = ib_port();
  port.lid = 0xFFFE;
  port.lmc = 1;  // 0xFFFE and 0xFFFF: the end of the range does not fit in 16 bits
  mad::Req req = ib_req();
  req.primary.remote_port_lid = 0xFFFF;
  EXPECT_EQ(validate_req_paths(req, port), std::nullopt);
  req.primary.remote_port_lid = 0x0000;
  const auto bad = validate_req_paths(req, port);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(ari_of(*bad), (std::vector<std::uint8_t>{0xFF, 0xFE}));
}

TEST(PathValidation, LmcAboveThreeBitsCountsAsSeven) {
  PortAttr port = ib_port();
  port.lmc = 9;
  mad::Req req = ib_req();
  req.primary.remote_port_lid = kBaseLid + 127;
  EXPECT_EQ(validate_req_paths(req, port), std::nullopt);
  req.primary.remote_port_lid = kBaseLid + 128;
  EXPECT_TRUE(validate_req_paths(req, port).has_value());
}

// ---- P_Key membership ---------------------------------------------------------------------------

struct PKeyCase {
  PKey req_key;
  bool accepted;
  const char* why;
};

TEST(PathValidation, PartitionKeyMembership) {
  const PKeyCase cases[] = {
      {0xFFFF, true, "full default key"},
      {0x7FFF, true, "limited default key against our full one"},
      {0x8001, true, "full against full"},
      {0x0001, true, "limited against our full member"},
      {0x8002, true, "full against our limited member"},
      {0x0002, false, "two limited members cannot talk"},
      {0x8003, false, "partition not in the table"},
      {0x0000, false, "invalid key"},
  };
  for (const PKeyCase& c : cases) {
    mad::Req req = ib_req();
    req.partition_key = c.req_key;
    const auto bad = validate_req_paths(req, ib_port());
    EXPECT_EQ(!bad.has_value(), c.accepted) << c.why;
    if (bad) {
      // As Linux: "invalid GID" with the port's GID 0.
      EXPECT_EQ(bad->reason, RejReason::invalid_gid) << c.why;
      EXPECT_EQ(ari_of(*bad), bytes_of(kIbGid0)) << c.why;
    }
  }
}

TEST(PathValidation, InvalidPartitionKeysNeverMatchEvenWhenInTheTable) {
  PortAttr port = ib_port();
  port.pkey_table[0] = 0x8000;
  port.pkey_count = 1;
  mad::Req req = ib_req();
  for (PKey key : {PKey{0x8000}, PKey{0x0000}}) {
    req.partition_key = key;
    EXPECT_TRUE(validate_req_paths(req, port).has_value()) << "key " << key;
  }
}

TEST(PathValidation, PartitionKeysPastTheCountAreNotInTheTable) {
  PortAttr port = ib_port();
  port.pkey_table[3] = 0x8005;  // beyond pkey_count
  mad::Req req = ib_req();
  req.partition_key = 0x8005;
  EXPECT_TRUE(validate_req_paths(req, port).has_value());
}

// ---- GIDs ---------------------------------------------------------------------------------------

TEST(PathValidation, RejectsForeignGidOnRoutedPathWithDefaultGid) {
  mad::Req req = ib_req();
  req.primary.subnet_local = false;
  req.primary.hop_limit = 3;
  req.primary.remote_port_gid = kStrangerGid;
  const auto bad = validate_req_paths(req, ib_port());
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, RejReason::invalid_gid);
  EXPECT_EQ(bad->ari_length, 16);
  EXPECT_EQ(ari_of(*bad), bytes_of(kIbGid0));
}

TEST(PathValidation, ChecksGidOfSubnetLocalPathWithGrhHopLimit) {
  mad::Req req = ib_req();
  req.primary.hop_limit = 2;
  req.primary.remote_port_gid = kStrangerGid;
  const auto bad = validate_req_paths(req, ib_port());
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, RejReason::invalid_gid);
}

TEST(PathValidation, ChecksGidOnEthernetEvenWhenSubnetLocal) {
  mad::Req req = roce_req();
  req.primary.subnet_local = true;
  req.primary.hop_limit = 0;
  req.primary.remote_port_gid = kStrangerGid;
  const auto bad = validate_req_paths(req, roce_port());
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, RejReason::invalid_gid);
  EXPECT_EQ(ari_of(*bad), bytes_of(kRoceGid0));
}

TEST(PathValidation, GidRejectionWithoutGidsCarriesNoAri) {
  PortAttr port = roce_port();
  port.gid_count = 0;
  const auto bad = validate_req_paths(roce_req(), port);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, RejReason::invalid_gid);
  EXPECT_EQ(ari_of(*bad), std::vector<std::uint8_t>{});
}

// ---- Hop limit, packet rate, MTU ----------------------------------------------------------------

TEST(PathValidation, RoutedPathNeedsHopLimitAboveOne) {
  mad::Req req = roce_req();
  for (const std::uint8_t hop_limit : {std::uint8_t{0}, std::uint8_t{1}}) {
    req.primary.hop_limit = hop_limit;
    const auto bad = validate_req_paths(req, roce_port());
    ASSERT_TRUE(bad.has_value()) << "hop limit " << int{hop_limit};
    EXPECT_EQ(bad->reason, RejReason::invalid_hop_limit);
    EXPECT_EQ(ari_of(*bad), std::vector<std::uint8_t>{0xFF});
  }
  req.primary.hop_limit = 2;
  EXPECT_EQ(validate_req_paths(req, roce_port()), std::nullopt);
}

TEST(PathValidation, PacketRateIsComparedAsLinkSpeedNotAsCode) {
  const PortAttr port = ib_port();  // 40 Gb/s (code 7)
  struct RateCase {
    std::uint8_t code;
    bool accepted;
  };
  const RateCase cases[] = {
      {0, true},    // port current
      {2, true},    // 2.5 Gb/s
      {3, true},    // 10 Gb/s
      {4, true},    // 30 Gb/s
      {5, true},    // 5 Gb/s
      {7, true},    // 40 Gb/s: the port's own rate
      {11, true},   // 14 Gb/s: a larger code, a slower link
      {15, true},   // 25 Gb/s
      {8, false},   // 60 Gb/s
      {12, false},  // 56 Gb/s: a larger code than 8, a slower link, still above 40
      {16, false},  // 100 Gb/s
      {24, false},  // 1.2 Tb/s
  };
  for (const RateCase& c : cases) {
    mad::Req req = ib_req();
    req.primary.packet_rate = c.code;
    const auto bad = validate_req_paths(req, port);
    EXPECT_EQ(!bad.has_value(), c.accepted) << "rate code " << int{c.code};
    if (bad) {
      EXPECT_EQ(bad->reason, RejReason::invalid_packet_rate);
      EXPECT_EQ(ari_of(*bad), std::vector<std::uint8_t>{kRate40G << 2});  // code in bits 7..2
    }
  }
}

TEST(PathValidation, PortWithoutKnownRateOrMtuConstrainsNothing) {
  PortAttr port = ib_port();
  port.active_rate = 0;
  port.active_mtu = 0;
  mad::Req req = ib_req();
  req.primary.packet_rate = 24;
  req.path_packet_payload_mtu = mad::MtuCode::mtu_4096;
  EXPECT_EQ(validate_req_paths(req, port), std::nullopt);
}

TEST(PathValidation, MtuAboveThePortsIsRejectedWithThePortsMtu) {
  mad::Req req = ib_req();
  for (mad::MtuCode mtu : {mad::MtuCode::mtu_256, mad::MtuCode::mtu_1024, mad::MtuCode::mtu_2048}) {
    req.path_packet_payload_mtu = mtu;
    EXPECT_EQ(validate_req_paths(req, ib_port()), std::nullopt);
  }
  req.path_packet_payload_mtu = mad::MtuCode::mtu_4096;
  const auto bad = validate_req_paths(req, ib_port());
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, RejReason::invalid_mtu);
  EXPECT_EQ(ari_of(*bad), std::vector<std::uint8_t>{kMtu2048 << 4});  // code in bits 7..4
}

// ---- The same rules on the alternate path, with the alternate codes -----------------------------

struct PathFault {
  const char* name;
  std::function<void(mad::PathFields&)> spoil;
  RejReason primary;
  RejReason alternate;
  std::vector<std::uint8_t> ari;
};

std::vector<PathFault> path_faults() {
  return {
      {"foreign GID", [](mad::PathFields& f) {
         f.hop_limit = 2;
         f.remote_port_gid = kStrangerGid;
       },
       RejReason::invalid_gid, RejReason::invalid_alt_gid, bytes_of(kIbGid0)},
      {"LID outside the LMC range", [](mad::PathFields& f) { f.remote_port_lid = kBaseLid + 4; },
       RejReason::invalid_lid, RejReason::invalid_alt_lid, {0x00, 0x10}},
      {"routed with hop limit 1", [](mad::PathFields& f) {
         f.subnet_local = false;
         f.hop_limit = 1;
       },
       RejReason::invalid_hop_limit, RejReason::invalid_alt_hop_limit, {0xFF}},
      {"faster than the port", [](mad::PathFields& f) { f.packet_rate = 16; },
       RejReason::invalid_packet_rate, RejReason::invalid_alt_packet_rate, {kRate40G << 2}},
  };
}

TEST(PathValidation, EachPathFaultOnThePrimaryUsesThePrimaryReason) {
  for (const PathFault& fault : path_faults()) {
    mad::Req req = ib_req();
    req.alternate = ib_path(kBaseLid + 1);
    fault.spoil(req.primary);
    const auto bad = validate_req_paths(req, ib_port());
    ASSERT_TRUE(bad.has_value()) << fault.name;
    EXPECT_EQ(bad->reason, fault.primary) << fault.name;
    EXPECT_EQ(ari_of(*bad), fault.ari) << fault.name;
  }
}

TEST(PathValidation, EachPathFaultOnTheAlternateUsesTheAlternateReason) {
  for (const PathFault& fault : path_faults()) {
    mad::Req req = ib_req();
    req.alternate = ib_path(kBaseLid + 1);
    fault.spoil(req.alternate);
    const auto bad = validate_req_paths(req, ib_port());
    ASSERT_TRUE(bad.has_value()) << fault.name;
    EXPECT_EQ(bad->reason, fault.alternate) << fault.name;
    EXPECT_EQ(ari_of(*bad), fault.ari) << fault.name;
  }
}

TEST(PathValidation, AbsentAlternateIsNotChecked) {
  mad::Req req = ib_req();
  req.alternate = {};  // all zero: as a path it would fail (routed, hop limit 0, GID 0 not ours)
  EXPECT_EQ(validate_req_paths(req, ib_port()), std::nullopt);
}

TEST(PathValidation, AlternateWithAnyAddressFieldSetIsChecked) {
  mad::Req req = ib_req();
  req.alternate.remote_port_lid = kBaseLid;  // the rest zero: routed, GID 0
  const auto bad = validate_req_paths(req, ib_port());
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, RejReason::invalid_alt_gid);
}

// ---- Order --------------------------------------------------------------------------------------

TEST(PathValidation, PrimaryThenMtuThenAlternate) {
  mad::Req req = ib_req();
  req.primary.packet_rate = 16;
  req.path_packet_payload_mtu = mad::MtuCode::mtu_4096;
  req.alternate = ib_path(kBaseLid + 9);
  EXPECT_EQ(validate_req_paths(req, ib_port())->reason, RejReason::invalid_packet_rate);
  req.primary.packet_rate = kRate40G;
  EXPECT_EQ(validate_req_paths(req, ib_port())->reason, RejReason::invalid_mtu);
  req.path_packet_payload_mtu = mad::MtuCode::mtu_2048;
  EXPECT_EQ(validate_req_paths(req, ib_port())->reason, RejReason::invalid_alt_lid);
}

// The GID and partition rules share reason and ARI, so their mutual order cannot be observed.
TEST(PathValidation, WithinAPathAddressThenLidThenHopLimitThenRate) {
  mad::Req req = ib_req();
  req.partition_key = 0x0002;  // two limited members
  req.primary.remote_port_lid = 0x0100;
  req.primary.packet_rate = 16;
  EXPECT_EQ(validate_req_paths(req, ib_port())->reason, RejReason::invalid_gid);
  req.partition_key = 0xFFFF;
  req.primary.hop_limit = 2;  // GRH inside the subnet: the GID is checked, the LID still is
  req.primary.remote_port_gid = kStrangerGid;
  EXPECT_EQ(validate_req_paths(req, ib_port())->reason, RejReason::invalid_gid);
  req.primary.remote_port_gid = kIbGid1;
  EXPECT_EQ(validate_req_paths(req, ib_port())->reason, RejReason::invalid_lid);
  req.primary.remote_port_lid = kBaseLid;
  req.primary.subnet_local = false;
  req.primary.hop_limit = 1;
  EXPECT_EQ(validate_req_paths(req, ib_port())->reason, RejReason::invalid_hop_limit);
  req.primary.hop_limit = 2;
  EXPECT_EQ(validate_req_paths(req, ib_port())->reason, RejReason::invalid_packet_rate);
}

}  // namespace
}  // namespace fastcm::engine
