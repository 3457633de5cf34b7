// GIDs as text: a GID has the shape of an IPv6 address, and RoCE GIDs are IPv6 addresses (or
// IPv4-mapped ones, ::ffff:a.b.c.d), so the text is the standard IPv6 notation.
//
// Thread contract: pure functions; no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "fastcm/types.h"

namespace fastcm::tools {

// The shortest IPv6 text (inet_ntop), e.g. "fe80::2:c903:0:1" or "::ffff:192.168.1.1".
[[nodiscard]] std::string gid_to_text(const Gid& gid);

// Any IPv6 text inet_pton accepts; nullopt otherwise.
[[nodiscard]] std::optional<Gid> gid_from_text(std::string_view text);

}  // namespace fastcm::tools
