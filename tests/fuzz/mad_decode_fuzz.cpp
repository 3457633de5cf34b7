// Fuzz target for the CM MAD codec (engine/mad). For any bytes, of any length:
//  - decode() agrees with decode_header() on the header, and fails with a named error or succeeds;
//  - decode_body<M>() of every message type M, on the same bytes whatever their header says (zero
//    padded to one MAD), fails with invalid_value naming a field, or succeeds;
//  - every message so decoded re-encodes; the re-encoding keeps every bit a field declares, zeroes
//    every reserved bit, decodes back to the same header and message (decode(encode(x)) == x) and
//    encodes to the same bytes again (encode(decode(encode(x))) == encode(x)).
// A violation prints what broke and aborts, which libFuzzer (or standalone_fuzz_main.cpp) reports
// as a crash with the input saved.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <type_traits>
#include <variant>

#include "engine/mad/codec.h"
#include "tests/fuzz/cm_message_types.h"
#include "tests/fuzz/fuzz_entry_point.h"

namespace {

namespace mad = fastcm::mad;
using Mad = std::array<std::uint8_t, mad::kMadSize>;

void require(bool holds, const char* property) {
  if (!holds) {
    std::fprintf(stderr, "mad_decode_fuzz: violated: %s\n", property);
    std::abort();
  }
}

// The bits of a MAD that the header layout and M's layout declare, as a per-byte mask. Checks the
// layouts on the way: every field lies inside the MAD and no two fields claim the same bit.
template <typename M>
Mad declared_bits() {
  Mad mask{};
  auto claim = [&mask](const mad::FieldPlace& place, const auto& /*value*/) {
    for (std::size_t i = 0; i < place.width; ++i) {
      const std::size_t bit = place.bit + i;
      const std::size_t byte = place.byte + bit / 8;
      require(byte < mad::kMadSize, "every field lies inside the MAD");
      const auto bit_mask = static_cast<std::uint8_t>(0x80U >> (bit % 8));
      require((mask[byte] & bit_mask) == 0, "no two fields claim the same bit");
      mask[byte] = static_cast<std::uint8_t>(mask[byte] | bit_mask);
    }
  };
  const mad::MadHeader header;
  mad::visit_header_fields(header, claim);
  const M msg{};
  mad::visit_fields(msg, claim);
  return mask;
}

template <typename M>
const Mad& declared_bits_of() {
  static const Mad mask = declared_bits<M>();
  return mask;
}

// `header` and `msg` were decoded from `source`; its bytes before `first_checked_byte` are not
// theirs (decode_body ignores the header it was given), so only the bits after it are compared.
template <typename M>
void check_round_trip(const mad::MadHeader& header, const M& msg, mad::ConstMadSpan source,
                      std::size_t first_checked_byte) {
  require(header.attribute_id == mad::WireLayout<M>::kAttr,
          "the message type matches attribute_id");
  Mad encoded{};
  require(mad::encode(header, msg, encoded).ok(), "a decoded message re-encodes");

  const Mad& declared = declared_bits_of<M>();
  for (std::size_t i = 0; i < mad::kMadSize; ++i) {
    require((encoded[i] & ~declared[i]) == 0, "encoding leaves reserved bits zero");
    if (i >= first_checked_byte) {
      require(((encoded[i] ^ source[i]) & declared[i]) == 0,
              "re-encoding keeps every declared bit of the decoded bytes");
    }
  }

  mad::DecodedMad again;
  require(mad::decode(encoded, again).ok(), "an encoded message decodes");
  const M* again_msg = std::get_if<M>(&again.message);
  require(again_msg != nullptr && again.header == header && *again_msg == msg,
          "decode(encode(x)) == x");

  Mad reencoded{};
  require(mad::encode(again.header, *again_msg, reencoded).ok() && reencoded == encoded,
          "encode(decode(encode(x))) == encode(x)");
}

void check_decode(std::span<const std::uint8_t> input) {
  mad::DecodedMad decoded;
  const mad::CodecStatus status = mad::decode(input, decoded);
  mad::MadHeader header;
  const mad::CodecStatus header_status = mad::decode_header(input, header);

  if (input.size() < mad::kMadSize) {
    require(status.errc == mad::CodecErrc::short_buffer, "a short buffer is short_buffer");
  }
  if (!header_status.ok()) {
    require(status == header_status, "decode fails as decode_header does on a bad header");
    return;
  }
  require(decoded.header == header, "decode and decode_header read the same header");
  if (!status.ok()) {
    require(status.errc == mad::CodecErrc::invalid_value && !status.field.empty(),
            "a bad body is invalid_value naming its field");
    return;
  }
  const mad::ConstMadSpan source = input.first<mad::kMadSize>();
  std::visit([&](const auto& msg) { check_round_trip(decoded.header, msg, source, 0); },
             decoded.message);
}

void check_bodies(std::span<const std::uint8_t> input) {
  Mad padded{};
  std::copy_n(input.begin(), std::min(input.size(), mad::kMadSize), padded.begin());
  fastcm::fuzz::for_each_message_type([&padded]<typename M>(std::type_identity<M>) {
    M msg{};
    const mad::CodecStatus status = mad::decode_body(mad::ConstMadSpan(padded), msg);
    if (!status.ok()) {
      require(status.errc == mad::CodecErrc::invalid_value && !status.field.empty(),
              "a bad body is invalid_value naming its field");
      return;
    }
    constexpr mad::AttrId attr = mad::WireLayout<M>::kAttr;
    const mad::MadHeader header = mad::cm_header(fastcm::fuzz::first_allowed_method(attr), attr, 0);
    check_round_trip(header, msg, padded, mad::kMadHeaderSize);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  check_decode(input);
  check_bodies(input);
  return 0;
}
