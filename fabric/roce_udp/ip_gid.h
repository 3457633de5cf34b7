// IP addresses as RoCEv2 GIDs and back: IPv4 a.b.c.d is the IPv4-mapped GID ::ffff:a.b.c.d, an
// IPv6 address is its own GID, as Linux' Soft-RoCE (rxe) and RoCEv2 HCAs fill a port's GID table.
// Used by the udp fabric and by programs that name RoCE ports by IP address.
//
// Thread contract: pure functions over caller-owned values; nothing allocates or blocks.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>

#include "fastcm/types.h"

namespace fastcm::roce {

// The GID of an address in text form ("127.0.0.1", "::1"), or std::nullopt when the text is
// neither. An IPv4-mapped IPv6 text ("::ffff:127.0.0.1") is the IPv4 address.
[[nodiscard]] std::optional<Gid> gid_from_ip_text(const std::string& text) noexcept;

// `gid` at UDP `port` as a socket address: sockaddr_in for an IPv4-mapped GID, sockaddr_in6
// otherwise. Returns the address's length.
socklen_t sockaddr_of(const Gid& gid, std::uint16_t port, sockaddr_storage& out) noexcept;

// The GID and UDP port (host order) of an AF_INET or AF_INET6 socket address; std::nullopt for any
// other family.
struct GidPort {
  Gid gid;
  std::uint16_t port = 0;
};
[[nodiscard]] std::optional<GidPort> gid_port_of(const sockaddr_storage& address) noexcept;

// The GID as IP text, for messages.
[[nodiscard]] std::string ip_text(const Gid& gid);

}  // namespace fastcm::roce
