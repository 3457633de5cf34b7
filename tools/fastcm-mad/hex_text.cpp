#include "tools/fastcm-mad/hex_text.h"

namespace fastcm::tools {

namespace {

std::optional<std::uint8_t> digit_value(char c) {
  if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<std::uint8_t>(c - 'A' + 10);
  return std::nullopt;
}

bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == ':';
}

}  // namespace

std::optional<std::vector<std::uint8_t>> parse_hex(std::string_view text) {
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  std::vector<std::uint8_t> bytes;
  bytes.reserve(text.size() / 2);
  bool have_high = false;
  std::uint8_t high = 0;
  for (const char c : text) {
    if (is_separator(c)) continue;
    const std::optional<std::uint8_t> v = digit_value(c);
    if (!v) return std::nullopt;
    if (have_high) {
      bytes.push_back(static_cast<std::uint8_t>(high << 4 | *v));
    } else {
      high = *v;
    }
    have_high = !have_high;
  }
  if (have_high) return std::nullopt;
  return bytes;
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0x0f]);
  }
  return out;
}

}  // namespace fastcm::tools
