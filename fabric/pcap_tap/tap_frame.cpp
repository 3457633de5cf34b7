#include "fabric/pcap_tap/tap_frame.h"

#include <cstring>

namespace fastcm::pcap_tap {

namespace {

constexpr std::uint16_t kEtherTypeVlan = 0x8100;
constexpr std::size_t kMacPairSize = 12;
constexpr std::uint16_t kUdpSourcePortBase = 0xC000;  // flow entropy: one flow per local port

Gid lid_address(Lid lid) {
  Gid g;
  g.raw[0] = 0xFE;
  g.raw[1] = 0x80;
  g.raw[14] = static_cast<std::uint8_t>(lid >> 8);
  g.raw[15] = static_cast<std::uint8_t>(lid);
  return g;
}

roce::MacAddress mac_of(LinkLayer link, Lid lid, const Gid& gid) {
  roce::MacAddress mac{0x02};
  if (link == LinkLayer::infiniband) {
    mac[4] = static_cast<std::uint8_t>(lid >> 8);
    mac[5] = static_cast<std::uint8_t>(lid);
  } else {
    std::memcpy(mac.data() + 1, gid.raw.data() + 11, 5);
  }
  return mac;
}

}  // namespace

std::size_t build_tap_frame(const PortAttr& port, const MadPacket& pkt, Direction direction,
                            std::span<std::uint8_t, kMaxTapFrameSize> out) noexcept {
  const MadAddress& a = pkt.addr;
  const std::span<const Gid> gids = port.gids();
  const bool by_gid = a.grh.present && a.grh.gid_index < gids.size() &&
                      roce::is_ipv4_mapped(gids[a.grh.gid_index]) ==
                          roce::is_ipv4_mapped(a.grh.remote_gid);
  roce::RoceEndpoint local{.mac = {}, .gid = by_gid ? gids[a.grh.gid_index] : lid_address(port.lid)};
  roce::RoceEndpoint peer{.mac = {}, .gid = by_gid ? a.grh.remote_gid : lid_address(a.remote_lid)};
  local.mac = mac_of(port.link_layer, port.lid, local.gid);
  peer.mac = mac_of(port.link_layer, a.remote_lid, peer.gid);

  const bool outbound = direction == Direction::outbound;
  roce::RoceGsiHeader header;
  header.udp_src_port = static_cast<std::uint16_t>(kUdpSourcePortBase + port.port_num);
  const std::span<const PKey> pkeys = port.pkeys();
  header.pkey = a.pkey_index < pkeys.size() ? pkeys[a.pkey_index] : PKey{0xFFFF};
  header.dest_qp = outbound ? a.remote_qpn : kGsiQpn;
  header.src_qp = outbound ? kGsiQpn : a.remote_qpn;
  header.qkey = outbound ? a.remote_qkey : kGsiQKey;

  const bool tagged = port.link_layer == LinkLayer::infiniband;
  const std::span<std::uint8_t> frame_area = tagged ? std::span<std::uint8_t>(out).subspan(kVlanTagSize)
                                                    : std::span<std::uint8_t>(out);
  const std::size_t n = roce::build_rocev2_frame(outbound ? local : peer, outbound ? peer : local,
                                                 header, pkt.mad, frame_area);
  if (n == 0 || !tagged) return n;
  // Move the MAC pair to the front and tag the frame: VLAN ID = SL (the ICRC does not cover the
  // Ethernet header, so it stays valid).
  std::memmove(out.data(), out.data() + kVlanTagSize, kMacPairSize);
  const std::uint16_t tci = a.sl & 0x0F;
  out[kMacPairSize] = static_cast<std::uint8_t>(kEtherTypeVlan >> 8);
  out[kMacPairSize + 1] = static_cast<std::uint8_t>(kEtherTypeVlan);
  out[kMacPairSize + 2] = static_cast<std::uint8_t>(tci >> 8);
  out[kMacPairSize + 3] = static_cast<std::uint8_t>(tci);
  return n + kVlanTagSize;
}

}  // namespace fastcm::pcap_tap
