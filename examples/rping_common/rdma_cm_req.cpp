#include "examples/rping_common/rdma_cm_req.h"

#include <algorithm>
#include <random>

#include "fabric/roce_udp/rocev2_frame.h"

namespace fastcm::examples {

namespace {

// The route's hop limit (IPv4's default TTL) and CMA_IBOE_PACKET_LIFETIME of kernel 6.1, which with
// the response timeout sets how often the REQ is sent again (2 x 1.07 s + 4.3 s).
constexpr std::uint8_t kRoceHopLimit = 64;
constexpr std::uint8_t kRocePacketLifeTime = 18;
constexpr PKey kDefaultPKey = 0xFFFF;
constexpr std::uint16_t kFirstEphemeralPort = 32768;
constexpr std::uint16_t kLastEphemeralPort = 60999;

rdma_cm::Ipv4Address last4(const Gid& g) noexcept { return {g.raw[12], g.raw[13], g.raw[14], g.raw[15]}; }

}  // namespace

ReqParams rdma_cm_req(const PortAttr& port, const RdmaCmTarget& to,
                      std::array<std::uint8_t, rdma_cm::kIpHeaderSize>& header) noexcept {
  ReqParams req;
  req.service_id = rdma_cm::service_id(rdma_cm::PortSpace::tcp, to.port);
  Path& p = req.primary;
  p.local_gid = to.source;
  p.remote_gid = to.target;
  p.hop_limit = kRoceHopLimit;
  p.subnet_local = false;  // rdma_cm sets Subnet Local only for a hop limit of 1 or less
  p.mtu = port.active_mtu;
  p.packet_life_time = kRocePacketLifeTime;
  p.port = port.port_num;
  p.pkey = kDefaultPKey;
  req.responder_resources = 1;
  req.initiator_depth = 1;
  req.remote_cm_response_timeout = kRdmaCmResponseTimeout;
  req.local_cm_response_timeout = kRdmaCmResponseTimeout;
  req.max_cm_retries = kRdmaCmMaxRetries;
  const rdma_cm::IpHeader h = roce::is_ipv4_mapped(to.source)
                                  ? rdma_cm::IpHeader::ipv4(last4(to.source), last4(to.target), to.source_port)
                                  : rdma_cm::IpHeader::ipv6(to.source.raw, to.target.raw, to.source_port);
  std::size_t used = 0;
  if (rdma_cm::encode_private_data(h, {}, header, used) == rdma_cm::HeaderStatus::ok) {
    req.private_data = std::span<const std::uint8_t>(header.data(), used);
  }
  return req;
}

std::optional<Gid> source_gid_for(const PortAttr& port, const Gid& target) noexcept {
  constexpr std::uint8_t kLinkLocalFirstByte = 0xfe;
  const auto gids = port.gids();
  const bool v4 = roce::is_ipv4_mapped(target);
  const auto same_kind = std::find_if(gids.begin(), gids.end(), [&](const Gid& g) {
    return roce::is_ipv4_mapped(g) == v4 && g.raw[0] != kLinkLocalFirstByte;
  });
  if (same_kind == gids.end()) return std::nullopt;
  return *same_kind;
}

std::uint16_t random_source_port() {
  std::mt19937 random{std::random_device{}()};
  return static_cast<std::uint16_t>(
      std::uniform_int_distribution<unsigned>(kFirstEphemeralPort, kLastEphemeralPort)(random));
}

}  // namespace fastcm::examples
