#include "fabric/umad/umad_port.h"

#include <endian.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fastcm::umad {

namespace {

constexpr int kCmClass = 0x07;
constexpr int kCmClassVersion = 2;
constexpr std::uint8_t kMethodGet = 0x01;
constexpr std::uint8_t kMethodSet = 0x02;
constexpr std::uint8_t kMethodSend = 0x03;
// How long the MAD layer keeps a Get or Set we send waiting for its GetResp. Above the 1.07 s
// RespTimeValue (4.096 µs · 2^18) fastcm itself advertises in its ClassPortInfo.
constexpr int kRequestTimeoutMs = 2000;

std::string port_name(const std::string& device, std::uint8_t port) {
  return device + " port " + std::to_string(port);
}

// /dev/infiniband/umadN of (device, port). ib_umad numbers a port's umad and issm devices alike,
// and libibumad only tells the issm path.
std::string umad_device_path(const std::string& device, std::uint8_t port) {
  char issm[256] = {};
  if (umad_get_issm_path(device.c_str(), port, issm, sizeof issm) < 0) return {};
  std::string path(issm);
  const std::size_t at = path.rfind("issm");
  return at == std::string::npos ? std::string{} : path.replace(at, 4, "umad");
}

// `fd` when it can be waited on with poll/epoll, else -1. The real ib_umad fd is the character
// device /dev/infiniband/umadN itself. ibsim's umad2sim hands out fd numbers from 1024 up that
// name no open file (only its interposed read/write/poll know them), so fstat fails or finds some
// other file, and epoll refuses them (EBADF, or EPERM for a file it cannot poll). A process
// running under umad2sim is not detected by name: the fd itself is checked.
int waitable_fd(int fd, const std::string& device_path) {
  struct stat by_fd{};
  struct stat by_path{};
  if (::fstat(fd, &by_fd) != 0 || !S_ISCHR(by_fd.st_mode)) return -1;
  if (device_path.empty() || ::stat(device_path.c_str(), &by_path) != 0 || by_path.st_rdev != by_fd.st_rdev) {
    return -1;
  }
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return -1;
  epoll_event ev{};
  ev.events = EPOLLIN;
  const bool ok = ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0;
  ::close(ep);
  return ok ? fd : -1;
}

bool is_ipv4_mapped(const Gid& gid) {
  for (std::size_t i = 0; i < 10; ++i) {
    if (gid.raw[i] != 0) return false;
  }
  return gid.raw[10] == 0xFF && gid.raw[11] == 0xFF;
}

void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
  counter.fetch_add(by, std::memory_order_relaxed);  // a statistic: no ordering needed
}

}  // namespace

std::unique_ptr<UmadPort> UmadPort::open(const std::string& device, const DiscoveredPort& port,
                                         std::string& error) {
  std::unique_ptr<UmadPort> p(new UmadPort(port));
  const std::uint8_t num = port.attr.port_num;
  const std::string path = umad_device_path(device, num);
  errno = 0;
  p->fd_ = umad_open_port(device.c_str(), num);
  if (p->fd_ < 0) {
    const int e = errno;
    p->fd_ = -1;
    if (e == EACCES || e == EPERM) {
      error = "no permission to open " + (path.empty() ? "the umad device" : path) + " of " + port_name(device, num) +
              ": run as root, or give the user read/write access to /dev/infiniband/umad* (a udev rule)";
    } else {
      error = "cannot open " + port_name(device, num) + " (umad_open_port: " + std::strerror(e != 0 ? e : EIO) +
              "): load the ib_umad kernel module (modprobe ib_umad)";
    }
    return nullptr;
  }
  // Send carries every CM message; Get and Set are ClassPortInfo queries. Bit n stands for method n.
  long methods[16 / sizeof(long)] = {};
  for (const std::uint8_t m : {kMethodGet, kMethodSet, kMethodSend}) {
    methods[m / (8 * sizeof(long))] |= 1L << (m % (8 * sizeof(long)));
  }
  errno = 0;
  p->agent_ = umad_register(p->fd_, kCmClass, kCmClassVersion, 0, methods);
  if (p->agent_ < 0) {
    const int e = errno;
    if (e == EINVAL || e == EBUSY || e == EEXIST) {
      error = "the CM class (0x07 version 2) is already registered on " + port_name(device, num) +
              ", normally by the kernel's ib_cm (loaded with rdma_cm and rdma_ucm): unload them "
              "(modprobe -r rdma_ucm rdma_cm ib_cm, after their users such as ib_iser, nvme_rdma, rpcrdma) "
              "or use another fabric";
    } else {
      error = "cannot register the CM agent on " + port_name(device, num) + " (umad_register: " +
              std::strerror(e != 0 ? e : EIO) + "): check that ib_umad is loaded";
    }
    return nullptr;
  }
  p->event_fd_ = waitable_fd(umad_get_fd(p->fd_), path);
  return p;
}

UmadPort::~UmadPort() {
  if (fd_ >= 0) {
    if (agent_ >= 0) umad_unregister(fd_, agent_);
    umad_close_port(fd_);
  }
}

std::uint8_t UmadPort::gid_index_of_hw(std::uint8_t hw) const noexcept {
  for (std::uint8_t i = 0; i < info_.attr.gid_count; ++i) {
    if (info_.gid_info[i].hw_index == hw) return i;
  }
  return 0;  // a GID added after open: reply from the default GID
}

// The source GID for a RoCE destination: RoCE v2 of the destination's family (IPv4-mapped or
// IPv6), the requested entry when it is one, else the first such entry, else the request as is.
std::uint8_t UmadPort::roce_source_gid(std::uint8_t requested, const Gid& destination) const noexcept {
  const bool v4 = is_ipv4_mapped(destination);
  const auto fits = [&](std::uint8_t i) {
    return info_.gid_info[i].type == GidType::roce_v2 && is_ipv4_mapped(info_.attr.gid_table[i]) == v4;
  };
  if (fits(requested)) return requested;
  for (std::uint8_t i = 0; i < info_.attr.gid_count; ++i) {
    if (fits(i)) return i;
  }
  return requested;
}

bool UmadPort::address(const MadPacket& pkt, UmadBuffer& out) noexcept {
  const MadAddress& a = pkt.addr;
  const bool roce = info_.attr.link_layer == LinkLayer::ethernet;
  if ((info_.attr.pkey_count != 0 && a.pkey_index >= info_.attr.pkey_count) ||
      (a.grh.present && a.grh.gid_index >= info_.attr.gid_count)) {
    bump(counters_.send_bad_address);
    return false;
  }
  if (roce && !a.grh.present) {  // the kernel refuses a RoCE address without a GRH
    bump(counters_.send_without_grh);
    return false;
  }
  void* umad = out.bytes.data();
  umad_set_addr(umad, a.remote_lid, static_cast<int>(a.remote_qpn), a.sl, static_cast<int>(a.remote_qkey));
  umad_set_pkey(umad, a.pkey_index);
  if (a.grh.present) {
    const std::uint8_t index = roce ? roce_source_gid(a.grh.gid_index, a.grh.remote_gid) : a.grh.gid_index;
    ib_mad_addr_t grh{};
    std::memcpy(grh.gid, a.grh.remote_gid.raw.data(), sizeof grh.gid);
    grh.flow_label = a.grh.flow_label & 0xFFFFF;  // umad_set_grh takes it in host order
    grh.hop_limit = a.grh.hop_limit;
    grh.traffic_class = a.grh.traffic_class;
    umad_set_grh(umad, &grh);
    umad_get_mad_addr(umad)->gid_index = info_.gid_info[index].hw_index;  // umad_set_grh leaves it
  }
  return true;
}

std::size_t UmadPort::send(std::span<const MadPacket* const> pkts) noexcept {
  std::size_t i = 0;
  for (; i < pkts.size(); ++i) {
    const MadPacket& pkt = *pkts[i];
    UmadBuffer buf{};  // on this sender's stack: senders on other threads have their own
    if (!address(pkt, buf)) continue;  // counted; accepted and lost, as on a wire
    std::memcpy(umad_get_mad(buf.bytes.data()), pkt.mad.data(), kMadSize);
    // CM messages: the engine retransmits, so no MAD-layer timeout; a Get/Set waits for its GetResp.
    const std::uint8_t method = pkt.mad[3];
    const int timeout_ms = method == kMethodGet || method == kMethodSet ? kRequestTimeoutMs : 0;
    errno = 0;
    if (umad_send(fd_, agent_, buf.bytes.data(), static_cast<int>(kMadSize), timeout_ms, 0) == 0) {
      bump(counters_.sent);
      continue;
    }
    const int e = errno;
    if (e == EAGAIN || e == ENOMEM || e == ENOBUFS || e == EINTR) break;  // the caller may retry these
    bump(counters_.send_errors);
  }
  return i;
}

std::size_t UmadPort::recv(std::uint16_t port_index, std::span<MadPacket* const> bufs) noexcept {
  std::size_t n = 0;
  void* umad = rx_.bytes.data();
  while (n < bufs.size()) {
    int length = static_cast<int>(kMadSize);
    errno = 0;
    const int rc = umad_recv(fd_, umad, &length, 0);
    if (rc < 0) {
      // Nothing to read: EAGAIN from ib_umad's non-blocking fd, -EWOULDBLOCK from umad2sim.
      if (errno != EAGAIN && errno != EWOULDBLOCK && rc != -EWOULDBLOCK) bump(counters_.recv_errors);
      break;
    }
    if (umad_status(umad) != 0) {  // one of our sends that failed (ETIMEDOUT: no route, no answer)
      bump(counters_.failed_sends);
      continue;
    }
    if (length < static_cast<int>(kMadSize)) {
      bump(counters_.short_mads);
      continue;
    }
    MadPacket& out = *bufs[n];
    std::memcpy(out.mad.data(), umad_get_mad(umad), kMadSize);
    const ib_mad_addr_t& a = *umad_get_mad_addr(umad);
    MadAddress& to = out.addr;
    to = MadAddress{};
    to.port_index = port_index;
    to.remote_lid = be16toh(a.lid);
    to.remote_qpn = be32toh(a.qpn) & 0xFFFFFF;
    // ib_umad reports no Q_Key; the GSI QP always uses the well-known one.
    to.remote_qkey = to.remote_qpn == kGsiQpn ? kGsiQKey : be32toh(a.qkey);
    const int pkey_index = umad_get_pkey(umad);
    if (pkey_index < 0 || (info_.attr.pkey_count != 0 && pkey_index >= info_.attr.pkey_count)) {
      bump(counters_.bad_pkey_index);  // umad2sim leaves the field unset
    } else {
      to.pkey_index = static_cast<std::uint16_t>(pkey_index);
    }
    to.sl = a.sl;
    if (a.grh_present != 0) {
      to.grh.present = true;
      to.grh.gid_index = gid_index_of_hw(a.gid_index);
      to.grh.hop_limit = a.hop_limit;
      to.grh.traffic_class = a.traffic_class;
      to.grh.flow_label = be32toh(a.flow_label) & 0xFFFFF;
      std::memcpy(to.grh.remote_gid.raw.data(), a.gid, sizeof a.gid);
    }
    ++n;
  }
  if (n != 0) bump(counters_.received, n);
  return n;
}

bool UmadPort::arm() noexcept {
  // The umad fd is level-triggered: readable while a MAD waits. A zero-timeout poll tells whether
  // one does (umad2sim's interposed poll answers it for its fake fd as well).
  pollfd pfd{.fd = fd_, .events = POLLIN, .revents = 0};
  return ::poll(&pfd, 1, 0) == 0;
}

UmadPortCounters UmadPort::counters() const noexcept {
  const auto get = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return UmadPortCounters{.sent = get(counters_.sent),
                          .send_errors = get(counters_.send_errors),
                          .send_without_grh = get(counters_.send_without_grh),
                          .send_bad_address = get(counters_.send_bad_address),
                          .received = get(counters_.received),
                          .failed_sends = get(counters_.failed_sends),
                          .short_mads = get(counters_.short_mads),
                          .bad_pkey_index = get(counters_.bad_pkey_index),
                          .recv_errors = get(counters_.recv_errors)};
}

}  // namespace fastcm::umad
