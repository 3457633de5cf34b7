// Outcomes of fastcm API calls.
#pragma once

#include <cstdint>
#include <string_view>

namespace fastcm {

enum class [[nodiscard]] Status : std::uint8_t {
  ok = 0,
  stale_id,          // the Id names no live endpoint (destroyed, or never issued by this engine)
  invalid_state,     // the call is not allowed in the endpoint's current protocol state
  invalid_argument,  // a parameter is out of range (private data too long, bad port, ...)
  no_resources,      // a bounded table or pool is full; the call changed nothing
  service_in_use,    // listen: an identical service ID/mask is already listened on that port
  would_deadlock,    // destroy_sync from a shard thread on another endpoint
  not_supported,     // a feature the engine does not offer (e.g. RD transport)
};

[[nodiscard]] constexpr std::string_view to_string(Status s) noexcept {
  switch (s) {
    case Status::ok: return "ok";
    case Status::stale_id: return "stale_id";
    case Status::invalid_state: return "invalid_state";
    case Status::invalid_argument: return "invalid_argument";
    case Status::no_resources: return "no_resources";
    case Status::service_in_use: return "service_in_use";
    case Status::would_deadlock: return "would_deadlock";
    case Status::not_supported: return "not_supported";
  }
  return "unknown";
}

}  // namespace fastcm
