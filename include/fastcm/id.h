// fastcm::Id, the application's handle on a connection endpoint (CEP) or a listen.
#pragma once

#include <compare>
#include <cstdint>

namespace fastcm {

// The low 32 bits are the local communication ID as sent on the wire ([shard | slot | short
// generation], see engine/cid.h); the high 32 bits are the slot's full generation. An Id therefore
// stays safe after its endpoint is gone: every call checks the full generation and answers
// Status::stale_id instead of reaching a reused slot. A value-initialized Id names nothing.
struct Id {
  std::uint64_t raw = 0;

  [[nodiscard]] constexpr std::uint32_t comm_id() const noexcept { return static_cast<std::uint32_t>(raw); }
  [[nodiscard]] constexpr std::uint32_t generation() const noexcept {
    return static_cast<std::uint32_t>(raw >> 32);
  }
  [[nodiscard]] constexpr bool empty() const noexcept { return raw == 0; }
  [[nodiscard]] static constexpr Id make(std::uint32_t comm_id, std::uint32_t generation) noexcept {
    return Id{std::uint64_t{generation} << 32 | comm_id};
  }
  friend constexpr auto operator<=>(const Id&, const Id&) = default;
};

}  // namespace fastcm
