// What the kernel puts on the wire for the udp fabric: a packet socket on `lo` captures the
// datagrams with their IP headers, and the ICRC the fabric computed must be the ICRC of the header
// the kernel actually wrote (IPv4: ID 0 and DF, which a UDP socket cannot show the receiver), as a
// Linux rxe receiver computes it. Needs CAP_NET_RAW; skipped without it.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "fabric/roce_udp/icrc.h"
#include "fabric/roce_udp/rocev2_frame.h"
#include "tests/roce/sample_frames.h"
#include "tests/udp/udp_test_support.h"

namespace fastcm::roce {
namespace {

// A packet socket on the loopback interface, from the IP header on (SOCK_DGRAM: no link header).
class LoopbackCapture {
 public:
  LoopbackCapture() {
    fd_ = ::socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd_ < 0) return;
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_ALL);
    at.sll_ifindex = static_cast<int>(::if_nametoindex("lo"));
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~LoopbackCapture() {
    if (fd_ >= 0) ::close(fd_);
  }
  LoopbackCapture(const LoopbackCapture&) = delete;
  LoopbackCapture& operator=(const LoopbackCapture&) = delete;

  [[nodiscard]] bool open() const { return fd_ >= 0; }

  // The first captured IP packet of UDP destination port `port` (other tests share `lo`), waiting
  // up to 5 s for it.
  [[nodiscard]] std::optional<std::vector<std::uint8_t>> next_to_port(std::uint16_t port) const {
    std::vector<std::uint8_t> packet(2048);
    while (test::wait_readable(fd_)) {
      const ssize_t n = ::recv(fd_, packet.data(), packet.size(), 0);
      if (n <= 0) continue;
      packet.resize(static_cast<std::size_t>(n));
      const bool v4 = (packet[0] >> 4) == 4;
      const std::size_t ip_header = v4 ? (packet[0] & 0x0FU) * 4U : kIpv6HeaderSize;
      const std::uint8_t protocol = v4 ? packet[9] : packet[6];
      if (packet.size() >= ip_header + kUdpHeaderSize && protocol == 17 &&
          ((packet[ip_header + 2] << 8) | packet[ip_header + 3]) == port) {
        return packet;
      }
      packet.resize(2048);
    }
    return std::nullopt;
  }

 private:
  int fd_ = -1;
};

std::uint32_t icrc_on_wire(const std::vector<std::uint8_t>& packet) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < kIcrcSize; ++i) v |= std::uint32_t{packet[packet.size() - kIcrcSize + i]} << (8 * i);
  return v;
}

class UdpWire : public ::testing::TestWithParam<const char*> {};

TEST_P(UdpWire, TheIcrcCoversTheHeaderTheKernelWrote) {
  const LoopbackCapture capture;
  if (!capture.open()) GTEST_SKIP() << "a packet socket on lo needs CAP_NET_RAW";
  std::string error;
  const auto fabrics = test::open_udp_fabrics({GetParam()}, error);
  ASSERT_EQ(fabrics.size(), 1u) << error;
  Fabric& fabric = *fabrics.front();
  MadPacket out;
  out.addr.grh.present = true;
  out.addr.grh.remote_gid = fabric.ports()[0].gids()[0];  // to itself
  out.addr.grh.hop_limit = 7;
  out.addr.grh.traffic_class = 0x10;
  out.mad = test::cm_req_mad(5);
  const std::array<const MadPacket*, 1> burst{&out};
  ASSERT_EQ(fabric.send_burst(0, burst), 1u);

  sockaddr_storage sa{};
  socklen_t length = sizeof sa;
  ASSERT_EQ(::getsockname(fabric.rx_event_fd(0), reinterpret_cast<sockaddr*>(&sa), &length), 0);
  const std::optional<std::vector<std::uint8_t>> packet = capture.next_to_port(gid_port_of(sa)->port);
  ASSERT_TRUE(packet.has_value()) << "no datagram seen on lo";
  const bool v4 = ((*packet)[0] >> 4) == 4;
  if (v4) {
    EXPECT_EQ((*packet)[4] << 8 | (*packet)[5], 0) << "IP ID";
    EXPECT_EQ((*packet)[6] << 8 | (*packet)[7], 0x4000) << "flags: DF only";
    EXPECT_EQ((*packet)[8], 7) << "TTL from the GRH hop limit";
    EXPECT_EQ((*packet)[1], 0x10) << "TOS from the GRH traffic class";
  } else {
    EXPECT_EQ((*packet)[7], 7) << "hop limit";
    EXPECT_EQ((((*packet)[0] & 0x0F) << 4) | ((*packet)[1] >> 4), 0x10) << "traffic class";
  }
  const std::vector<std::uint8_t> covered(packet->begin(), packet->end() - kIcrcSize);
  EXPECT_EQ(compute_icrc(covered), icrc_on_wire(*packet));
}

INSTANTIATE_TEST_SUITE_P(Families, UdpWire, ::testing::Values("127.0.0.1", "::1"),
                         [](const auto& param) { return std::string(param.index == 0 ? "ipv4" : "ipv6"); });

}  // namespace
}  // namespace fastcm::roce
