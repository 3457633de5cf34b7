// rdma_cm interoperability (IBTA Vol. 1 Annex A11, as Linux rdma_cm speaks it): port-space
// service IDs, the private-data IP header byte for byte, and connections both ways between an
// rdma_cm-style peer and fastcm.
#include "fastcm/rdma_cm.h"

#include <rdma/rdma_user_cm.h>  // the kernel's enum rdma_ucm_port_space: RDMA_PS_*

#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

using rdma_cm::HeaderStatus;
using rdma_cm::IpHeader;
using rdma_cm::IpVersion;
using rdma_cm::PortSpace;
using rdma_cm::ServiceAddress;
using Bytes = std::vector<std::uint8_t>;

static_assert(static_cast<std::uint16_t>(PortSpace::ipoib) == RDMA_PS_IPOIB);
static_assert(static_cast<std::uint16_t>(PortSpace::tcp) == RDMA_PS_TCP);
static_assert(static_cast<std::uint16_t>(PortSpace::udp) == RDMA_PS_UDP);
static_assert(static_cast<std::uint16_t>(PortSpace::ib) == RDMA_PS_IB);

constexpr std::array<PortSpace, 4> kPortSpaces{PortSpace::ipoib, PortSpace::tcp, PortSpace::udp, PortSpace::ib};

// 2001:db8::<last>
rdma_cm::Ipv6Address doc_ipv6(std::uint8_t last) {
  rdma_cm::Ipv6Address a{0x20, 0x01, 0x0d, 0xb8};
  a[15] = last;
  return a;
}

Bytes encoded(const IpHeader& header, std::span<const std::uint8_t> consumer) {
  Bytes out(rdma_cm::kIpHeaderSize + consumer.size());
  std::size_t used = 0;
  EXPECT_EQ(rdma_cm::encode_private_data(header, consumer, out, used), HeaderStatus::ok);
  EXPECT_EQ(used, out.size());
  return out;
}

// ---- service IDs ----------------------------------------------------------------------------------

TEST(RdmaCmServiceId, PortSpaceAndPortAsRdmaCmComputesThem) {
  // rdma_get_service_id(): (port space << 16) + port.
  EXPECT_EQ(rdma_cm::service_id(PortSpace::tcp, 4791), 0x0000'0000'0106'12B7u);
  EXPECT_EQ(rdma_cm::service_id(PortSpace::udp, 7471), 0x0000'0000'0111'1D2Fu);
  EXPECT_EQ(rdma_cm::service_id(PortSpace::ib, 0), 0x0000'0000'013F'0000u);
  EXPECT_EQ(rdma_cm::service_id(PortSpace::ipoib, 0xFFFF), 0x0000'0000'0002'FFFFu);
  // librdmacm's RDMA_IB_IP_PS_TCP / _UDP / RDMA_IB_PS_IB are the port-0 IDs.
  EXPECT_EQ(rdma_cm::service_id(PortSpace::tcp, 0), 0x0000'0000'0106'0000u);
  EXPECT_EQ(rdma_cm::service_id(PortSpace::udp, 0), 0x0000'0000'0111'0000u);
}

TEST(RdmaCmServiceId, ParsesBackEveryPortSpaceAndPort) {
  for (const PortSpace space : kPortSpaces) {
    for (const std::uint16_t port : std::array<std::uint16_t, 5>{0, 1, 4791, 0x8000, 0xFFFF}) {
      const auto parsed = rdma_cm::parse_service_id(rdma_cm::service_id(space, port));
      ASSERT_TRUE(parsed.has_value()) << static_cast<int>(space) << " " << port;
      EXPECT_EQ(*parsed, (ServiceAddress{space, port}));
    }
  }
}

TEST(RdmaCmServiceId, OtherIdsAreNotRdmaCm) {
  EXPECT_EQ(rdma_cm::parse_service_id(kServiceId), std::nullopt);
  EXPECT_EQ(rdma_cm::parse_service_id(0), std::nullopt);                       // port space 0
  EXPECT_EQ(rdma_cm::parse_service_id(0x0000'0000'0107'12B7), std::nullopt);  // protocol 7
  EXPECT_EQ(rdma_cm::parse_service_id(0x0000'0000'0006'12B7), std::nullopt);  // no 0x01 above TCP
  EXPECT_EQ(rdma_cm::parse_service_id(0x0000'0001'0106'12B7), std::nullopt);  // a bit above 31
  EXPECT_EQ(rdma_cm::parse_service_id(0x8000'0000'0106'12B7), std::nullopt);
}

TEST(RdmaCmServiceId, AllPortsMaskKeepsThePortSpaceAndDropsThePort) {
  EXPECT_EQ(rdma_cm::kAllPortsMask, 0xFFFF'FFFF'FFFF'0000u);  // RDMA_IB_IP_PS_MASK
  for (const std::uint16_t port : std::array<std::uint16_t, 3>{0, 4791, 0xFFFF}) {
    EXPECT_EQ(rdma_cm::service_id(PortSpace::tcp, port) & rdma_cm::kAllPortsMask,
              rdma_cm::service_id(PortSpace::tcp, 0));
    EXPECT_NE(rdma_cm::service_id(PortSpace::udp, port) & rdma_cm::kAllPortsMask,
              rdma_cm::service_id(PortSpace::tcp, 0));
  }
}

// ---- the IP header -------------------------------------------------------------------------------

// Hand-derived from struct cma_hdr (cma.c): version 0x00; IP version in the top nibble of byte 1;
// the source port big-endian; then source and destination addresses of 16 bytes each, an IPv4 one
// in the last 4 (union cma_ip_addr: pad[3], addr); the consumer's data after byte 36.
TEST(RdmaCmHeader, Ipv4KnownBytes) {
  const IpHeader h = IpHeader::ipv4({192, 0, 2, 1}, {198, 51, 100, 7}, 0x1234);
  const std::array<std::uint8_t, 2> consumer{0xCA, 0xFE};
  const Bytes expected{0x00, 0x40, 0x12, 0x34,                                     //
                       0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1,           //
                       0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 198, 51, 100, 7,        //
                       0xCA, 0xFE};
  EXPECT_EQ(encoded(h, consumer), expected);
}

TEST(RdmaCmHeader, Ipv6KnownBytes) {
  const IpHeader h = IpHeader::ipv6(doc_ipv6(1), doc_ipv6(2), 4791);
  const Bytes expected{0x00, 0x60, 0x12, 0xB7,                                                //
                       0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,            //
                       0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  EXPECT_EQ(encoded(h, {}), expected);
}

TEST(RdmaCmHeader, RoundTripsIpv4AndIpv6WithConsumerData) {
  std::array<std::uint8_t, rdma_cm::kMaxReqConsumerData> consumer{};
  std::iota(consumer.begin(), consumer.end(), std::uint8_t{0x80});
  for (const IpHeader& h : {IpHeader::ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 50000),
                            IpHeader::ipv6(doc_ipv6(0x11), doc_ipv6(0x22), 1)}) {
    const Bytes wire = encoded(h, consumer);
    ASSERT_EQ(wire.size(), kMaxReqPrivateData);
    IpHeader back;
    std::span<const std::uint8_t> data;
    ASSERT_EQ(rdma_cm::decode_private_data(wire, back, data), HeaderStatus::ok);
    EXPECT_EQ(back, h);
    EXPECT_EQ(data.data(), wire.data() + rdma_cm::kIpHeaderSize);  // a view into the input
    EXPECT_TRUE(std::equal(data.begin(), data.end(), consumer.begin(), consumer.end()));
  }
  const IpHeader v4 = IpHeader::ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 50000);
  EXPECT_EQ(v4.src_ipv4(), (rdma_cm::Ipv4Address{10, 0, 0, 1}));
  EXPECT_EQ(v4.dst_ipv4(), (rdma_cm::Ipv4Address{10, 0, 0, 2}));
}

TEST(RdmaCmHeader, EncodeNeedsRoomForHeaderAndDataAndWritesNothingOtherwise) {
  const IpHeader h = IpHeader::ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 7);
  const std::array<std::uint8_t, rdma_cm::kMaxReqConsumerData + 1> one_too_many{};
  std::array<std::uint8_t, kMaxReqPrivateData> out{};
  out.fill(0xEE);
  std::size_t used = 99;
  EXPECT_EQ(rdma_cm::encode_private_data(h, one_too_many, out, used), HeaderStatus::buffer_too_small);
  EXPECT_EQ(used, 0u);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 0xEE; }));
  EXPECT_EQ(rdma_cm::encode_private_data(h, {}, std::span(out).first(rdma_cm::kIpHeaderSize - 1), used),
            HeaderStatus::buffer_too_small);

  // Exactly full; the bytes after `used` of a larger buffer stay as they were.
  EXPECT_EQ(rdma_cm::encode_private_data(h, std::span(one_too_many).first(rdma_cm::kMaxReqConsumerData), out, used),
            HeaderStatus::ok);
  EXPECT_EQ(used, kMaxReqPrivateData);
  out.fill(0xEE);
  EXPECT_EQ(rdma_cm::encode_private_data(h, {}, out, used), HeaderStatus::ok);
  EXPECT_EQ(used, rdma_cm::kIpHeaderSize);
  EXPECT_EQ(out[rdma_cm::kIpHeaderSize], 0xEE);
}

TEST(RdmaCmHeader, EncodeRefusesAnIpVersionOtherThan4Or6) {
  for (const std::uint8_t v : std::array<std::uint8_t, 3>{0, 5, 0x14}) {
    IpHeader h = IpHeader::ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 7);
    h.ip_version = static_cast<IpVersion>(v);
    std::array<std::uint8_t, kMaxReqPrivateData> out{};
    std::size_t used = 99;
    EXPECT_EQ(rdma_cm::encode_private_data(h, {}, out, used), HeaderStatus::bad_ip_version) << int{v};
    EXPECT_EQ(used, 0u);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 0; }));
  }
}

TEST(RdmaCmHeader, DecodeErrorsAreTypedAndLeaveTheOutputsAlone) {
  const Bytes good = encoded(IpHeader::ipv6(doc_ipv6(1), doc_ipv6(2), 4791), {});
  const IpHeader untouched = IpHeader::ipv4({1, 2, 3, 4}, {5, 6, 7, 8}, 9);
  const std::array<std::uint8_t, 1> sentinel{0x5A};
  auto decode = [&](const Bytes& wire) {
    IpHeader h = untouched;
    std::span<const std::uint8_t> data = sentinel;
    const HeaderStatus s = rdma_cm::decode_private_data(wire, h, data);
    if (s != HeaderStatus::ok) {
      EXPECT_EQ(h, untouched);
      EXPECT_EQ(data.data(), sentinel.data());
    }
    return s;
  };
  EXPECT_EQ(decode(good), HeaderStatus::ok);
  EXPECT_EQ(decode(Bytes(good.begin(), good.end() - 1)), HeaderStatus::too_short);
  EXPECT_EQ(decode({}), HeaderStatus::too_short);

  Bytes bad_version = good;
  bad_version[0] = 0x10;  // Wireshark would show major version 1
  EXPECT_EQ(decode(bad_version), HeaderStatus::bad_version);
  bad_version[1] = 0x50;  // the version is checked first, as Linux does
  EXPECT_EQ(decode(bad_version), HeaderStatus::bad_version);

  for (const std::uint8_t ip_byte : std::array<std::uint8_t, 3>{0x00, 0x50, 0xF6}) {
    Bytes bad_ip = good;
    bad_ip[1] = ip_byte;
    EXPECT_EQ(decode(bad_ip), HeaderStatus::bad_ip_version) << int{ip_byte};
  }
}

TEST(RdmaCmHeader, DecodeIgnoresTheReservedNibbleAndKeepsIpv4PadAsReceived) {
  Bytes wire = encoded(IpHeader::ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 7), {});
  wire[1] = 0x4F;   // reserved low nibble set: Linux reads only the top one
  wire[4] = 0xAA;   // a pad byte before the IPv4 source address
  IpHeader h;
  std::span<const std::uint8_t> data;
  ASSERT_EQ(rdma_cm::decode_private_data(wire, h, data), HeaderStatus::ok);
  EXPECT_EQ(h.ip_version, IpVersion::v4);
  EXPECT_EQ(h.src_ipv4(), (rdma_cm::Ipv4Address{10, 0, 0, 1}));
  EXPECT_EQ(h.src_addr[0], 0xAA);
  EXPECT_TRUE(data.empty());
}

TEST(RdmaCmHeader, StatusNames) {
  EXPECT_EQ(rdma_cm::to_string(HeaderStatus::ok), "ok");
  EXPECT_EQ(rdma_cm::to_string(HeaderStatus::buffer_too_small), "buffer_too_small");
  EXPECT_EQ(rdma_cm::to_string(HeaderStatus::too_short), "too_short");
  EXPECT_EQ(rdma_cm::to_string(HeaderStatus::bad_version), "bad_version");
  EXPECT_EQ(rdma_cm::to_string(HeaderStatus::bad_ip_version), "bad_ip_version");
  EXPECT_EQ(rdma_cm::kMaxReqConsumerData, 56u);
  EXPECT_EQ(rdma_cm::kMaxSidrReqConsumerData, 180u);
}

// ---- connections -----------------------------------------------------------------------------------

// The server also listens on every port of the TCP port space, as a fastcm service that rdma_cm
// clients reach; it accepts every REQ (ConnectScenario), the client completes with an RTU.
class RdmaCmConnect : public ConnectScenario {
 protected:
  void SetUp() override {
    ConnectScenario::SetUp();
    ListenParams lp;
    lp.service_id = rdma_cm::service_id(PortSpace::tcp, 0);
    lp.service_mask = rdma_cm::kAllPortsMask;
    lp.delivery = server().delivery();
    ASSERT_EQ(server().engine().listen(lp, tcp_listen_), Status::ok);
  }

  // A REQ as rdma_cm sends it: to `port` of `space`, private data = the IP header + `consumer`.
  ReqParams rdma_cm_req(PortSpace space, std::uint16_t port, const IpHeader& header,
                        std::span<const std::uint8_t> consumer) {
    ReqParams p = req_params();
    p.service_id = rdma_cm::service_id(space, port);
    std::size_t used = 0;
    EXPECT_EQ(rdma_cm::encode_private_data(header, consumer, rdma_cm_private_data_, used), HeaderStatus::ok);
    p.private_data = std::span(rdma_cm_private_data_).first(used);
    return p;
  }

  // Connects with an rdma_cm REQ to TCP port 4791 and returns the server's REQ event.
  RecordedEvent connect_rdma_cm(const IpHeader& header, std::span<const std::uint8_t> consumer) {
    connect(rdma_cm_req(PortSpace::tcp, 4791, header, consumer));
    cluster_.run_for(Cluster::kSecond);
    EXPECT_EQ(state_of(client(), client_id_), "established");
    EXPECT_EQ(state_of(server(), server_id_), "established");
    EXPECT_EQ(server().count(EventType::req_received), 1u);
    return server().of(EventType::req_received).at(0);
  }

  Id tcp_listen_;
  std::array<std::uint8_t, kMaxReqPrivateData> rdma_cm_private_data_{};
};

// The server reads the client's addresses, port and data from the REQ, as rdma_cm's
// cma_save_ip_info() does on a listener.
void expect_server_sees(const RecordedEvent& req, Id tcp_listen, const IpHeader& sent,
                        std::span<const std::uint8_t> consumer) {
  const auto& params = std::get<ReqReceived>(req.params);
  EXPECT_EQ(params.listen_id, tcp_listen);
  EXPECT_EQ(rdma_cm::parse_service_id(params.service_id), (ServiceAddress{PortSpace::tcp, 4791}));
  IpHeader seen;
  std::span<const std::uint8_t> data;
  ASSERT_EQ(rdma_cm::decode_private_data(req.private_data, seen, data), HeaderStatus::ok);
  EXPECT_EQ(seen, sent);
  ASSERT_EQ(data.size(), rdma_cm::kMaxReqConsumerData);  // the wire carries the full 92 bytes
  EXPECT_TRUE(std::equal(consumer.begin(), consumer.end(), data.begin()));
  EXPECT_TRUE(std::all_of(data.begin() + static_cast<std::ptrdiff_t>(consumer.size()), data.end(),
                          [](std::uint8_t b) { return b == 0; }));
}

TEST_F(RdmaCmConnect, Ipv4ClientReachesAPortSpaceListen) {
  const IpHeader sent = IpHeader::ipv4({192, 168, 7, 1}, {192, 168, 7, 2}, 40001);
  const std::array<std::uint8_t, 5> hello{'h', 'e', 'l', 'l', 'o'};
  const RecordedEvent req = connect_rdma_cm(sent, hello);
  expect_server_sees(req, tcp_listen_, sent, hello);
  IpHeader seen;
  std::span<const std::uint8_t> data;
  ASSERT_EQ(rdma_cm::decode_private_data(req.private_data, seen, data), HeaderStatus::ok);
  EXPECT_EQ(seen.src_ipv4(), (rdma_cm::Ipv4Address{192, 168, 7, 1}));
  EXPECT_EQ(seen.dst_ipv4(), (rdma_cm::Ipv4Address{192, 168, 7, 2}));
  EXPECT_EQ(seen.src_port, 40001);
}

TEST_F(RdmaCmConnect, Ipv6ClientReachesAPortSpaceListen) {
  const IpHeader sent = IpHeader::ipv6(doc_ipv6(0x0A), doc_ipv6(0x0B), 0xFFFF);
  const std::array<std::uint8_t, 3> data{1, 2, 3};
  expect_server_sees(connect_rdma_cm(sent, data), tcp_listen_, sent, data);
}

TEST_F(RdmaCmConnect, ThePortSpaceListenTakesEveryPortOfItsSpaceOnly) {
  const IpHeader h = IpHeader::ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 1234);
  connect(rdma_cm_req(PortSpace::tcp, 20049, h, {}));
  cluster_.run_for(Cluster::kSecond);
  ASSERT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(std::get<ReqReceived>(server().of(EventType::req_received)[0].params).listen_id, tcp_listen_);

  // The same port in the UDP port space is another service: nobody listens there.
  ReqParams udp_req = rdma_cm_req(PortSpace::udp, 20049, h, {});
  udp_req.qpn = kClientQpn + 1;  // not the connected QP: that would be a stale connection
  const Id udp = connect(udp_req);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(server().count(EventType::req_received), 1u);
  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  EXPECT_EQ(std::get<RejReceived>(client().of(EventType::rej_received)[0].params).reason, 8);  // invalid SID
  EXPECT_EQ(state_of(client(), udp), "idle");
}

// The reverse: a fastcm client's REQ, checked the way Linux' rdma_cm checks one for its listener
// (cma.c), byte for byte against what the client put in, with no fastcm decoder in the way.
TEST_F(RdmaCmConnect, FastcmReqIsOneAnRdmaCmListenerAccepts) {
  std::array<std::uint8_t, rdma_cm::kMaxReqConsumerData> consumer{};
  std::iota(consumer.begin(), consumer.end(), std::uint8_t{1});
  const IpHeader sent = IpHeader::ipv4({10, 1, 2, 3}, {10, 1, 2, 4}, 50000);
  const RecordedEvent req = connect_rdma_cm(sent, consumer);

  const auto& params = std::get<ReqReceived>(req.params);
  EXPECT_EQ(params.qp_type, QpType::rc);  // cma_check_req_qp_type(): the TCP port space is RC
  const std::uint64_t sid = params.service_id;
  EXPECT_EQ(sid >> 32, 0u);
  EXPECT_EQ((sid >> 16) & 0xFFFF, std::uint64_t{RDMA_PS_TCP});  // rdma_ps_from_service_id()
  EXPECT_EQ(sid & 0xFFFF, 4791u);                                // cma_port_from_service_id()
  const std::vector<std::uint8_t>& pd = req.private_data;
  ASSERT_EQ(pd.size(), kMaxReqPrivateData);
  EXPECT_EQ(pd[0], 0x00);     // CMA_VERSION
  EXPECT_EQ(pd[1] >> 4, 4);   // cma_get_ip_ver()
  EXPECT_EQ(pd[2] << 8 | pd[3], 50000);
  EXPECT_EQ(Bytes(pd.begin() + 16, pd.begin() + 20), (Bytes{10, 1, 2, 3}));
  EXPECT_EQ(Bytes(pd.begin() + 32, pd.begin() + 36), (Bytes{10, 1, 2, 4}));
  EXPECT_TRUE(std::equal(consumer.begin(), consumer.end(), pd.begin() + 36, pd.end()));
}

}  // namespace
}  // namespace fastcm::test
