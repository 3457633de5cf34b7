#include "tools/fastcm-mad/gid_text.h"

#include <arpa/inet.h>

#include <array>

namespace fastcm::tools {

std::string gid_to_text(const Gid& gid) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  // inet_ntop fails only for an unknown family or a buffer too small, neither possible here.
  inet_ntop(AF_INET6, gid.raw.data(), text.data(), static_cast<socklen_t>(text.size()));
  return text.data();
}

std::optional<Gid> gid_from_text(std::string_view text) {
  const std::string terminated(text);
  Gid gid;
  if (inet_pton(AF_INET6, terminated.c_str(), gid.raw.data()) != 1) return std::nullopt;
  return gid;
}

}  // namespace fastcm::tools
