#include "fabric/roce_udp/udp_fabric.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <span>

#include "fabric/roce_udp/gsi_socket.h"
#include "fabric/roce_udp/icrc.h"
#include "fabric/roce_udp/ip_gid.h"
#include "fabric/roce_udp/rocev2_frame.h"

namespace fastcm::roce {
namespace {

// MADs per sendmmsg / recvmmsg call.
constexpr std::size_t kBurst = 32;
constexpr std::size_t kGsiBodySize = kGsiHeadersSize + kMadSize;  // what the ICRC follows
constexpr std::size_t kHeaderRoom = kIpv6HeaderSize + kUdpHeaderSize;
constexpr std::uint8_t kCmClass = 0x07;  // MAD management class of the CM
constexpr std::size_t kMadClassOffset = 1;

// The port attributes udp_fabric.h documents.
constexpr PKey kDefaultPKey = 0xFFFF;
constexpr std::uint8_t kMtu1024 = 3;
constexpr std::uint8_t kRate10Gbps = 3;
constexpr CaLimits kRxeCaLimits{.max_qp_rd_atom = 128, .max_qp_init_rd_atom = 128, .local_ca_ack_delay = 15};

// Room for three int-sized control messages (TTL/hop limit, TOS/traffic class, flow info).
constexpr std::size_t kControlRoom = 3 * CMSG_SPACE(sizeof(int));

[[nodiscard]] constexpr std::size_t ip_udp_header_size(bool ipv4) noexcept {
  return (ipv4 ? kIpv4HeaderSize : kIpv6HeaderSize) + kUdpHeaderSize;
}

// A datagram with room in front for the IP and UDP headers the ICRC covers, so the ICRC is
// computed over one contiguous buffer while only the UDP payload goes through the socket.
// Left uninitialised: every byte sent or checked is written first.
struct PacketBuffer {
  std::array<std::uint8_t, kHeaderRoom + kUdpPayloadSize> bytes;
  [[nodiscard]] std::uint8_t* payload() noexcept { return bytes.data() + kHeaderRoom; }
  // The IP packet that starts `header_size` bytes before the payload and ends with the ICRC.
  [[nodiscard]] std::span<std::uint8_t> ip_packet(std::size_t header_size) noexcept {
    return {payload() - header_size, header_size + kUdpPayloadSize};
  }
};

struct alignas(cmsghdr) ControlBuffer {
  std::array<unsigned char, kControlRoom> bytes;
};

enum Counter : std::size_t {
  datagrams_sent,
  datagrams_received,
  mads_received,
  icrc_unchecked,
  drop_bad_length,
  drop_not_ud_send_only,
  drop_bad_bth,
  drop_bad_qpn,
  drop_bad_qkey,
  drop_bad_pkey,
  drop_bad_icrc,
  drop_not_cm,
  recv_failed,
  send_unroutable,
  send_failed,
  kCounterCount,
};

// One port's counters. Statistics only: relaxed increments and loads, paired with no other access
// (a reader may see a snapshot that mixes moments, as udp_port_counters() documents).
class PortCounters {
 public:
  void add(Counter c, std::uint64_t n = 1) noexcept { cells_[c].fetch_add(n, std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t get(Counter c) const noexcept { return cells_[c].load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<std::uint64_t>, kCounterCount> cells_{};
};

// One datagram's receive slot: the consumer thread's alone.
struct RxSlot {
  PacketBuffer buffer;
  sockaddr_storage from{};
  ControlBuffer control;
};

struct Port {
  Gid gid;
  bool ipv4 = false;
  int fd = -1;
  PortCounters counters;
  std::array<RxSlot, kBurst> rx{};
  std::array<iovec, kBurst> rx_iov{};
  std::array<mmsghdr, kBurst> rx_msgs{};

  Port() = default;
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;
  ~Port() {
    if (fd >= 0) ::close(fd);
  }
};

PortAttr port_attr(const Gid& gid, std::uint8_t port_num, Guid node_guid) noexcept {
  PortAttr a;
  a.port_num = port_num;
  a.node_guid = node_guid;
  a.port_guid = gid.interface_id();
  a.gid_table[0] = gid;
  a.gid_count = 1;
  a.pkey_table[0] = kDefaultPKey;
  a.pkey_count = 1;
  a.active_mtu = kMtu1024;
  a.active_rate = kRate10Gbps;
  a.link_layer = LinkLayer::ethernet;
  a.ca = kRxeCaLimits;
  return a;
}

// The received ancillary data: GRH fields the IP header carried.
void read_grh_fields(msghdr& msg, GrhInfo& grh) noexcept {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    int value = 0;
    std::uint32_t flow_info = 0;
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
      grh.traffic_class = *CMSG_DATA(c);  // one byte
    } else if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) ||
               (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT)) {
      std::memcpy(&value, CMSG_DATA(c), sizeof value);
      grh.hop_limit = static_cast<std::uint8_t>(value);
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
      std::memcpy(&value, CMSG_DATA(c), sizeof value);
      grh.traffic_class = static_cast<std::uint8_t>(value);
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == kIpv6FlowInfo &&
               c->cmsg_len >= CMSG_LEN(sizeof flow_info)) {
      // Version, traffic class and flow label, network order.
      std::memcpy(&flow_info, CMSG_DATA(c), sizeof flow_info);
      grh.flow_label = ntohl(flow_info) & 0xFFFFFU;
    }
  }
}

// Appends an int-valued control message; returns the bytes it took.
std::size_t put_control(unsigned char* at, int level, int type, int value) noexcept {
  cmsghdr header{};
  header.cmsg_level = level;
  header.cmsg_type = type;
  header.cmsg_len = CMSG_LEN(sizeof value);
  std::memcpy(at, &header, sizeof header);
  std::memcpy(at + CMSG_LEN(0), &value, sizeof value);
  return CMSG_SPACE(sizeof value);
}

class UdpFabric final : public Fabric {
 public:
  UdpFabric(std::uint16_t udp_port, std::size_t port_count)
      : udp_port_(udp_port), ports_(std::make_unique<Port[]>(port_count)) {
    attrs_.reserve(port_count);
  }

  // Opens the next port; false with `error` set when its socket cannot be opened.
  bool add_port(const Gid& gid, std::string& error) {
    Port& port = ports_[attrs_.size()];
    port.fd = open_gsi_socket(gid, udp_port_, error);
    if (port.fd < 0) return false;
    port.gid = gid;
    port.ipv4 = is_ipv4_mapped(gid);
    for (std::size_t i = 0; i < kBurst; ++i) {
      port.rx_iov[i] = iovec{.iov_base = port.rx[i].buffer.payload(), .iov_len = kUdpPayloadSize};
    }
    const Guid node_guid = attrs_.empty() ? gid.interface_id() : attrs_.front().node_guid;
    attrs_.push_back(port_attr(gid, static_cast<std::uint8_t>(attrs_.size() + 1), node_guid));
    return true;
  }

  [[nodiscard]] std::span<const PortAttr> ports() const noexcept override { return attrs_; }

  std::size_t send_burst(std::uint16_t port_index, std::span<const MadPacket* const> pkts) noexcept override {
    if (port_index >= attrs_.size()) return 0;
    std::size_t done = 0;
    while (done < pkts.size()) {
      const std::size_t chunk = std::min(kBurst, pkts.size() - done);
      const std::size_t taken = send_chunk(port_index, pkts.subspan(done, chunk));
      done += taken;
      if (taken < chunk) break;
    }
    return done;
  }

  std::size_t recv_burst(std::uint16_t port_index, std::span<MadPacket* const> bufs) noexcept override {
    if (port_index >= attrs_.size()) return 0;
    Port& port = ports_[port_index];
    std::size_t filled = 0;
    while (filled < bufs.size()) {
      const std::size_t want = std::min(kBurst, bufs.size() - filled);
      for (std::size_t i = 0; i < want; ++i) {
        msghdr& h = port.rx_msgs[i].msg_hdr;
        h = msghdr{};
        h.msg_name = &port.rx[i].from;
        h.msg_namelen = sizeof port.rx[i].from;
        h.msg_iov = &port.rx_iov[i];
        h.msg_iovlen = 1;
        h.msg_control = port.rx[i].control.bytes.data();
        h.msg_controllen = port.rx[i].control.bytes.size();
      }
      const int got = ::recvmmsg(port.fd, port.rx_msgs.data(), static_cast<unsigned>(want), MSG_DONTWAIT, nullptr);
      if (got <= 0) {
        if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) port.counters.add(recv_failed);
        break;
      }
      port.counters.add(datagrams_received, static_cast<std::uint64_t>(got));
      for (std::size_t i = 0; i < static_cast<std::size_t>(got); ++i) {
        if (accept(port_index, port.rx[i], port.rx_msgs[i], *bufs[filled])) ++filled;
      }
      if (static_cast<std::size_t>(got) < want) break;
    }
    port.counters.add(mads_received, filled);
    return filled;
  }

  [[nodiscard]] int rx_event_fd(std::uint16_t port_index) const noexcept override {
    return port_index < attrs_.size() ? ports_[port_index].fd : -1;
  }

  // The socket itself is the event: readable (level-triggered) while a datagram waits.
  bool arm_rx_event(std::uint16_t port_index) noexcept override {
    if (port_index >= attrs_.size()) return false;
    pollfd p{.fd = ports_[port_index].fd, .events = POLLIN, .revents = 0};
    return ::poll(&p, 1, 0) == 0;
  }

  [[nodiscard]] std::optional<UdpPortCounters> counters(std::uint16_t port_index) const noexcept {
    if (port_index >= attrs_.size()) return std::nullopt;
    const PortCounters& c = ports_[port_index].counters;
    return UdpPortCounters{
        .datagrams_sent = c.get(datagrams_sent),
        .datagrams_received = c.get(datagrams_received),
        .mads_received = c.get(mads_received),
        .icrc_unchecked = c.get(icrc_unchecked),
        .drop_bad_length = c.get(drop_bad_length),
        .drop_not_ud_send_only = c.get(drop_not_ud_send_only),
        .drop_bad_bth = c.get(drop_bad_bth),
        .drop_bad_qpn = c.get(drop_bad_qpn),
        .drop_bad_qkey = c.get(drop_bad_qkey),
        .drop_bad_pkey = c.get(drop_bad_pkey),
        .drop_bad_icrc = c.get(drop_bad_icrc),
        .drop_not_cm = c.get(drop_not_cm),
        .recv_failed = c.get(recv_failed),
        .send_unroutable = c.get(send_unroutable),
        .send_failed = c.get(send_failed),
    };
  }

 private:
  // The stack state of one sendmmsg burst.
  struct TxBurst {
    std::array<PacketBuffer, kBurst> buffers;
    std::array<sockaddr_storage, kBurst> to;
    std::array<ControlBuffer, kBurst> control;
    std::array<iovec, kBurst> iov;
    std::array<mmsghdr, kBurst> msgs;
    std::array<std::size_t, kBurst> packet_of;  // msgs[m] carries pkts[packet_of[m]]
    std::array<bool, kBurst> unroutable;
  };

  // Frames pkt into message `m` of `tx`; false when the port cannot send it anywhere.
  bool frame(const Port& port, const PortAttr& attr, const MadPacket& pkt, TxBurst& tx, std::size_t m) const noexcept {
    const MadAddress& a = pkt.addr;
    if (!a.grh.present || a.grh.gid_index >= attr.gid_count || a.pkey_index >= attr.pkey_count ||
        is_ipv4_mapped(a.grh.remote_gid) != port.ipv4) {
      return false;
    }
    const RoceGsiHeader header{.pkey = attr.pkey_table[a.pkey_index],
                               .dest_qp = a.remote_qpn,
                               .src_qp = kGsiQpn,
                               .qkey = a.remote_qkey};
    PacketBuffer& buffer = tx.buffers[m];
    if (!write_gsi_payload(header, pkt.mad, std::span<std::uint8_t, kGsiBodySize>(buffer.payload(), kGsiBodySize))) {
      return false;
    }
    const std::size_t header_size = ip_udp_header_size(port.ipv4);
    const std::span<std::uint8_t> ip = buffer.ip_packet(header_size);
    if (write_ip_udp_headers(port.gid, a.grh.remote_gid, udp_port_, udp_port_, ip) != header_size ||
        !write_icrc(ip)) {
      return false;
    }

    // Hop limit and traffic class per datagram; the ICRC masks both, so any value keeps it valid.
    std::size_t control = 0;
    unsigned char* at = tx.control[m].bytes.data();
    if (a.grh.hop_limit != 0) {
      control += put_control(at + control, port.ipv4 ? IPPROTO_IP : IPPROTO_IPV6,
                             port.ipv4 ? IP_TTL : IPV6_HOPLIMIT, a.grh.hop_limit);
    }
    if (a.grh.traffic_class != 0) {
      control += put_control(at + control, port.ipv4 ? IPPROTO_IP : IPPROTO_IPV6,
                             port.ipv4 ? IP_TOS : IPV6_TCLASS, a.grh.traffic_class);
    }
    tx.iov[m] = iovec{.iov_base = buffer.payload(), .iov_len = kUdpPayloadSize};
    msghdr& h = tx.msgs[m].msg_hdr;
    h = msghdr{};
    h.msg_name = &tx.to[m];
    h.msg_namelen = sockaddr_of(a.grh.remote_gid, udp_port_, tx.to[m]);
    h.msg_iov = &tx.iov[m];
    h.msg_iovlen = 1;
    h.msg_control = control != 0 ? at : nullptr;
    h.msg_controllen = control;
    return true;
  }

  // Sends up to kBurst packets; returns how many leading ones were taken.
  std::size_t send_chunk(std::uint16_t port_index, std::span<const MadPacket* const> pkts) noexcept {
    Port& port = ports_[port_index];
    TxBurst tx;
    std::size_t count = 0;
    for (std::size_t i = 0; i < pkts.size(); ++i) {
      tx.unroutable[i] = !frame(port, attrs_[port_index], *pkts[i], tx, count);
      if (!tx.unroutable[i]) tx.packet_of[count++] = i;
    }
    std::size_t taken = pkts.size();
    for (std::size_t sent = 0; sent < count;) {
      const int n = ::sendmmsg(port.fd, tx.msgs.data() + sent, static_cast<unsigned>(count - sent), MSG_DONTWAIT);
      if (n > 0) {
        port.counters.add(datagrams_sent, static_cast<std::uint64_t>(n));
        sent += static_cast<std::size_t>(n);
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
        taken = tx.packet_of[sent];  // a full socket buffer: the rest stay the caller's
        break;
      } else {
        port.counters.add(send_failed);  // lost, as a wire may lose what it took
        ++sent;
      }
    }
    port.counters.add(send_unroutable, static_cast<std::uint64_t>(std::count(
                                           tx.unroutable.begin(), tx.unroutable.begin() + static_cast<std::ptrdiff_t>(taken), true)));
    return taken;
  }

  // Checks one received datagram and, when it is a CM MAD for QP1, fills `out`.
  bool accept(std::uint16_t port_index, RxSlot& slot, mmsghdr& msg, MadPacket& out) noexcept {
    Port& port = ports_[port_index];
    const auto drop = [&port](Counter why) {
      port.counters.add(why);
      return false;
    };
    if ((msg.msg_hdr.msg_flags & MSG_TRUNC) != 0) return drop(drop_bad_length);
    const GsiPayload payload = parse_gsi_payload({slot.buffer.payload(), msg.msg_len});
    switch (payload.errc) {
      case FrameErrc::ok:
        break;
      case FrameErrc::not_ud_send_only:
        return drop(drop_not_ud_send_only);
      case FrameErrc::bad_bth:
        return drop(drop_bad_bth);
      default:
        return drop(drop_bad_length);
    }
    const std::optional<GidPort> sender = gid_port_of(slot.from);
    if (!sender) return drop(recv_failed);  // not an IP source: cannot happen on an IP socket

    // IPv6: every field the ICRC covers is known (addresses, ports, lengths), so it is checked.
    const std::size_t header_size = ip_udp_header_size(port.ipv4);
    const std::span<std::uint8_t> ip = slot.buffer.ip_packet(header_size);
    if (!port.ipv4) {
      const bool verifies = write_ip_udp_headers(sender->gid, port.gid, sender->port, udp_port_, ip) == header_size &&
                            compute_icrc(ip.first(ip.size() - kIcrcSize)) == payload.icrc;
      if (!verifies) return drop(drop_bad_icrc);
    }
    if (payload.header.dest_qp != kGsiQpn) return drop(drop_bad_qpn);
    if (payload.header.qkey != kGsiQKey) return drop(drop_bad_qkey);
    // The table holds only the default partition, full member: it accepts both memberships of it.
    if ((payload.header.pkey & 0x7FFF) != (kDefaultPKey & 0x7FFF)) return drop(drop_bad_pkey);
    if (payload.mad[kMadClassOffset] != kCmClass) return drop(drop_not_cm);
    if (port.ipv4) port.counters.add(icrc_unchecked);

    out.addr = MadAddress{};
    out.addr.port_index = port_index;
    out.addr.remote_qpn = payload.header.src_qp;
    out.addr.remote_qkey = kGsiQKey;
    out.addr.pkey_index = 0;
    out.addr.grh.present = true;
    out.addr.grh.gid_index = 0;
    out.addr.grh.remote_gid = sender->gid;
    read_grh_fields(msg.msg_hdr, out.addr.grh);
    std::copy(payload.mad.begin(), payload.mad.end(), out.mad.begin());
    return true;
  }

  std::uint16_t udp_port_;
  std::unique_ptr<Port[]> ports_;
  std::vector<PortAttr> attrs_;
};

}  // namespace

std::unique_ptr<Fabric> open_udp_fabric(const UdpConfig& config, std::string& error) {
  if (config.addresses.empty()) {
    error = "udp fabric: no address given: name at least one local IPv4 or IPv6 address (e.g. 127.0.0.1)";
    return nullptr;
  }
  if (config.addresses.size() > kMaxUdpPorts) {
    error = "udp fabric: " + std::to_string(config.addresses.size()) + " addresses, at most " +
            std::to_string(kMaxUdpPorts) + " ports per fabric: give fewer";
    return nullptr;
  }
  std::vector<Gid> gids;
  for (const std::string& text : config.addresses) {
    const std::optional<Gid> gid = gid_from_ip_text(text);
    if (!gid) {
      error = "udp fabric: '" + text + "' is neither an IPv4 nor an IPv6 address: give one like 127.0.0.1 or ::1";
      return nullptr;
    }
    gids.push_back(*gid);
  }
  auto fabric = std::make_unique<UdpFabric>(config.udp_port, gids.size());
  for (const Gid& gid : gids) {
    if (!fabric->add_port(gid, error)) return nullptr;
  }
  return fabric;
}

std::optional<UdpPortCounters> udp_port_counters(const Fabric& fabric, std::uint16_t port_index) noexcept {
  const auto* udp = dynamic_cast<const UdpFabric*>(&fabric);
  return udp != nullptr ? udp->counters(port_index) : std::nullopt;
}

}  // namespace fastcm::roce
