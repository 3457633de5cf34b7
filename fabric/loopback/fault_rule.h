// Fault injection rules of the loopback fabric's switch: which traffic they match and what they do.
#pragma once

#include <cstdint>
#include <optional>

namespace fastcm::loopback {

// A port of the loopback fabric: HCA index and port index within that HCA (as in Fabric::ports()).
struct PortRef {
  std::uint16_t hca = 0;
  std::uint16_t port = 0;

  friend constexpr bool operator==(const PortRef&, const PortRef&) = default;
};

// Faults applied to MADs sent from `from` to `to` whose attribute ID (MAD bytes 16-17, big-endian)
// is `attr_id`; an empty field matches anything. When several rules match a MAD, the most specific
// wins: a set attr_id outweighs a set `from`, which outweighs a set `to`.
//
// For each matching MAD, independently: it is lost with probability loss_pct; otherwise it is
// delivered twice with probability dup_pct (both copies alike); it is held back delay_ns, plus, with
// probability reorder_pct, an extra uniformly random 1..reorder_window_ns, so later MADs overtake
// it. Delays are measured on the fabric's Clock. Percentages are in [0, 100].
struct FaultRule {
  std::optional<PortRef> from{};
  std::optional<PortRef> to{};
  std::optional<std::uint16_t> attr_id{};
  double loss_pct = 0;
  double dup_pct = 0;
  double reorder_pct = 0;
  std::uint64_t delay_ns = 0;
  std::uint64_t reorder_window_ns = 1'000'000;
};

}  // namespace fastcm::loopback
