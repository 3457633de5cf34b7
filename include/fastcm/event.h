// CM events: one per received message and one per timeout, each with typed parameters.
//
// Ownership: an event borrows the received MAD (zero-copy): every span in it points into that MAD.
// A callback's event is valid until the callback returns; Engine::retain() keeps its MAD alive past
// that until Engine::release(). An event taken from an EventQueue by poll() holds its MAD until
// Engine::release(event).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

#include "fastcm/id.h"
#include "fastcm/params.h"
#include "fastcm/status.h"
#include "fastcm/types.h"

namespace fastcm {

// A received MAD kept alive by a reference count; opaque to the application.
struct MadRef;

enum class EventType : std::uint8_t {
  req_received,
  req_error,          // REQ retries ran out (no REP, REJ or MRA in time)
  rep_received,
  rep_error,          // REP retries ran out (no RTU in time)
  rtu_received,       // passive side established
  user_established,   // Engine::establish() on the passive side: data arrived before the RTU
  rej_received,
  mra_received,
  dreq_received,
  dreq_error,         // DREQ retries ran out; the endpoint went to time-wait anyway
  drep_received,
  timewait_exit,      // the local ID may now be reused; the endpoint is idle
  lap_received,
  lap_error,
  apr_received,
  sidr_req_received,
  sidr_req_error,     // SIDR_REQ retries ran out
  sidr_rep_received,
  call_failed,        // a posted call (EngineConfig::posted_calls) was refused by the endpoint's shard
};

// The event's name ("req_received"), static storage, NUL-terminated; "unknown" outside the enum.
[[nodiscard]] constexpr std::string_view to_string(EventType t) noexcept {
  switch (t) {
    case EventType::req_received: return "req_received";
    case EventType::req_error: return "req_error";
    case EventType::rep_received: return "rep_received";
    case EventType::rep_error: return "rep_error";
    case EventType::rtu_received: return "rtu_received";
    case EventType::user_established: return "user_established";
    case EventType::rej_received: return "rej_received";
    case EventType::mra_received: return "mra_received";
    case EventType::dreq_received: return "dreq_received";
    case EventType::dreq_error: return "dreq_error";
    case EventType::drep_received: return "drep_received";
    case EventType::timewait_exit: return "timewait_exit";
    case EventType::lap_received: return "lap_received";
    case EventType::lap_error: return "lap_error";
    case EventType::apr_received: return "apr_received";
    case EventType::sidr_req_received: return "sidr_req_received";
    case EventType::sidr_req_error: return "sidr_req_error";
    case EventType::sidr_rep_received: return "sidr_rep_received";
    case EventType::call_failed: return "call_failed";
  }
  return "unknown";
}

// The Engine calls that may be posted to an endpoint's shard (EngineConfig::posted_calls) and so
// report a refusal as an event.
enum class ApiCall : std::uint8_t {
  set_context,
  send_req,
  send_rep,
  send_rtu,
  send_rej,
  send_mra,
  send_dreq,
  send_drep,
  send_lap,
  send_apr,
  send_sidr_req,
  send_sidr_rep,
  establish,
};

// The call's name ("send_rep"), static storage, NUL-terminated; "unknown" outside the enum.
[[nodiscard]] constexpr std::string_view to_string(ApiCall c) noexcept {
  switch (c) {
    case ApiCall::set_context: return "set_context";
    case ApiCall::send_req: return "send_req";
    case ApiCall::send_rep: return "send_rep";
    case ApiCall::send_rtu: return "send_rtu";
    case ApiCall::send_rej: return "send_rej";
    case ApiCall::send_mra: return "send_mra";
    case ApiCall::send_dreq: return "send_dreq";
    case ApiCall::send_drep: return "send_drep";
    case ApiCall::send_lap: return "send_lap";
    case ApiCall::send_apr: return "send_apr";
    case ApiCall::send_sidr_req: return "send_sidr_req";
    case ApiCall::send_sidr_rep: return "send_sidr_rep";
    case ApiCall::establish: return "establish";
  }
  return "unknown";
}

// A REQ as the passive side sees it: its terms as the sender stated them (ReqTerms), its paths
// turned around so that "local" is this side.
struct ReqReceived : ReqTerms {
  Id listen_id;
  std::uint64_t service_id = 0;
  Guid remote_ca_guid = 0;
  Qpn remote_qpn = 0;
  QKey remote_qkey = 0;
  std::uint32_t starting_psn = 0;
  Path primary;
  std::optional<Path> alternate;
};

struct RepReceived {
  Guid remote_ca_guid = 0;
  Qpn remote_qpn = 0;
  QKey remote_qkey = 0;
  std::uint32_t starting_psn = 0;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  std::uint8_t target_ack_delay = 0;
  std::uint8_t failover_accepted = 0;
  std::uint8_t rnr_retry_count = 0;
  bool flow_control = false;
  bool srq = false;
  std::uint32_t ece_vendor_id = 0;
};

struct RejReceived {
  std::uint16_t reason = 0;               // RejReason
  std::uint8_t message_rejected = 0;      // 0 REQ, 1 REP, 2 none
  std::span<const std::uint8_t> ari;      // rejected_info_length bytes
};

struct MraReceived {
  std::uint8_t service_timeout = 0;       // exponent added to the waiting side's timeout
};

struct LapReceived {
  Path alternate;                         // turned around: "local" is this side
};

struct AprReceived {
  std::uint8_t status = 0;                // AprStatus
  std::span<const std::uint8_t> info;
};

struct SidrReqReceived {
  Id listen_id;
  std::uint64_t service_id = 0;
  PKey pkey = 0;
  std::uint8_t port = 0;                  // local port number it arrived on
  Lid remote_lid = 0;
  std::optional<Gid> remote_gid;          // when the request carried a GRH
};

struct SidrRepReceived {
  std::uint8_t status = 0;                // SidrStatus
  Qpn qpn = 0;
  QKey qkey = 0;
  std::uint32_t ece_vendor_id = 0;
  std::span<const std::uint8_t> info;
};

// A posted call the endpoint's shard refused: what the call would have returned had it waited
// (invalid_state, invalid_argument or no_resources; never ok or stale_id). Nothing was sent.
struct CallFailed {
  ApiCall call = ApiCall::send_req;
  Status status = Status::invalid_state;
};

// Which message a timeout event concerns carries in the event type; nothing more to say.
struct NoParams {};

using EventParams = std::variant<NoParams, ReqReceived, RepReceived, RejReceived, MraReceived,
                                 LapReceived, AprReceived, SidrReqReceived, SidrRepReceived, CallFailed>;

struct Event {
  EventType type = EventType::req_received;
  Id id;                                   // the endpoint the event is about
  void* context = nullptr;                 // the endpoint's (or for new REQs, the listen's) context
  std::span<const std::uint8_t> private_data;  // full-length private data of the received message
  const MadRef* mad = nullptr;             // the received MAD; null for timeouts and call_failed
  EventParams params;
};

// Callback delivery: runs on the thread that owns the endpoint. API calls made inside it execute inline and return their status synchronously.
using EventHandler = void (*)(const Event& event, void* handler_context);

}  // namespace fastcm
