#include "examples/rping_common/rping_protocol.h"

#include <algorithm>
#include <cstdio>

namespace fastcm::examples::rping {

namespace {

constexpr const char* kPrefix = "rdma-ping-%u: ";
constexpr char kFirstLetter = 'A';  // 65
constexpr unsigned kLetters = 'z' - 'A' + 1;

// The letter `i` places after the prefix of ping `ping`.
char letter(std::uint32_t ping, std::size_t i) noexcept {
  return static_cast<char>(kFirstLetter + (ping % kLetters + i) % kLetters);
}

void put_be(std::span<std::uint8_t> out, std::uint64_t value) noexcept {
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::uint8_t>(value >> (8 * (out.size() - 1 - i)));
  }
}

std::uint64_t get_be(std::span<const std::uint8_t> in) noexcept {
  std::uint64_t v = 0;
  for (const std::uint8_t b : in) v = v << 8 | b;
  return v;
}

}  // namespace

void write_advert(const Advert& advert, std::span<std::uint8_t, kAdvertBytes> out) noexcept {
  put_be(out.subspan(0, 8), advert.addr);
  put_be(out.subspan(8, 4), advert.rkey);
  put_be(out.subspan(12, 4), advert.size);
}

Advert read_advert(std::span<const std::uint8_t, kAdvertBytes> in) noexcept {
  return Advert{get_be(in.subspan(0, 8)), static_cast<std::uint32_t>(get_be(in.subspan(8, 4))),
                static_cast<std::uint32_t>(get_be(in.subspan(12, 4)))};
}

void fill_ping(std::span<char> buffer, std::uint32_t ping) noexcept {
  const auto printed = static_cast<std::size_t>(std::snprintf(buffer.data(), buffer.size(), kPrefix, ping));
  for (std::size_t i = printed; i + 1 < buffer.size(); ++i) buffer[i] = letter(ping, i - printed);
  buffer.back() = '\0';
}

bool is_ping(std::span<const char> buffer, std::uint32_t ping) noexcept {
  if (buffer.size() < kMinSize || buffer.size() > kMaxSize || buffer.back() != '\0') return false;
  char prefix[kMinSize];
  const auto printed = static_cast<std::size_t>(std::snprintf(prefix, sizeof prefix, kPrefix, ping));
  if (!std::equal(prefix, prefix + printed, buffer.begin())) return false;
  for (std::size_t i = printed; i + 1 < buffer.size(); ++i) {
    if (buffer[i] != letter(ping, i - printed)) return false;
  }
  return true;
}

}  // namespace fastcm::examples::rping
