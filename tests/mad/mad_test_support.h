// Shared helpers of the CM codec tests: the list of message types, headers, a seeded randomizer
// driven by visit_fields, and bit access written independently of the codec's BitSpan so the tests
// do not check the codec against itself.
//
// Thread contract: test code, single-threaded.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "engine/mad/codec.h"

namespace fastcm::mad::test {

using Mad = std::array<std::uint8_t, kMadSize>;

// Every message of chapter 12, for typed tests.
using AllMessages = ::testing::Types<ClassPortInfo, Req, Mra, Rej, Rep, Rtu, Dreq, Drep, SidrReq,
                                     SidrRep, Lap, Apr>;

// Names typed-test instances after the message ("req", "class_port_info").
struct MessageName {
  template <typename M>
  static std::string GetName(int) {
    return std::string(attr_name(WireLayout<M>::kAttr));
  }
};

// The TID every fixed header uses: eight distinct bytes, so byte order shows in a dump.
inline constexpr std::uint64_t kTestTid = 0x0102030405060708;

// The method a message normally travels with: GetResp for ClassPortInfo, Send for the others.
template <CmMessage M>
constexpr Method usual_method() noexcept {
  return WireLayout<M>::kAttr == AttrId::class_port_info ? Method::get_resp : Method::send;
}

template <CmMessage M>
constexpr MadHeader header_for() noexcept {
  return cm_header(usual_method<M>(), WireLayout<M>::kAttr, kTestTid);
}

// The method bytes chapter 12 allows, written out apart from the codec's method_allowed():
// ClassPortInfo takes Get (0x01), Set (0x02) and GetResp (0x81); the other attributes Send (0x03).
[[nodiscard]] constexpr bool chapter12_allows(AttrId attr, unsigned method_byte) noexcept {
  if (attr == AttrId::class_port_info) {
    return method_byte == 0x01 || method_byte == 0x02 || method_byte == 0x81;
  }
  return method_byte == 0x03;
}

[[nodiscard]] constexpr std::uint64_t width_mask(unsigned width) noexcept {
  return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
}

// `width` bits of `buf` starting `bit` bits below the most significant bit of `byte`, read and
// written one bit at a time (most significant first).
[[nodiscard]] std::uint64_t read_bits(std::span<const std::uint8_t> buf, std::size_t byte,
                                      unsigned bit, unsigned width);
void write_bits(std::span<std::uint8_t> buf, std::size_t byte, unsigned bit, unsigned width,
                std::uint64_t value);

// "MAD byte 59: got 0x00, want 0x9a" lines for every byte that differs; empty when equal.
[[nodiscard]] std::string byte_diff(std::span<const std::uint8_t> got,
                                    std::span<const std::uint8_t> want);

// Scalar members (integers, enums, bools) travel as raw bits; Gids and arrays as bytes.
template <typename T>
concept ScalarMember = std::is_integral_v<T> || std::is_enum_v<T>;

template <ScalarMember T>
[[nodiscard]] constexpr std::uint64_t raw_of(T value) noexcept {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<std::uint64_t>(static_cast<std::underlying_type_t<T>>(value));
  } else {
    return static_cast<std::uint64_t>(value);
  }
}

template <ScalarMember T>
constexpr void set_raw(T& member, std::uint64_t raw) noexcept {
  if constexpr (std::is_same_v<T, bool>) {
    member = raw != 0;
  } else if constexpr (std::is_enum_v<T>) {
    member = static_cast<T>(static_cast<std::underlying_type_t<T>>(raw));
  } else {
    member = static_cast<T>(raw);
  }
}

inline std::span<std::uint8_t> bytes_of(Gid& gid) noexcept { return gid.raw; }
inline std::span<const std::uint8_t> bytes_of(const Gid& gid) noexcept { return gid.raw; }
template <std::size_t N>
std::span<std::uint8_t> bytes_of(std::array<std::uint8_t, N>& bytes) noexcept {
  return bytes;
}
template <std::size_t N>
std::span<const std::uint8_t> bytes_of(const std::array<std::uint8_t, N>& bytes) noexcept {
  return bytes;
}

// How many fields visit_fields reports for M.
template <CmMessage M>
[[nodiscard]] std::size_t field_count() {
  M msg{};
  std::size_t n = 0;
  visit_fields(msg, [&n](const FieldPlace&, const auto&) { ++n; });
  return n;
}

// Calls fn(place, member) for the index-th field of msg (in visit order).
template <typename M, typename Fn>
void with_field(M& msg, std::size_t index, Fn&& fn) {
  std::size_t i = 0;
  visit_fields(msg, [&](const FieldPlace& place, auto& member) {
    if (i++ == index) fn(place, member);
  });
}

// Draws one member: random bits within the field's width, or random bytes.
template <typename T>
void draw_member(const FieldPlace& place, T& member, std::mt19937_64& rng) {
  if constexpr (ScalarMember<T>) {
    set_raw(member, rng() & width_mask(place.width));
  } else {
    for (std::uint8_t& b : bytes_of(member)) b = static_cast<std::uint8_t>(rng());
  }
}

// A message whose every field holds random bits of its width, redrawn until encode() accepts it:
// each rejection names the field (and group) the spec forbids, and only that field is drawn again.
template <CmMessage M>
[[nodiscard]] M random_valid_message(std::mt19937_64& rng) {
  M msg{};
  visit_fields(msg, [&rng](const FieldPlace& place, auto& member) {
    draw_member(place, member, rng);
  });
  Mad out{};
  for (int attempt = 0; attempt < 10000; ++attempt) {
    const CodecStatus status = encode(header_for<M>(), msg, out);
    if (status.ok()) return msg;
    EXPECT_EQ(status.errc, CodecErrc::invalid_value) << status.describe();
    bool redrawn = false;
    visit_fields(msg, [&](const FieldPlace& place, auto& member) {
      if (place.prefix == status.group && place.name == status.field) {
        draw_member(place, member, rng);
        redrawn = true;
      }
    });
    if (!redrawn) {
      ADD_FAILURE() << "no field matches the error " << status.describe();
      return msg;
    }
  }
  ADD_FAILURE() << "no valid " << attr_name(WireLayout<M>::kAttr) << " drawn";
  return msg;
}

// A header M may travel with, with random TID, status, class-specific bits and modifier.
template <CmMessage M>
[[nodiscard]] MadHeader random_header(std::mt19937_64& rng) {
  MadHeader h = header_for<M>();
  if constexpr (WireLayout<M>::kAttr == AttrId::class_port_info) {
    constexpr std::array<Method, 3> kMethods{Method::get, Method::set, Method::get_resp};
    h.method = kMethods[rng() % kMethods.size()];
  }
  h.status = static_cast<std::uint16_t>(rng());
  h.class_specific = static_cast<std::uint16_t>(rng());
  h.transaction_id = rng();
  h.attribute_modifier = static_cast<std::uint32_t>(rng());
  return h;
}

// Writes every field of the header and message at its FieldPlace into a zeroed MAD with the
// test's own bit writer: what encode() must produce if every declared place is what it writes and
// every reserved bit is zero.
template <CmMessage M>
[[nodiscard]] Mad render_by_places(const MadHeader& header, const M& msg) {
  Mad out{};
  auto writer = [&out](const FieldPlace& place, const auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    if constexpr (ScalarMember<T>) {
      write_bits(out, place.byte, place.bit, place.width, raw_of(member));
    } else {
      const auto bytes = bytes_of(member);
      std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(place.byte));
    }
  };
  visit_header_fields(header, writer);
  visit_fields(msg, writer);
  return out;
}

// One bit set for every MAD bit a declared field of the header or of M covers. A bit covered twice
// is reported as a test failure naming both fields.
template <CmMessage M>
[[nodiscard]] Mad declared_bits() {
  Mad covered{};
  std::array<std::string, kMadSize * 8> owner{};
  auto mark = [&](const FieldPlace& place, const auto&) {
    const std::string name = std::string(place.prefix) + std::string(place.name);
    const std::size_t first = place.byte * 8 + place.bit;
    for (std::size_t b = first; b < first + place.width; ++b) {
      if (b >= kMadSize * 8) {
        ADD_FAILURE() << name << " runs past the end of the MAD";
        return;
      }
      if (!owner[b].empty()) {
        ADD_FAILURE() << name << " overlaps " << owner[b] << " at MAD bit " << b;
      }
      owner[b] = name;
      write_bits(covered, b / 8, static_cast<unsigned>(b % 8), 1, 1);
    }
  };
  MadHeader header{};
  visit_header_fields(header, mark);
  M msg{};
  visit_fields(msg, mark);
  return covered;
}

// ---- Golden MADs ------------------------------------------------------------------------------

// One byte of a hand-written MAD: its offset from the start of the MAD and its value.
struct ByteAt {
  std::size_t mad_byte;
  std::uint8_t value;
};

// Sets the listed bytes; a byte already non-zero (listed twice) fails the test.
void put(Mad& mad, std::initializer_list<ByteAt> bytes);

// start, start+1, ... (wrapping): recognisable content for GIDs, ARI and private data, whose
// order and position then show in a dump.
template <std::size_t N>
[[nodiscard]] constexpr std::array<std::uint8_t, N> counting_bytes(std::uint8_t start) noexcept {
  std::array<std::uint8_t, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = static_cast<std::uint8_t>(start + i);
  return out;
}
[[nodiscard]] constexpr Gid counting_gid(std::uint8_t start) noexcept {
  Gid g;
  g.raw = counting_bytes<16>(start);
  return g;
}
void put_counting_bytes(Mad& mad, std::size_t mad_byte, std::size_t count, std::uint8_t start);

// The header bytes of a CM Send carrying attribute 0x00<attr_low> with TID kTestTid (IBTA Table
// 145): base version 1, class 0x07, class version 2, method 0x03, status 0, class-specific 0,
// TID big-endian at 8-15, attribute ID at 16-17, bytes 18-19 reserved, modifier 0 at 20-23.
[[nodiscard]] Mad send_header_bytes(std::uint8_t attr_low);

// encode(header, msg) must give exactly `want`, and decode(want) must give back header and msg.
template <CmMessage M>
void expect_golden(const MadHeader& header, const M& msg, const Mad& want) {
  Mad got{};
  ASSERT_EQ(encode(header, msg, got), CodecStatus{});
  EXPECT_EQ(byte_diff(got, want), "");
  DecodedMad decoded;
  ASSERT_EQ(decode(want, decoded), CodecStatus{});
  EXPECT_EQ(decoded.header, header);
  ASSERT_TRUE(std::holds_alternative<M>(decoded.message));
  EXPECT_TRUE(std::get<M>(decoded.message) == msg);
}

}  // namespace fastcm::mad::test
