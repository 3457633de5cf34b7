// Opening udp fabrics on a free UDP port and waiting for datagrams, for the tests that run over
// real sockets (tests/udp, the conformance suite over udp).
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/roce_udp/ip_gid.h"
#include "fabric/roce_udp/udp_fabric.h"

namespace fastcm::roce::test {

// A UDP port the kernel had free on `address` a moment ago (0 when it gives none).
inline std::uint16_t free_udp_port(const std::string& address) {
  const std::optional<Gid> gid = gid_from_ip_text(address);
  if (!gid) return 0;
  sockaddr_storage sa{};
  socklen_t length = sockaddr_of(*gid, 0, sa);
  const int fd = ::socket(sa.ss_family, SOCK_DGRAM, 0);
  if (fd < 0) return 0;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), length) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &length) == 0) {
    port = gid_port_of(sa)->port;
  }
  ::close(fd);
  return port;
}

// One fabric per address, all on one free UDP port (peers must share it: a reply goes to the
// sender's IP at the receiver's own port). A port taken in between by a test running in parallel
// makes a bind fail: then it tries another. Empty, with `error` set, when that keeps failing.
inline std::vector<std::unique_ptr<Fabric>> open_udp_fabrics(const std::vector<std::string>& addresses,
                                                             std::string& error) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const std::uint16_t port = free_udp_port(addresses.front());
    std::vector<std::unique_ptr<Fabric>> fabrics;
    for (const std::string& address : addresses) {
      fabrics.push_back(open_udp_fabric(UdpConfig{.addresses = {address}, .udp_port = port}, error));
      if (!fabrics.back()) break;
    }
    if (fabrics.back()) return fabrics;
  }
  return {};
}

// Waits up to `timeout_ms` for `fd` to become readable: true when it did.
inline bool wait_readable(int fd, int timeout_ms = 5000) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

}  // namespace fastcm::roce::test
