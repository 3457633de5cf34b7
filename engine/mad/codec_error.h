// Typed outcome of encoding or decoding a MAD: which rule failed and which field it names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fastcm::mad {

enum class CodecErrc : std::uint8_t {
  ok = 0,
  short_buffer,           // fewer than 256 bytes
  bad_base_version,       // MAD base version is not 1
  bad_management_class,   // not the CM class (0x07)
  bad_class_version,      // CM class version is not 2
  bad_method,             // method not allowed for the attribute (e.g. Get of a REQ)
  unknown_attribute,      // attribute ID not defined by chapter 12
  invalid_value,          // a field holds a value the spec makes invalid
  value_too_wide,         // encode: a value does not fit its field's width
};

[[nodiscard]] constexpr std::string_view to_string(CodecErrc e) noexcept {
  switch (e) {
    case CodecErrc::ok: return "ok";
    case CodecErrc::short_buffer: return "short_buffer";
    case CodecErrc::bad_base_version: return "bad_base_version";
    case CodecErrc::bad_management_class: return "bad_management_class";
    case CodecErrc::bad_class_version: return "bad_class_version";
    case CodecErrc::bad_method: return "bad_method";
    case CodecErrc::unknown_attribute: return "unknown_attribute";
    case CodecErrc::invalid_value: return "invalid_value";
    case CodecErrc::value_too_wide: return "value_too_wide";
  }
  return "unknown";
}

// `field` names the offending field as in the IBTA table (snake_case); for a field inside a repeated
// group (REQ's paths) `group` holds the group prefix, e.g. "alternate_". Both point at static strings.
struct CodecStatus {
  CodecErrc errc = CodecErrc::ok;
  std::string_view field;
  std::string_view group;

  [[nodiscard]] constexpr bool ok() const noexcept { return errc == CodecErrc::ok; }
  [[nodiscard]] static constexpr CodecStatus fail(CodecErrc e, std::string_view f) noexcept {
    return CodecStatus{e, f, {}};
  }
  // "invalid_value: primary_packet_rate" — for logs and tools, not for the per-MAD path.
  [[nodiscard]] std::string describe() const {
    std::string s(to_string(errc));
    if (!field.empty()) {
      s.append(": ").append(group).append(field);
    }
    return s;
  }
  friend constexpr bool operator==(const CodecStatus&, const CodecStatus&) = default;
};

}  // namespace fastcm::mad
