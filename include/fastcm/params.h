// Parameters of the CM calls, in host units. The engine turns them into wire fields; limits quoted
// here are the wire limits of IBTA Vol. 1 chapter 12.
//
// Ownership: every span is borrowed for the duration of the call only (the engine copies what it
// keeps). Thread contract: plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "fastcm/types.h"

namespace fastcm {

// Maximum private data of each message, in bytes.
inline constexpr std::size_t kMaxReqPrivateData = 92;
inline constexpr std::size_t kMaxMraPrivateData = 222;
inline constexpr std::size_t kMaxRejPrivateData = 148;
inline constexpr std::size_t kMaxRepPrivateData = 196;
inline constexpr std::size_t kMaxRtuPrivateData = 224;
inline constexpr std::size_t kMaxDreqPrivateData = 220;
inline constexpr std::size_t kMaxDrepPrivateData = 224;
inline constexpr std::size_t kMaxSidrReqPrivateData = 216;
inline constexpr std::size_t kMaxSidrRepPrivateData = 136;
inline constexpr std::size_t kMaxLapPrivateData = 168;
inline constexpr std::size_t kMaxAprPrivateData = 148;
inline constexpr std::size_t kMaxAdditionalInfo = 72;  // REJ ARI, APR and SIDR_REP info

enum class QpType : std::uint8_t { rc, uc, xrc };

// One direction-neutral path as a path record gives it, seen from the local port ("local" is ours).
struct Path {
  Lid local_lid = 0;
  Lid remote_lid = 0;
  Gid local_gid;
  Gid remote_gid;
  std::uint32_t flow_label = 0;         // 20 bits
  std::uint8_t traffic_class = 0;
  std::uint8_t hop_limit = 0;           // > 1 means the path leaves the subnet (GRH required)
  std::uint8_t sl = 0;                  // 4 bits
  std::uint8_t mtu = 0;                 // MTU code, 1 = 256 ... 5 = 4096
  std::uint8_t rate = 0;                // static rate code, 0 = port current
  std::uint8_t packet_life_time = 0;    // timeout exponent: 4.096 µs · 2^t
  std::uint8_t port = 1;                // local port number (1-based) the path leaves from
  PKey pkey = 0xFFFF;
  bool subnet_local = true;

  friend constexpr bool operator==(const Path&, const Path&) = default;
};

// What to do when a listen's backlog (REQs received but not yet answered) is full.
enum class BacklogPolicy : std::uint8_t {
  drop,          // drop the REQ silently; the peer retries after its CM response timeout
  reject,        // REJ "no resources"
  mra,           // MRA the REQ with the listen's service timeout and keep it outside the backlog
};

// The connection's terms a REQ carries, in one definition for the REQ sent (ReqParams), the REQ
// received (ReqReceived, as its sender stated them) and an endpoint's view (ConnectionInfo: this
// side's, so on the passive side responder resources and initiator depth, and the two timeouts,
// are the REQ's crosswise). The engine maps them to and from the wire in one place.
struct ReqTerms {
  QpType qp_type = QpType::rc;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  std::uint8_t remote_cm_response_timeout = 20;   // exponent; how long the peer may take to answer
  std::uint8_t local_cm_response_timeout = 20;    // exponent; how long we take to answer the REP
  std::uint8_t retry_count = 7;                   // 3 bits, transport retries
  std::uint8_t rnr_retry_count = 7;               // 3 bits
  std::uint8_t max_cm_retries = 15;               // 4 bits, REQ retransmissions before a timeout
  // End-to-End Flow Control (IBTA Table 106): whether our CA really issues end-to-end credits
  // (9.7.7.2) rather than always advertising "invalid credits". Off by default: the CM cannot know
  // the CA, a QP on an SRQ never issues them, and it is what librdmacm sends unless told (the
  // Linux kernel CM only passes the peer's value on, it sets up no QP by it).
  bool flow_control = false;
  bool srq = false;
  std::uint32_t ece_vendor_id = 0;                // 24 bits
};

// The REQ to send: its terms and what addresses it.
struct ReqParams : ReqTerms {
  std::uint64_t service_id = 0;
  Path primary;
  std::optional<Path> alternate;
  Qpn qpn = 0;
  std::uint32_t starting_psn = 0;                 // 24 bits: the first PSN our receive queue expects
  std::span<const std::uint8_t> private_data;     // at most kMaxReqPrivateData
};

struct RepParams {
  Qpn qpn = 0;
  std::uint32_t starting_psn = 0;                 // the first PSN our receive queue expects
  // Sent (and used by init_qp_attr) clamped to the REQ's offer (its initiator depth and responder
  // resources, crosswise) and to the local CA's limits (CaLimits): 255 asks for as many as possible.
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  // Exponent (4.096 µs · 2^n) the active side adds to its QP's ACK timeout; unset: the local CA's
  // ACK delay (CaLimits::local_ca_ack_delay), as the Linux kernel CM always sends.
  std::optional<std::uint8_t> target_ack_delay;
  std::uint8_t failover_accepted = 0;             // 0 accepted, 1 unsupported, 2 rejected
  std::uint8_t rnr_retry_count = 7;
  bool flow_control = false;                      // as ReqParams::flow_control
  bool srq = false;
  std::uint32_t ece_vendor_id = 0;
  std::span<const std::uint8_t> private_data;     // at most kMaxRepPrivateData
};

struct RejParams {
  std::uint16_t reason = 28;                      // RejReason: 28 = consumer reject
  std::span<const std::uint8_t> ari;              // at most kMaxAdditionalInfo
  std::span<const std::uint8_t> private_data;     // at most kMaxRejPrivateData
};

struct MraParams {
  std::uint8_t service_timeout = 20;              // exponent: how long until we answer
  std::span<const std::uint8_t> private_data;     // at most kMaxMraPrivateData
};

struct LapParams {
  Path alternate;
  std::uint8_t remote_cm_response_timeout = 20;
  std::span<const std::uint8_t> private_data;     // at most kMaxLapPrivateData
};

struct AprParams {
  std::uint8_t status = 0;                        // AprStatus, 0 = success
  std::span<const std::uint8_t> info;             // at most kMaxAdditionalInfo
  std::span<const std::uint8_t> private_data;     // at most kMaxAprPrivateData
};

struct SidrReqParams {
  std::uint64_t service_id = 0;
  Path path;                                      // where the SIDR_REQ goes
  std::uint8_t timeout = 20;                      // exponent of the wait for the SIDR_REP
  std::uint8_t max_retries = 3;
  std::span<const std::uint8_t> private_data;     // at most kMaxSidrReqPrivateData
};

struct SidrRepParams {
  std::uint8_t status = 0;                        // SidrStatus, 0 = success
  Qpn qpn = 0;
  QKey qkey = 0;
  std::uint32_t ece_vendor_id = 0;
  std::span<const std::uint8_t> info;             // at most kMaxAdditionalInfo
  std::span<const std::uint8_t> private_data;     // at most kMaxSidrRepPrivateData
};

}  // namespace fastcm
