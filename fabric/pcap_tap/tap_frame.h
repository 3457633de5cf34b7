// How the pcap tap puts a CM MAD on a capture's wire: a RoCEv2 Ethernet frame (Ethernet / IPv4 or
// IPv6 / UDP 4791 / BTH / DETH / MAD / ICRC), on every kind of port, so that one Wireshark
// dissector path reads every capture and libpcap sees a single link type.
//
// Where the fabric has the real addresses they are used: a MAD with a GRH (every RoCE MAD, and
// InfiniBand MADs routed by GID) carries the local GID (the port's GID table entry the MAD names)
// and the peer's GID as its IP addresses. InfiniBand has more than RoCE carries, and a MAD without
// a GRH has no GIDs; the mapping for those parts is:
//   - a MAD without a GRH: each side's address is the link-local IPv6 address fe80::LID (the
//     port's base LID on our side, the MAD's remote LID on the peer's);
//   - MAC addresses: 02:00:00:00 followed by the side's LID (InfiniBand) or 02 followed by the
//     last five bytes of its GID (RoCE): locally administered, stable per side;
//   - the service level, on InfiniBand ports: an 802.1Q tag whose VLAN ID is the SL (0-15);
//   - the BTH: the P_Key from the port's table entry the MAD names, PSN 0, the QPs and Q_Key of the
//     MAD's address (our side is QP1 with the GSI Q_Key).
//
// Thread contract: a pure function over caller memory; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "fabric/pcap_tap/pcapng_writer.h"
#include "fabric/roce_udp/rocev2_frame.h"
#include "fastcm/fabric.h"

namespace fastcm::pcap_tap {

inline constexpr std::size_t kVlanTagSize = 4;
inline constexpr std::size_t kMaxTapFrameSize = roce::kMaxRocev2FrameSize + kVlanTagSize;

// Writes `pkt`, received on (inbound) or sent from (outbound) `port`, as a frame into `out` and
// returns its length; 0 when a field does not fit the frame (a QPN above 24 bits).
[[nodiscard]] std::size_t build_tap_frame(const PortAttr& port, const MadPacket& pkt,
                                          Direction direction,
                                          std::span<std::uint8_t, kMaxTapFrameSize> out) noexcept;

}  // namespace fastcm::pcap_tap
