// The UDP socket behind one udp-fabric port: bound to the port's address, non-blocking, set up so
// that what the kernel sends is what the ICRC was computed for and what it receives shows the
// GRH fields. Internal to the udp fabric.
#pragma once

#include <cstdint>
#include <string>

#include "fastcm/types.h"

namespace fastcm::roce {

// Receive buffer asked for (the kernel caps it at net.core.rmem_max): the port's receive queue.
inline constexpr int kGsiSocketRcvBuf = 4 << 20;

// IPV6_FLOWINFO of <linux/in6.h>, which cannot be included next to glibc's <netinet/in.h>: as a
// socket option it asks for each received datagram's flow information (traffic class and flow
// label), which then arrives as a control message of this type.
inline constexpr int kIpv6FlowInfo = 11;

// Opens a UDP socket bound to `local` (an IPv4-mapped GID binds IPv4) at `port`, with:
//   - O_NONBLOCK and close-on-exec;
//   - path MTU discovery "do" (IP_PMTUDISC_DO / IPV6_PMTUDISC_DO): DF set, never fragmented, and
//     on an unconnected IPv4 socket IP ID 0;
//   - receive ancillary data: IPv4 TTL and TOS; IPv6 hop limit, traffic class and flow info;
//   - IPv6 only (no IPv4-mapped traffic on an IPv6 socket) and UDP_NO_CHECK6_RX, because rxe
//     sends IPv6 UDP with a zero checksum, which Linux otherwise drops;
//   - SO_RCVBUF kGsiSocketRcvBuf.
// Returns the fd, or -1 with `error` set to one line naming the cause and the fix.
// Thread contract: any thread; blocks only in the system calls.
[[nodiscard]] int open_gsi_socket(const Gid& local, std::uint16_t port, std::string& error);

}  // namespace fastcm::roce
