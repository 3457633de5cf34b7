#include "fabric/roce_udp/ip_gid.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "fabric/roce_udp/rocev2_frame.h"

namespace fastcm::roce {

std::optional<Gid> gid_from_ip_text(const std::string& text) noexcept {
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return ipv4_mapped_gid(ntohl(v4.s_addr));
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) != 1) return std::nullopt;
  Gid gid;
  std::memcpy(gid.raw.data(), &v6, gid.raw.size());
  return gid;
}

socklen_t sockaddr_of(const Gid& gid, std::uint16_t port, sockaddr_storage& out) noexcept {
  out = {};
  if (is_ipv4_mapped(gid)) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    std::memcpy(&sin.sin_addr, gid.raw.data() + 12, 4);
    std::memcpy(&out, &sin, sizeof sin);
    return sizeof sin;
  }
  sockaddr_in6 sin6{};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(port);
  std::memcpy(&sin6.sin6_addr, gid.raw.data(), gid.raw.size());
  std::memcpy(&out, &sin6, sizeof sin6);
  return sizeof sin6;
}

std::optional<GidPort> gid_port_of(const sockaddr_storage& address) noexcept {
  GidPort result;
  if (address.ss_family == AF_INET) {
    sockaddr_in sin{};
    std::memcpy(&sin, &address, sizeof sin);
    result.gid = ipv4_mapped_gid(ntohl(sin.sin_addr.s_addr));
    result.port = ntohs(sin.sin_port);
    return result;
  }
  if (address.ss_family == AF_INET6) {
    sockaddr_in6 sin6{};
    std::memcpy(&sin6, &address, sizeof sin6);
    std::memcpy(result.gid.raw.data(), &sin6.sin6_addr, result.gid.raw.size());
    result.port = ntohs(sin6.sin6_port);
    return result;
  }
  return std::nullopt;
}

std::string ip_text(const Gid& gid) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (is_ipv4_mapped(gid)) {
    inet_ntop(AF_INET, gid.raw.data() + 12, text.data(), text.size());
  } else {
    inet_ntop(AF_INET6, gid.raw.data(), text.data(), text.size());
  }
  return text.data();
}

}  // namespace fastcm::roce
