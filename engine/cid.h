// Local communication IDs: [shard | slot | short generation], XOR-ed with a per-engine operand.
//
// The shard bits let the receive path route any MAD that carries our ID to the owning shard
// without a lookup (DESIGN.md "Identity and routing"); the short generation lets the owning shard
// tell a reused slot from the one a stale MAD names. The operand, drawn per engine, makes IDs of a
// restarted engine unlikely to collide with those its peers still remember (the kernel CM does the
// same with its random_id_operand).
#pragma once

#include <bit>
#include <cstdint>

namespace fastcm::engine {

inline constexpr unsigned kCidGenerationBits = 8;

struct CidParts {
  std::uint32_t shard = 0;
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;  // the low kCidGenerationBits bits of the slot's generation
};

class CidLayout {
 public:
  // `shards` ≥ 1; the slot field takes every bit the shard field and the generation leave.
  constexpr CidLayout(std::uint32_t shards, std::uint32_t operand) noexcept
      : shard_bits_(shards <= 1 ? 0u : static_cast<unsigned>(std::bit_width(shards - 1))),
        operand_(operand) {}

  [[nodiscard]] constexpr unsigned slot_bits() const noexcept {
    return 32 - kCidGenerationBits - shard_bits_;
  }
  [[nodiscard]] constexpr std::uint32_t max_slots() const noexcept {
    return std::uint32_t{1} << slot_bits();
  }

  [[nodiscard]] constexpr std::uint32_t encode(CidParts p) const noexcept {
    const std::uint32_t shard_field = shard_bits_ == 0 ? 0 : p.shard << (32 - shard_bits_);
    const std::uint32_t raw =
        shard_field | (p.slot << kCidGenerationBits) | (p.generation & kGenerationMask);
    return raw ^ operand_;
  }
  [[nodiscard]] constexpr CidParts decode(std::uint32_t cid) const noexcept {
    const std::uint32_t raw = cid ^ operand_;
    CidParts p;
    p.shard = shard_bits_ == 0 ? 0 : raw >> (32 - shard_bits_);
    p.slot = (raw >> kCidGenerationBits) & (max_slots() - 1);
    p.generation = raw & kGenerationMask;
    return p;
  }

 private:
  static constexpr std::uint32_t kGenerationMask = (1u << kCidGenerationBits) - 1;
  unsigned shard_bits_;
  std::uint32_t operand_;
};

}  // namespace fastcm::engine
