// IP addresses as the client role takes them (--source-ip, --target-ip): the text, and the two
// forms the CM needs, a RoCE GID and rdma_cm's private-data header.
#pragma once

#include <optional>
#include <string_view>

#include "fastcm/rdma_cm.h"
#include "fastcm/types.h"

namespace fastcm::bench {

struct IpAddress {
  rdma_cm::IpVersion version = rdma_cm::IpVersion::v4;
  // IPv6: the address; IPv4: the IPv4-mapped form ::ffff:a.b.c.d, which is also how RoCE v2 and
  // Linux' rxe form a port's GID from an IPv4 address.
  rdma_cm::Ipv6Address bytes{};

  [[nodiscard]] Gid gid() const noexcept {
    Gid g;
    g.raw = bytes;
    return g;
  }

  friend constexpr bool operator==(const IpAddress&, const IpAddress&) = default;
};

// An IPv4 (dotted quad) or IPv6 address in the notation inet_pton accepts; nullopt otherwise.
// Thread contract: pure.
[[nodiscard]] std::optional<IpAddress> parse_ip_address(std::string_view text);

// rdma_cm's REQ header naming `source` as the sender (on `source_port`) and `target` as the
// address it connects to. Both must have the same version (options.cpp checks). Thread contract:
// pure.
[[nodiscard]] rdma_cm::IpHeader rdma_cm_header(const IpAddress& source, const IpAddress& target,
                                               std::uint16_t source_port) noexcept;

}  // namespace fastcm::bench
