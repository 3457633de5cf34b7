#include "bench/fastcm_bench/ip_address.h"

#include <arpa/inet.h>

#include <string>

#include "fabric/roce_udp/rocev2_frame.h"

namespace fastcm::bench {

std::optional<IpAddress> parse_ip_address(std::string_view text) {
  const std::string terminated(text);
  IpAddress a;
  in_addr v4{};
  if (inet_pton(AF_INET, terminated.c_str(), &v4) == 1) {
    a.version = rdma_cm::IpVersion::v4;
    a.bytes = roce::ipv4_mapped_gid(ntohl(v4.s_addr)).raw;
    return a;
  }
  if (inet_pton(AF_INET6, terminated.c_str(), a.bytes.data()) == 1) {
    a.version = rdma_cm::IpVersion::v6;
    return a;
  }
  return std::nullopt;
}

rdma_cm::IpHeader rdma_cm_header(const IpAddress& source, const IpAddress& target,
                                 std::uint16_t source_port) noexcept {
  if (source.version == rdma_cm::IpVersion::v4) {
    const auto last4 = [](const IpAddress& a) {
      return rdma_cm::Ipv4Address{a.bytes[12], a.bytes[13], a.bytes[14], a.bytes[15]};
    };
    return rdma_cm::IpHeader::ipv4(last4(source), last4(target), source_port);
  }
  return rdma_cm::IpHeader::ipv6(source.bytes, target.bytes, source_port);
}

}  // namespace fastcm::bench
