// Seeded random CM messages for round-trip tests, filled generically through visit_fields so every
// field of every message is covered without naming one.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "engine/mad/codec.h"

namespace fastcm::tools::test {

// A random value for one field: integers and enums fill exactly the field's width, bools are
// 0 or 1, GIDs and byte arrays get random bytes throughout.
class RandomizeField {
 public:
  explicit RandomizeField(std::mt19937_64& rng) : rng_(rng) {}

  template <typename T>
  void operator()(const mad::FieldPlace& place, T& member) {
    if constexpr (std::is_same_v<T, bool>) {
      member = (rng_() & 1U) != 0;
    } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
      using Raw = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                              std::type_identity<T>>::type;
      const std::uint64_t mask =
          place.width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << place.width) - 1;
      member = static_cast<T>(static_cast<Raw>(rng_() & mask));
    } else if constexpr (std::is_same_v<T, Gid>) {
      for (std::uint8_t& b : member.raw) b = static_cast<std::uint8_t>(rng_());
    } else {
      for (std::uint8_t& b : member) b = static_cast<std::uint8_t>(rng_());
    }
  }

 private:
  std::mt19937_64& rng_;
};

// A header the codec accepts for attribute `attr`, with random TID, status, class-specific bits and
// attribute modifier.
inline mad::MadHeader random_header(std::mt19937_64& rng, mad::AttrId attr) {
  mad::MadHeader h;
  h.attribute_id = attr;
  h.method = attr == mad::AttrId::class_port_info ? mad::Method::get_resp : mad::Method::send;
  h.status = static_cast<std::uint16_t>(rng());
  h.class_specific = static_cast<std::uint16_t>(rng());
  h.transaction_id = rng();
  h.attribute_modifier = static_cast<std::uint32_t>(rng());
  return h;
}

// A message M with every field random that the codec encodes under `header`: each field the codec
// refuses as invalid (it names one per try) is drawn again until it accepts. Throws
// std::runtime_error when that does not happen within a bounded number of tries.
template <typename M>
M random_message(std::mt19937_64& rng, const mad::MadHeader& header) {
  M msg;
  RandomizeField randomize(rng);
  mad::visit_fields(msg, randomize);
  std::array<std::uint8_t, mad::kMadSize> buf{};
  constexpr int kMaxRedraws = 10000;
  for (int i = 0; i < kMaxRedraws; ++i) {
    const mad::CodecStatus status = mad::encode(header, msg, buf);
    if (status.ok()) return msg;
    if (status.errc != mad::CodecErrc::invalid_value) {
      throw std::runtime_error("random_message: unexpected " + status.describe());
    }
    mad::visit_fields(msg, [&](const mad::FieldPlace& place, auto& member) {
      if (place.prefix == status.group && place.name == status.field) randomize(place, member);
    });
  }
  throw std::runtime_error("random_message: no valid message after redrawing invalid fields");
}

}  // namespace fastcm::tools::test
