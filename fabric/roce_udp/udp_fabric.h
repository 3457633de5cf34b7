// The `udp` fabric: CM MADs as RoCEv2 packets (BTH UD SEND_ONLY to QP1, DETH with the GSI Q_Key,
// ICRC) carried in UDP datagrams, one socket per local IPv4 or IPv6 address. Peers are Linux
// Soft-RoCE (rxe) devices, whose kernel CM talks to QP1 over UDP port 4791, or other udp fabrics.
//
// Ports. Port i (port_num i + 1) is config.addresses[i], with the attributes of a RoCE port:
//   - GID table: exactly one entry, index 0 = the address as a GID (IPv4 a.b.c.d as the
//     IPv4-mapped ::ffff:a.b.c.d, IPv6 as itself), the RoCEv2 GID rxe forms for that address.
//     rxe's table also holds the link-local default GID (fe80:: + the MAC's EUI-64) and the RoCE v1
//     twins of every entry; a socket bound to one address can send from no other, so none of those
//     is listed.
//   - port GUID: the GID's interface identifier (its low 64 bits; for fe80:: + EUI-64 that is the
//     GUID rxe derives from the MAC); node GUID: port 0's port GUID. Two fabrics on different
//     addresses so have different CA GUIDs, which a peer's stale-connection checks rely on.
//   - no LIDs (0, LMC 0, SM LID 0), link layer Ethernet; P_Key table {0xFFFF}.
//   - MTU code 3 (1024, what rxe gives on a 1500-byte Ethernet netdev), rate code 3 (10 Gb/s:
//     a socket has no link speed to report), CA limits as rxe reports them: 128 outstanding RDMA
//     reads/atomics as responder and as initiator, local CA ACK delay 15.
//
// Sending. Each MAD goes from an unconnected socket bound to address:udp_port to the remote GID's
// IP at udp_port, with IP_PMTUDISC_DO: the kernel then sets DF and writes IP ID 0 (it numbers IDs
// only for connected sockets), so the ICRC is computed for exactly the header it sends. TTL/hop
// limit and TOS/traffic class come from the address's GRH per datagram (0 = the socket default);
// the ICRC masks them (like the IP and UDP checksums and the IPv6 flow label, which is not set).
//
// Receiving. A datagram becomes a MAD when it is BTH + DETH + 256-byte MAD + ICRC, opcode UD
// SEND_ONLY, destination QP 1, the GSI Q_Key, a P_Key the table accepts, a correct ICRC, and a CM
// class MAD; anything else is dropped and counted (UdpPortCounters). The ICRC is checked on IPv6,
// where the socket shows every field it covers; on IPv4 it covers the IP ID and flags, which a
// UDP socket does not show, so such MADs are delivered and counted as icrc_unchecked. The
// received address names the sender: remote GID = its IP as a GID, hop limit, traffic class and
// (IPv6) flow label as received, remote QPN = the DETH source QP, gid_index 0. A reply goes back
// to that IP at udp_port (RoCEv2 source ports are flow entropy, not a return address).
//
// Queues: the socket's receive buffer is the port's bounded receive queue (a datagram that finds
// it full is dropped by the kernel). The socket is the port's rx event fd. The per-MAD paths use
// sendmmsg/recvmmsg on preallocated or stack buffers and never allocate or lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fastcm/fabric.h"

namespace fastcm::roce {

struct UdpConfig {
  std::vector<std::string> addresses;  // one port per local IPv4 or IPv6 address
  std::uint16_t udp_port = 4791;       // tests may use another (then peers must too)
};

// At most this many addresses (ports) per fabric.
inline constexpr std::size_t kMaxUdpPorts = 64;

// Opens one port per address. On failure returns null and sets `error` to one line naming the cause and the fix.
// Failures: no address, more than kMaxUdpPorts, an address that is neither IPv4 nor IPv6 text, a
// socket option the kernel refuses, or a bind that fails (not a local address, or the UDP port
// already taken on it, e.g. by a Linux rxe device). Thread contract: any thread; blocks only for
// the socket system calls; allocates.
[[nodiscard]] std::unique_ptr<Fabric> open_udp_fabric(const UdpConfig& config, std::string& error);

// What one port did, since it was opened. Every received datagram is counted once in
// datagrams_received and then either in mads_received or in exactly one drop_ counter.
struct UdpPortCounters {
  std::uint64_t datagrams_sent = 0;      // handed to the kernel by send_burst
  std::uint64_t datagrams_received = 0;  // read from the socket, whatever became of them
  std::uint64_t mads_received = 0;       // passed every check and returned by recv_burst
  std::uint64_t icrc_unchecked = 0;      // of mads_received: IPv4, whose ICRC could not be checked
  std::uint64_t drop_bad_length = 0;     // not exactly BTH + DETH + 256-byte MAD + ICRC
  std::uint64_t drop_not_ud_send_only = 0;  // BTH opcode other than UD SEND_ONLY
  std::uint64_t drop_bad_bth = 0;        // BTH pad count or transport version not 0
  std::uint64_t drop_bad_qpn = 0;        // destination QP not 1
  std::uint64_t drop_bad_qkey = 0;       // DETH Q_Key not the GSI Q_Key
  std::uint64_t drop_bad_pkey = 0;       // BTH P_Key that matches no entry of the P_Key table
  std::uint64_t drop_bad_icrc = 0;       // IPv6 datagram whose ICRC does not match
  std::uint64_t drop_not_cm = 0;         // a MAD of a management class other than CM (0x07)
  std::uint64_t recv_failed = 0;         // recvmmsg errors other than "nothing to read"
  // MADs that send_burst accepted (returned them as taken) but did not hand to the kernel:
  std::uint64_t send_unroutable = 0;  // no GRH, a remote GID of the other address family, or a GID or P_Key index the port lacks
  std::uint64_t send_failed = 0;      // the kernel refused the datagram (an error other than a full buffer)

  friend constexpr bool operator==(const UdpPortCounters&, const UdpPortCounters&) = default;
};

// The counters of port `port_index` of a fabric open_udp_fabric() made; std::nullopt for any other
// fabric or a port_index outside its ports. Each counter is read on its own (relaxed): a snapshot
// taken while MADs flow may mix moments. Thread contract: any thread; never blocks or allocates.
[[nodiscard]] std::optional<UdpPortCounters> udp_port_counters(const Fabric& fabric,
                                                               std::uint16_t port_index) noexcept;

}  // namespace fastcm::roce
