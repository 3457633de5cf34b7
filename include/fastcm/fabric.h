// The transport interface under the CM engine: the local HCA ports and their attributes, and a
// burst send/receive path for 256-byte MADs on each port's GSI QP (QP1).
//
// Implementations: fabric/loopback (in-process, the default), fabric/umad (real HCAs),
// fabric/roce_udp (RoCEv2 GSI over UDP). Every one passes the same conformance suite.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fastcm/types.h"

namespace fastcm {

inline constexpr std::size_t kMadSize = 256;
inline constexpr Qpn kGsiQpn = 1;                // the GSI QP, where the CM class lives
inline constexpr QKey kGsiQKey = 0x8001'0000;    // the well-known Q_Key of QP1
inline constexpr std::size_t kMaxPortGids = 16;  // GID table entries a PortAttr can hold
inline constexpr std::size_t kMaxPortPKeys = 32; // P_Key table entries a PortAttr can hold

enum class LinkLayer : std::uint8_t { infiniband, ethernet };

// Limits of the channel adapter a port belongs to, as the CM needs them.
struct CaLimits {
  // RDMA read/atomic requests one QP may have outstanding as responder (caps a REQ's or REP's
  // responder resources) and as initiator (caps the initiator depth).
  std::uint8_t max_qp_rd_atom = 0;
  std::uint8_t max_qp_init_rd_atom = 0;
  // Local CA ACK delay, a 5-bit exponent (4.096 µs · 2^n), sent in the REQ and the REP.
  std::uint8_t local_ca_ack_delay = 0;

  friend constexpr bool operator==(const CaLimits&, const CaLimits&) = default;
};

// One HCA port as the CM sees it. Plain data.
struct PortAttr {
  std::uint8_t port_num = 1;  // the HCA's port number, 1-based
  Guid node_guid = 0;         // the CA (node) GUID, shared by the HCA's ports
  Guid port_guid = 0;
  // GID table: entries [0, gid_count). Index 0 is the default GID, subnet prefix + port GUID.
  std::array<Gid, kMaxPortGids> gid_table{};
  std::uint8_t gid_count = 0;
  Lid lid = 0;  // base LID; the port owns [lid, lid + 2^lmc). 0 on Ethernet (RoCE) ports.
  std::uint8_t lmc = 0;
  Lid sm_lid = 0;
  // P_Key table: entries [0, pkey_count); a MadAddress's pkey_index points into it.
  std::array<PKey, kMaxPortPKeys> pkey_table{};
  std::uint8_t pkey_count = 0;
  std::uint8_t active_mtu = 0;   // IBTA MTU code: 1 = 256 ... 5 = 4096 bytes
  std::uint8_t active_rate = 0;  // IBTA static rate code (PathRecord Rate), e.g. 16 = 100 Gb/s
  LinkLayer link_layer = LinkLayer::infiniband;
  CaLimits ca{};

  // The valid part of each table (counts above the capacity are clamped).
  [[nodiscard]] std::span<const Gid> gids() const noexcept {
    return {gid_table.data(), std::min<std::size_t>(gid_count, gid_table.size())};
  }
  [[nodiscard]] std::span<const PKey> pkeys() const noexcept {
    return {pkey_table.data(), std::min<std::size_t>(pkey_count, pkey_table.size())};
  }

  friend constexpr bool operator==(const PortAttr&, const PortAttr&) = default;
};

// The Global Route Header fields of a MAD's address; meaningful only when `present`.
struct GrhInfo {
  bool present = false;
  // Local GID table index: the source GID on send; on receive, the local GID the MAD was sent to.
  std::uint8_t gid_index = 0;
  std::uint8_t hop_limit = 0;
  std::uint8_t traffic_class = 0;
  std::uint32_t flow_label = 0;  // 20 bits
  Gid remote_gid{};              // destination GID on send, source GID on receive

  friend constexpr bool operator==(const GrhInfo&, const GrhInfo&) = default;
};

// Where a MAD goes to (send) or came from (receive). "Remote" is always the peer.
struct MadAddress {
  std::uint16_t port_index = 0;  // local port, an index into Fabric::ports(); set on receive
  Lid remote_lid = 0;            // destination LID on send, source LID on receive
  Qpn remote_qpn = kGsiQpn;
  QKey remote_qkey = kGsiQKey;  // on receive: the Q_Key a reply to the sender must use
  std::uint16_t pkey_index = 0; // local P_Key table index (send: P_Key used; receive: matched)
  std::uint8_t sl = 0;
  GrhInfo grh{};

  friend constexpr bool operator==(const MadAddress&, const MadAddress&) = default;
};

// A MAD and its address. Plain data without ownership: the caller owns every MadPacket it hands
// to a Fabric (the engine takes them from its own pools); a fabric copies in on send and copies
// out on receive and never keeps or allocates a caller's packet.
//
// Layout: no padding, so a holder can keep per-buffer state right behind `mad`'s last bytes (the
// engine's reference count shares a cache line with the private data every MAD ends in, instead of
// taking a line of its own that is cold whenever a buffer comes back from its pool).
struct MadPacket {
  MadAddress addr{};
  std::array<std::uint8_t, kMadSize> mad{};  // the whole MAD, wire byte order
};

// The transport of one CM engine instance: the ports of one HCA (or of several, as configured).
//
// Ownership: the Fabric owns its ports, queues and event fds; callers own the packets.
// Lifetime: a Fabric outlives every thread that calls it.
// Threads: send_burst from any threads at once; per port, recv_burst and arm_rx_event from one
// consumer thread at a time (the port's poller); ports() and rx_event_fd from any thread.
class Fabric {
 public:
  Fabric() = default;
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;
  virtual ~Fabric() = default;

  // The ports, indexed by MadAddress::port_index. The span and its contents stay valid and
  // unchanged for the Fabric's lifetime. Thread contract: any thread.
  [[nodiscard]] virtual std::span<const PortAttr> ports() const noexcept = 0;

  // Sends pkts[i] out of port `port_index` to pkts[i]->addr (addr.port_index is ignored; the
  // argument decides). Copies each MAD before returning: the caller may reuse the packets at once.
  // Returns how many leading packets were accepted (0..pkts.size()); the rest were not sent and
  // stay the caller's to retry or drop. Accepted is not delivered: like a real wire, a fabric may
  // still lose an accepted MAD (no route, full receive queue, injected fault) and counts why.
  // Returns 0 for a port_index outside ports(). Every pointer in pkts must be valid.
  // Thread contract: any thread, concurrently with other senders on the same or other ports and
  // with that port's consumer. Never blocks, never allocates.
  virtual std::size_t send_burst(std::uint16_t port_index,
                                 std::span<const MadPacket* const> pkts) noexcept = 0;

  // Copies up to bufs.size() received MADs into bufs[0..n) and returns n (0 when none is ready or
  // port_index is outside ports()). Each filled packet's addr describes the sender, with
  // addr.port_index = port_index. Every pointer in bufs must be valid; the fabric writes only the
  // first n. Thread contract: the port's single consumer thread (one caller per port at a time;
  // different ports may be polled by different threads). Never blocks, never allocates.
  virtual std::size_t recv_burst(std::uint16_t port_index,
                                 std::span<MadPacket* const> bufs) noexcept = 0;

  // A file descriptor that becomes readable (POLLIN / EPOLLIN) to wake the port's consumer after
  // arm_rx_event() returned true. Owned by the fabric: never close or read it. -1 for a
  // port_index outside ports(), and -1 for a valid port that has no fd anything can wait on (a
  // simulated device: ibsim's umad2sim hands out fd numbers that poll and epoll cannot watch).
  // Stable for the Fabric's lifetime. Thread contract: any thread.
  //
  // A valid port without an fd: arm_rx_event() still says whether MADs wait; when it returns
  // true the consumer sleeps a bounded time (its own wake-ups only) and then polls recv_burst
  // again, so a MAD that arrives meanwhile waits at most that long.
  //
  // Protocol for an idle poller: spin on recv_burst for a while; then call arm_rx_event(); when it
  // returns true, wait for the fd to become readable (poll/epoll, level- or edge-triggered), then
  // go back to recv_burst. The fd is a wake-up, not a count: readability means "look again", a
  // wake-up may be spurious (recv_burst then returns 0), and it stays readable until the next
  // arm_rx_event(), so a poller that waits again without re-arming does not sleep.
  [[nodiscard]] virtual int rx_event_fd(std::uint16_t port_index) const noexcept = 0;

  // Prepares rx_event_fd for a sleep. Returns true when the port had nothing to receive at the
  // moment of arming: the first MAD that arrives afterwards makes the fd readable (none is missed
  // between this call and the wait). Returns false when the consumer must not sleep because
  // recv_burst has (or will soon have) MADs to return, and for a port_index outside ports().
  // Thread contract: the port's consumer thread only, like recv_burst. May make one system call.
  virtual bool arm_rx_event(std::uint16_t port_index) noexcept = 0;
};

}  // namespace fastcm
