#include "fabric/roce_udp/gsi_socket.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>

#include "fabric/roce_udp/ip_gid.h"
#include "fabric/roce_udp/rocev2_frame.h"

namespace fastcm::roce {
namespace {

struct SocketOption {
  int level;
  int name;
  int value;
  const char* what;
};

constexpr SocketOption kIpv4Options[] = {
    {IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO, "IP_MTU_DISCOVER"},
    {IPPROTO_IP, IP_RECVTTL, 1, "IP_RECVTTL"},
    {IPPROTO_IP, IP_RECVTOS, 1, "IP_RECVTOS"},
    {SOL_SOCKET, SO_RCVBUF, kGsiSocketRcvBuf, "SO_RCVBUF"},
};
constexpr SocketOption kIpv6Options[] = {
    {IPPROTO_IPV6, IPV6_V6ONLY, 1, "IPV6_V6ONLY"},
    {IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO, "IPV6_MTU_DISCOVER"},
    {IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1, "IPV6_RECVHOPLIMIT"},
    {IPPROTO_IPV6, IPV6_RECVTCLASS, 1, "IPV6_RECVTCLASS"},
    {IPPROTO_IPV6, kIpv6FlowInfo, 1, "IPV6_FLOWINFO"},
    {IPPROTO_UDP, UDP_NO_CHECK6_RX, 1, "UDP_NO_CHECK6_RX"},
    {SOL_SOCKET, SO_RCVBUF, kGsiSocketRcvBuf, "SO_RCVBUF"},
};

std::string bind_advice(int err, std::uint16_t port) {
  switch (err) {
    case EADDRNOTAVAIL:
      return "it is not an address of this host: give one `ip addr` lists, or add it with `ip addr add`";
    case EADDRINUSE:
      return "UDP port " + std::to_string(port) +
             " is taken on it (by a Linux rxe device or another fastcm): remove the rxe device "
             "(`rdma link delete`), stop the other process, or use another address";
    case EACCES:
      return "this user may not bind that port: use a port above 1023 or run with CAP_NET_BIND_SERVICE";
    default:
      return "check the address and the port";
  }
}

}  // namespace

int open_gsi_socket(const Gid& local, std::uint16_t port, std::string& error) {
  const bool ipv4 = is_ipv4_mapped(local);
  const std::string where = "udp fabric: " + ip_text(local) + " port " + std::to_string(port) + ": ";
  const int fd = ::socket(ipv4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = where + "socket(): " + std::strerror(errno) +
            (ipv4 ? "" : " (is IPv6 disabled? enable it or use an IPv4 address)");
    return -1;
  }
  const auto fail = [&](const std::string& message) {
    error = where + message;
    ::close(fd);
    return -1;
  };
  for (const SocketOption& o : ipv4 ? std::span<const SocketOption>(kIpv4Options)
                                    : std::span<const SocketOption>(kIpv6Options)) {
    if (::setsockopt(fd, o.level, o.name, &o.value, sizeof o.value) != 0) {
      return fail(std::string("setsockopt ") + o.what + ": " + std::strerror(errno) +
                  " (the kernel lacks this option: Linux 4.x or later is needed)");
    }
  }
  sockaddr_storage address{};
  const socklen_t length = sockaddr_of(local, port, address);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    const int err = errno;
    return fail(std::string("bind: ") + std::strerror(err) + ": " + bind_advice(err, port));
  }
  return fd;
}

}  // namespace fastcm::roce
