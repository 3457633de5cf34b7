// The udp fabric over real loopback sockets: port attributes, MAD round trips with the sender's
// address, ICRC checked on IPv6 and counted unchecked on IPv4, every drop reason, unroutable
// sends, the rx event fd, and the errors open_udp_fabric reports.
#include "fabric/roce_udp/udp_fabric.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabric/roce_udp/icrc.h"
#include "fabric/roce_udp/rocev2_frame.h"
#include "tests/roce/sample_frames.h"
#include "tests/udp/udp_test_support.h"

namespace fastcm::roce {
namespace {

using test::cm_req_mad;
using test::open_udp_fabrics;
using test::wait_readable;

const Gid kHostA = ipv4_mapped_gid(0x7F000001);  // 127.0.0.1
const Gid kHostB = ipv4_mapped_gid(0x7F000002);  // 127.0.0.2
const Gid kLocal6 = Gid::from_parts(0, 1);       // ::1

MadPacket mad_to(const Gid& to, std::uint32_t comm_id) {
  MadPacket p;
  p.addr.grh.present = true;
  p.addr.grh.remote_gid = to;
  p.mad = cm_req_mad(comm_id);
  return p;
}

bool send_one(Fabric& fabric, const MadPacket& pkt) {
  const std::array<const MadPacket*, 1> burst{&pkt};
  return fabric.send_burst(0, burst) == 1;
}

// Receives exactly one datagram's outcome: waits for it, then drains the socket.
std::vector<MadPacket> receive(Fabric& fabric) {
  std::vector<MadPacket> got;
  if (!wait_readable(fabric.rx_event_fd(0))) return got;
  MadPacket in;
  const std::array<MadPacket*, 1> slot{&in};
  while (fabric.recv_burst(0, slot) == 1) got.push_back(in);
  return got;
}

UdpPortCounters counters(const Fabric& fabric) {
  const auto c = udp_port_counters(fabric, 0);
  EXPECT_TRUE(c.has_value());
  return c.value_or(UdpPortCounters{});
}

class UdpPair : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    fabrics_ = open_udp_fabrics({"127.0.0.1", "127.0.0.2"}, error);
    ASSERT_EQ(fabrics_.size(), 2u) << error;
  }
  Fabric& a() { return *fabrics_[0]; }
  Fabric& b() { return *fabrics_[1]; }

  std::vector<std::unique_ptr<Fabric>> fabrics_;
};

TEST_F(UdpPair, PortsAreRocePortsNamedByTheirAddress) {
  const PortAttr& port = a().ports()[0];
  ASSERT_EQ(a().ports().size(), 1u);
  EXPECT_EQ(port.port_num, 1);
  ASSERT_EQ(port.gids().size(), 1u);
  EXPECT_EQ(port.gids()[0], kHostA);
  EXPECT_EQ(port.port_guid, kHostA.interface_id());
  EXPECT_EQ(port.node_guid, port.port_guid);
  EXPECT_NE(port.node_guid, b().ports()[0].node_guid);
  EXPECT_EQ(port.lid, 0);
  EXPECT_EQ(port.link_layer, LinkLayer::ethernet);
  ASSERT_EQ(port.pkeys().size(), 1u);
  EXPECT_EQ(port.pkeys()[0], 0xFFFF);
  EXPECT_EQ(port.active_mtu, 3);
  EXPECT_EQ(port.ca.max_qp_rd_atom, 128);
  EXPECT_EQ(port.ca.max_qp_init_rd_atom, 128);
  EXPECT_EQ(port.ca.local_ca_ack_delay, 15);
}

TEST_F(UdpPair, AMadAndItsReplyCarryTheSendersAddress) {
  MadPacket out = mad_to(kHostB, 7);
  out.addr.grh.hop_limit = 9;
  out.addr.grh.traffic_class = 0x20;
  ASSERT_TRUE(send_one(a(), out));
  const std::vector<MadPacket> at_b = receive(b());
  ASSERT_EQ(at_b.size(), 1u);
  const MadAddress& from = at_b[0].addr;
  EXPECT_EQ(from.port_index, 0);
  EXPECT_EQ(from.remote_lid, 0);
  EXPECT_EQ(from.remote_qpn, kGsiQpn);
  EXPECT_EQ(from.remote_qkey, kGsiQKey);
  EXPECT_EQ(from.pkey_index, 0);
  EXPECT_TRUE(from.grh.present);
  EXPECT_EQ(from.grh.gid_index, 0);
  EXPECT_EQ(from.grh.remote_gid, kHostA);
  EXPECT_EQ(from.grh.hop_limit, 9);
  EXPECT_EQ(from.grh.traffic_class, 0x20);
  EXPECT_EQ(at_b[0].mad, out.mad);

  MadPacket reply = at_b[0];  // turned around as the engine answers: to where it came from
  reply.mad = cm_req_mad(8);
  ASSERT_TRUE(send_one(b(), reply));
  const std::vector<MadPacket> at_a = receive(a());
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].addr.grh.remote_gid, kHostB);
  EXPECT_EQ(at_a[0].mad, reply.mad);

  EXPECT_EQ(counters(a()).datagrams_sent, 1u);
  EXPECT_EQ(counters(b()).mads_received, 1u);
  EXPECT_EQ(counters(b()).icrc_unchecked, 1u);  // IPv4: the socket does not show the IP ID
}

TEST_F(UdpPair, ABurstArrivesWholeAndInOrder) {
  constexpr std::size_t kCount = 100;
  std::vector<MadPacket> out;
  for (std::uint32_t i = 0; i < kCount; ++i) out.push_back(mad_to(kHostB, i));
  std::vector<const MadPacket*> burst;
  for (const MadPacket& p : out) burst.push_back(&p);
  ASSERT_EQ(a().send_burst(0, burst), kCount);

  std::vector<MadPacket> in(kCount + 1);
  std::vector<MadPacket*> slots;
  for (MadPacket& p : in) slots.push_back(&p);
  std::size_t got = 0;
  while (got < kCount && wait_readable(b().rx_event_fd(0))) {
    got += b().recv_burst(0, std::span<MadPacket* const>(slots).subspan(got));
  }
  ASSERT_EQ(got, kCount);
  for (std::size_t i = 0; i < kCount; ++i) EXPECT_EQ(in[i].mad, out[i].mad) << "MAD " << i;
}

TEST_F(UdpPair, UnroutableMadsAreTakenAndCounted) {
  MadPacket no_grh = mad_to(kHostB, 1);
  no_grh.addr.grh.present = false;
  MadPacket other_family = mad_to(kLocal6, 2);
  MadPacket bad_pkey_index = mad_to(kHostB, 3);
  bad_pkey_index.addr.pkey_index = 1;
  MadPacket wide_qpn = mad_to(kHostB, 4);
  wide_qpn.addr.remote_qpn = 0x1000000;
  const MadPacket good = mad_to(kHostB, 5);
  const std::array<const MadPacket*, 5> burst{&no_grh, &other_family, &bad_pkey_index, &wide_qpn, &good};
  EXPECT_EQ(a().send_burst(0, burst), burst.size());
  EXPECT_EQ(counters(a()).send_unroutable, 4u);
  EXPECT_EQ(counters(a()).datagrams_sent, 1u);
  const std::vector<MadPacket> at_b = receive(b());
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].mad, good.mad);
}

TEST_F(UdpPair, ThePortIndexOutsideThePortsIsRefused) {
  const MadPacket good = mad_to(kHostB, 5);
  const std::array<const MadPacket*, 1> burst{&good};
  MadPacket in;
  const std::array<MadPacket*, 1> slot{&in};
  EXPECT_EQ(a().send_burst(1, burst), 0u);
  EXPECT_EQ(a().recv_burst(1, slot), 0u);
  EXPECT_EQ(a().rx_event_fd(1), -1);
  EXPECT_FALSE(a().arm_rx_event(1));
  EXPECT_FALSE(udp_port_counters(a(), 1).has_value());
}

TEST_F(UdpPair, TheRxEventFdWakesTheConsumer) {
  const int fd = b().rx_event_fd(0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(b().rx_event_fd(0), fd);  // stable
  ASSERT_TRUE(b().arm_rx_event(0));   // idle: may sleep
  EXPECT_FALSE(wait_readable(fd, 0));
  ASSERT_TRUE(send_one(a(), mad_to(kHostB, 1)));
  ASSERT_TRUE(wait_readable(fd)) << "the MAD did not wake the fd";
  EXPECT_FALSE(b().arm_rx_event(0));  // a MAD waits: must not sleep
  MadPacket in;
  const std::array<MadPacket*, 1> slot{&in};
  EXPECT_EQ(b().recv_burst(0, slot), 1u);
  EXPECT_TRUE(b().arm_rx_event(0));
}

TEST(UdpFabricOpen, ErrorsNameTheCauseAndTheFix) {
  std::string error;
  EXPECT_EQ(open_udp_fabric(UdpConfig{}, error), nullptr);
  EXPECT_NE(error.find("no address"), std::string::npos) << error;

  EXPECT_EQ(open_udp_fabric(UdpConfig{.addresses = {"mlx5_0"}}, error), nullptr);
  EXPECT_NE(error.find("'mlx5_0' is neither"), std::string::npos) << error;

  // 192.0.2.1 (TEST-NET-1) is on no interface of this host.
  EXPECT_EQ(open_udp_fabric(UdpConfig{.addresses = {"192.0.2.1"}, .udp_port = 0}, error), nullptr);
  EXPECT_NE(error.find("not an address of this host"), std::string::npos) << error;

  const std::uint16_t port = test::free_udp_port("127.0.0.1");
  ASSERT_NE(port, 0);
  EXPECT_EQ(open_udp_fabric(UdpConfig{.addresses = {"127.0.0.1", "127.0.0.1"}, .udp_port = port}, error), nullptr);
  EXPECT_NE(error.find("is taken"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line";
}

TEST(UdpFabricOpen, OnePortPerAddress) {
  std::string error;
  const auto fabrics = open_udp_fabrics({"127.0.0.1"}, error);
  ASSERT_EQ(fabrics.size(), 1u) << error;
  // A second fabric with two ports, on that same free port number, at other addresses.
  const std::uint16_t port = test::free_udp_port("127.0.0.3");
  const auto two = open_udp_fabric(UdpConfig{.addresses = {"127.0.0.3", "::1"}, .udp_port = port}, error);
  ASSERT_NE(two, nullptr) << error;
  ASSERT_EQ(two->ports().size(), 2u);
  EXPECT_EQ(two->ports()[0].port_num, 1);
  EXPECT_EQ(two->ports()[1].port_num, 2);
  EXPECT_EQ(two->ports()[1].gids()[0], kLocal6);
  EXPECT_EQ(two->ports()[1].node_guid, two->ports()[0].node_guid);
  EXPECT_NE(two->rx_event_fd(0), two->rx_event_fd(1));
}

// One IPv6 fabric on ::1 that talks to itself, and a plain socket that sends it hand-made
// datagrams: IPv6 shows every field the ICRC covers, so a correct ICRC can be made and a wrong one
// is caught.
class UdpIpv6 : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    auto fabrics = open_udp_fabrics({"::1"}, error);
    ASSERT_EQ(fabrics.size(), 1u) << error;
    fabric_ = std::move(fabrics.front());
    sockaddr_storage sa{};
    socklen_t length = sizeof sa;
    ASSERT_EQ(::getsockname(fabric_->rx_event_fd(0), reinterpret_cast<sockaddr*>(&sa), &length), 0);
    port_ = gid_port_of(sa)->port;
    raw_ = ::socket(AF_INET6, SOCK_DGRAM, 0);
    ASSERT_GE(raw_, 0);
    const socklen_t raw_length = sockaddr_of(kLocal6, 0, sa);
    ASSERT_EQ(::bind(raw_, reinterpret_cast<const sockaddr*>(&sa), raw_length), 0);
    length = sizeof sa;
    ASSERT_EQ(::getsockname(raw_, reinterpret_cast<sockaddr*>(&sa), &length), 0);
    raw_port_ = gid_port_of(sa)->port;
  }
  void TearDown() override {
    if (raw_ >= 0) ::close(raw_);
  }

  // A UDP payload from the plain socket with a correct ICRC, after `edit` changed the header or
  // MAD; `after_icrc` then changes the finished bytes.
  std::vector<std::uint8_t> datagram(const std::function<void(RoceGsiHeader&, std::array<std::uint8_t, kMadSize>&)>& edit,
                                     const std::function<void(std::vector<std::uint8_t>&)>& after_icrc = {}) const {
    RoceGsiHeader header;
    std::array<std::uint8_t, kMadSize> mad = cm_req_mad(3);
    if (edit) edit(header, mad);
    constexpr std::size_t kHeaders = kIpv6HeaderSize + kUdpHeaderSize;
    std::vector<std::uint8_t> ip(kHeaders + kUdpPayloadSize);
    EXPECT_EQ(write_ip_udp_headers(kLocal6, kLocal6, raw_port_, port_, ip), kHeaders);
    EXPECT_TRUE(write_gsi_payload(header, mad, std::span<std::uint8_t, kGsiHeadersSize + kMadSize>(
                                                   ip.data() + kHeaders, kGsiHeadersSize + kMadSize)));
    EXPECT_TRUE(write_icrc(ip));
    std::vector<std::uint8_t> payload(ip.begin() + kHeaders, ip.end());
    if (after_icrc) after_icrc(payload);
    return payload;
  }

  void send_raw(const std::vector<std::uint8_t>& payload) const {
    sockaddr_storage to{};
    const socklen_t length = sockaddr_of(kLocal6, port_, to);
    ASSERT_EQ(::sendto(raw_, payload.data(), payload.size(), 0, reinterpret_cast<const sockaddr*>(&to), length),
              static_cast<ssize_t>(payload.size()));
  }

  std::unique_ptr<Fabric> fabric_;
  std::uint16_t port_ = 0;
  int raw_ = -1;
  std::uint16_t raw_port_ = 0;
};

TEST_F(UdpIpv6, TheIcrcIsCheckedAndTheAddressCarriesTheGrh) {
  MadPacket out = mad_to(kLocal6, 11);
  out.addr.grh.traffic_class = 0x48;
  out.addr.grh.hop_limit = 3;
  ASSERT_TRUE(send_one(*fabric_, out));
  std::vector<MadPacket> got = receive(*fabric_);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].addr.grh.remote_gid, kLocal6);
  EXPECT_EQ(got[0].addr.grh.traffic_class, 0x48);
  EXPECT_EQ(got[0].addr.grh.hop_limit, 3);
  EXPECT_LE(got[0].addr.grh.flow_label, 0xFFFFFu);
  EXPECT_EQ(got[0].mad, out.mad);

  send_raw(datagram({}));  // a hand-made datagram from another UDP port: ICRC over its port
  got = receive(*fabric_);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].mad, cm_req_mad(3));

  const UdpPortCounters c = counters(*fabric_);
  EXPECT_EQ(c.mads_received, 2u);
  EXPECT_EQ(c.icrc_unchecked, 0u);
  EXPECT_EQ(c.drop_bad_icrc, 0u);
}

TEST_F(UdpIpv6, EveryBadDatagramIsDroppedAndCountedByReason) {
  using Header = RoceGsiHeader;
  using Mad = std::array<std::uint8_t, kMadSize>;
  struct Case {
    const char* name;
    std::vector<std::uint8_t> payload;
    std::uint64_t UdpPortCounters::*counter;
  };
  const std::vector<Case> cases = {
      {"short", std::vector<std::uint8_t>(10, 0x64), &UdpPortCounters::drop_bad_length},
      {"empty", {}, &UdpPortCounters::drop_bad_length},
      {"long", datagram({}, [](auto& p) { p.push_back(0); }), &UdpPortCounters::drop_bad_length},
      {"cut", datagram({}, [](auto& p) { p.pop_back(); }), &UdpPortCounters::drop_bad_length},
      {"RC SEND_ONLY", datagram({}, [](auto& p) { p[0] = 0x04; }), &UdpPortCounters::drop_not_ud_send_only},
      {"TVer 1", datagram({}, [](auto& p) { p[1] |= 0x01; }), &UdpPortCounters::drop_bad_bth},
      {"ICRC", datagram({}, [](auto& p) { p.back() ^= 0x01; }), &UdpPortCounters::drop_bad_icrc},
      {"MAD byte", datagram({}, [](auto& p) { p[100] ^= 0x80; }), &UdpPortCounters::drop_bad_icrc},
      {"QP 2", datagram([](Header& h, Mad&) { h.dest_qp = 2; }), &UdpPortCounters::drop_bad_qpn},
      {"Q_Key", datagram([](Header& h, Mad&) { h.qkey = 0x1234; }), &UdpPortCounters::drop_bad_qkey},
      {"P_Key", datagram([](Header& h, Mad&) { h.pkey = 0x8001; }), &UdpPortCounters::drop_bad_pkey},
      {"SMP", datagram([](Header&, Mad& m) { m[1] = 0x01; }), &UdpPortCounters::drop_not_cm},
  };
  for (const Case& c : cases) {
    const UdpPortCounters before = counters(*fabric_);
    send_raw(c.payload);
    EXPECT_TRUE(receive(*fabric_).empty()) << c.name;
    const UdpPortCounters after = counters(*fabric_);
    EXPECT_EQ(after.*c.counter, before.*c.counter + 1) << c.name;
    EXPECT_EQ(after.datagrams_received, before.datagrams_received + 1) << c.name;
    EXPECT_EQ(after.mads_received, before.mads_received) << c.name;
  }
  // A limited member of the default partition is accepted, and the port is still fine.
  send_raw(datagram([](Header& h, Mad&) { h.pkey = 0x7FFF; }));
  EXPECT_EQ(receive(*fabric_).size(), 1u);
}

}  // namespace
}  // namespace fastcm::roce
