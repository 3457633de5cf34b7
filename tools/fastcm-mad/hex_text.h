// Hex text for bytes: what people paste from captures and logs (xxd, tcpdump, ibdump), and the
// form the JSON mapping gives byte-string fields.
//
// Thread contract: pure functions; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fastcm::tools {

// Bytes from hex digits in either case. Whitespace and ':' may stand anywhere between digits
// (a separator inside a digit pair is accepted too: "0 1" is 0x01); an optional leading "0x" is
// skipped. Returns nullopt on any other character or an odd digit count.
[[nodiscard]] std::optional<std::vector<std::uint8_t>> parse_hex(std::string_view text);

// Two lowercase digits per byte, no separators ("" for no bytes).
[[nodiscard]] std::string to_hex(std::span<const std::uint8_t> bytes);

}  // namespace fastcm::tools
