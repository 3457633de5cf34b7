// Checks of a received REQ's primary and alternate paths against the port it arrived on, and the
// REJ (reason and additional rejection information) each failure calls for (IBTA Table 109).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "engine/mad/cm_messages.h"
#include "fastcm/fabric.h"

namespace fastcm::engine {

struct PathRejection {
  mad::RejReason reason = mad::RejReason::invalid_gid;
  std::array<std::uint8_t, mad::kAdditionalInfoSize> ari{};
  std::uint8_t ari_length = 0;
};

// nullopt when both paths (the alternate only if present: any of its LID or GID fields set, see
// has_path in path_convert.h) can be used from `port`; otherwise the first failure, primary path first. Pure function.
[[nodiscard]] std::optional<PathRejection> validate_req_paths(const mad::Req& req,
                                                              const PortAttr& port) noexcept;

}  // namespace fastcm::engine
