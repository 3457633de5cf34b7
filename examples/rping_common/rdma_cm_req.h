// A REQ as Linux' rdma_cm (kernel 6.1) sends one on RoCE for an IP-addressed connection on the
// TCP port space, so that an rdma_cm listener (rping -s, cmtime -b, ...) takes it as one of its
// own: the service ID of the TCP port, rdma_cm's IP header first in the private data, and the
// route rdma_cm resolves on RoCE (no LIDs, the IP route's hop limit, Subnet Local clear, the
// port's active MTU, CMA_IBOE_PACKET_LIFETIME), with rdma_cm's CM response timeout and retries.
//
// Thread contract: pure functions; any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "fastcm/fabric.h"
#include "fastcm/params.h"
#include "fastcm/rdma_cm.h"

namespace fastcm::examples {

// rdma_cm's CMA_CM_RESPONSE_TIMEOUT and CMA_MAX_CM_RETRIES.
inline constexpr std::uint8_t kRdmaCmResponseTimeout = 20;
inline constexpr std::uint8_t kRdmaCmMaxRetries = 15;

// Where the connection goes: from the port's GID `source` (an IP address) to `target`, TCP port
// `port`, from rdma_cm source port `source_port`.
struct RdmaCmTarget {
  Gid source;
  Gid target;
  std::uint16_t port = 0;
  std::uint16_t source_port = 0;
};

// The REQ, its private data (rdma_cm's header) in `header`, which must outlive the send_req call.
// The caller sets qpn and starting_psn (and may change the rest). Responder resources and
// initiator depth are 1, as rping and ucmatose ask.
[[nodiscard]] ReqParams rdma_cm_req(const PortAttr& port, const RdmaCmTarget& to,
                                    std::array<std::uint8_t, rdma_cm::kIpHeaderSize>& header) noexcept;

// The port's GID a connection to `target` leaves from when none is named: its first GID of the
// same kind (IPv4-mapped or IPv6) that is not link-local; nullopt when it has none.
[[nodiscard]] std::optional<Gid> source_gid_for(const PortAttr& port, const Gid& target) noexcept;

// A source port from rdma_cm's range for connecting IDs (the ephemeral ports), at random.
[[nodiscard]] std::uint16_t random_source_port();

}  // namespace fastcm::examples
