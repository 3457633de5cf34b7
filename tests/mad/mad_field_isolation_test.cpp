// Field placement: setting one field changes exactly the bits of its FieldPlace and nothing else,
// no two fields share a bit, and the bits no field covers are exactly the reserved ones of the
// IBTA tables.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/mad/mad_test_support.h"

namespace fastcm::mad::test {
namespace {

// Field-list encoding of one struct into a zeroed MAD. It bypasses the header checks and REQ's
// transport/extended-transport rule (those have their own tests) so that every field can be set
// alone; the per-field validity checks still apply.
template <typename T>
struct Layout {
  static void visit(T& msg, auto&& v) { visit_fields(msg, v); }
  static CodecStatus encode(const T& msg, Mad& out) {
    out.fill(0);
    return WireLayout<T>::Fields::encode(msg, out.data() + kMadHeaderSize);
  }
  static CodecStatus decode(const Mad& in, T& msg) {
    return WireLayout<T>::Fields::decode(in.data() + kMadHeaderSize, msg);
  }
};

template <>
struct Layout<MadHeader> {
  static void visit(MadHeader& h, auto&& v) { visit_header_fields(h, v); }
  static CodecStatus encode(const MadHeader& h, Mad& out) {
    out.fill(0);
    return MadHeaderLayout::encode(h, out.data());
  }
  static CodecStatus decode(const Mad& in, MadHeader& h) {
    return MadHeaderLayout::decode(in.data(), h);
  }
};

template <typename T>
std::size_t count_fields() {
  T probe{};
  std::size_t n = 0;
  Layout<T>::visit(probe, [&n](const FieldPlace&, const auto&) { ++n; });
  return n;
}

template <typename T, typename Fn>
void on_field(T& msg, std::size_t index, Fn&& fn) {
  std::size_t i = 0;
  Layout<T>::visit(msg, [&](const FieldPlace& place, auto& member) {
    if (i++ == index) fn(place, member);
  });
}

// The values tried for a scalar field: every value of a field up to 8 bits wide (so each valid one
// is placed and each invalid one is refused by name), else all-ones and every single bit.
std::vector<std::uint64_t> values_for(unsigned width) {
  std::vector<std::uint64_t> values;
  if (width <= 8) {
    for (std::uint64_t v = 0; v <= width_mask(width); ++v) values.push_back(v);
  } else {
    values.push_back(width_mask(width));
    for (unsigned b = 0; b < width; ++b) values.push_back(std::uint64_t{1} << b);
  }
  return values;
}

// For each field of T alone: the encoding equals the default struct's encoding with exactly the
// field's declared bits replaced by the value, and decoding it gives back the struct.
template <typename T>
void expect_each_field_isolated() {
  const T defaults{};
  Mad base{};
  ASSERT_EQ(Layout<T>::encode(defaults, base), CodecStatus{});

  for (std::size_t k = 0; k < count_fields<T>(); ++k) {
    T probe{};
    FieldPlace place{};
    bool scalar = false;
    on_field(probe, k, [&](const FieldPlace& p, const auto& member) {
      place = p;
      scalar = ScalarMember<std::remove_cvref_t<decltype(member)>>;
    });
    const std::string name = std::string(place.prefix) + std::string(place.name);
    SCOPED_TRACE(name);

    if (!scalar) {  // byte strings: all 0xff
      T msg{};
      on_field(msg, k, [](const FieldPlace&, auto& member) {
        if constexpr (!ScalarMember<std::remove_cvref_t<decltype(member)>>) {
          for (std::uint8_t& b : bytes_of(member)) b = 0xff;
        }
      });
      Mad out{};
      ASSERT_EQ(Layout<T>::encode(msg, out), CodecStatus{});
      Mad expected = base;
      for (std::size_t i = 0; i < place.width / 8; ++i) expected[place.byte + i] = 0xff;
      EXPECT_EQ(byte_diff(out, expected), "");
      T back{};
      ASSERT_EQ(Layout<T>::decode(out, back), CodecStatus{});
      EXPECT_TRUE(back == msg);
      continue;
    }

    std::uint64_t largest_accepted = 0;
    for (const std::uint64_t value : values_for(place.width)) {
      T msg{};
      on_field(msg, k, [value](const FieldPlace&, auto& member) {
        if constexpr (ScalarMember<std::remove_cvref_t<decltype(member)>>) set_raw(member, value);
      });
      Mad out{};
      const CodecStatus status = Layout<T>::encode(msg, out);
      if (!status.ok()) {
        // A refused value must be refused by name, as a value the spec makes invalid.
        EXPECT_EQ(status, (CodecStatus{CodecErrc::invalid_value, place.name, place.prefix}))
            << "value " << value;
        continue;
      }
      if (value > largest_accepted) largest_accepted = value;
      Mad expected = base;
      write_bits(expected, place.byte, place.bit, place.width, value);
      EXPECT_EQ(byte_diff(out, expected), "") << "value " << value;
      T back{};
      ASSERT_EQ(Layout<T>::decode(out, back), CodecStatus{}) << "value " << value;
      EXPECT_TRUE(back == msg) << "value " << value;
    }
    EXPECT_NE(largest_accepted, 0U) << "no non-zero value of the field is accepted";
  }
}

template <typename M>
class MadFieldIsolation : public ::testing::Test {};
TYPED_TEST_SUITE(MadFieldIsolation, AllMessages, MessageName);

TYPED_TEST(MadFieldIsolation, EachFieldWritesExactlyItsDeclaredBits) {
  expect_each_field_isolated<TypeParam>();
}

TEST(MadFieldIsolationHeader, EachHeaderFieldWritesExactlyItsDeclaredBits) {
  expect_each_field_isolated<MadHeader>();
}

// A reserved span as the IBTA table gives it: byte offset within the CM data (MAD byte 24 on),
// first bit (0 = most significant) and length in bits.
struct Reserved {
  std::size_t cm_byte;
  unsigned bit;
  unsigned width;
};

// The bits of a MAD that no declared field covers must be exactly the table's reserved rows plus
// the common header's reserved bytes 18-19 (IBTA Table 145). declared_bits() also fails on any
// bit covered by two fields.
template <CmMessage M>
void expect_reserved_bits(std::initializer_list<Reserved> table_rows) {
  Mad want{};
  write_bits(want, 18, 0, 16, 0xffff);
  for (const Reserved& r : table_rows) {
    for (unsigned i = 0; i < r.width; ++i) {
      const std::size_t at = (kMadHeaderSize + r.cm_byte) * 8 + r.bit + i;
      write_bits(want, at / 8, static_cast<unsigned>(at % 8), 1, 1);
    }
  }
  Mad reserved = declared_bits<M>();
  for (std::uint8_t& b : reserved) b = static_cast<std::uint8_t>(~b);
  EXPECT_EQ(byte_diff(reserved, want), "") << attr_name(WireLayout<M>::kAttr);
}

TEST(MadLayoutTables, ReservedBitsAreExactlyThoseOfTheTables) {
  // Table 106 REQ: byte 4; bytes 24-27; per path the 4 bits after the flow label, the 2 bits
  // before the packet rate, the 3 bits after subnet local and after the ACK timeout; the 2 bits
  // after SAP Supported.
  expect_reserved_bits<Req>({{4, 0, 8},
                             {24, 0, 32},
                             {90, 4, 4},
                             {91, 0, 2},
                             {94, 5, 3},
                             {95, 5, 3},
                             {134, 4, 4},
                             {135, 0, 2},
                             {138, 5, 3},
                             {139, 6, 2}});
  // Table 107 MRA: after MRAed (2 bits) and after the service timeout (5 bits).
  expect_reserved_bits<Mra>({{8, 2, 6}, {9, 5, 3}});
  // Table 108 REJ: after Message Rejected (2 bits) and after Rejected Info Length (7 bits).
  expect_reserved_bits<Rej>({{8, 2, 6}, {9, 7, 1}});
  // Table 110 REP: the low nibble of byte 27 (after RNR retry count and SRQ).
  expect_reserved_bits<Rep>({{27, 4, 4}});
  expect_reserved_bits<Rtu>({});                 // Table 111: no reserved field
  expect_reserved_bits<Dreq>({{11, 0, 8}});      // Table 112: after the remote QPN/EECN
  expect_reserved_bits<Drep>({});                // Table 113
  // Table 115 LAP: bytes 8-11; 3 bits after the CM response timeout; bytes 16-19; the 4 bits
  // after the flow label; 2 bits before the packet rate; 3 bits after subnet local and after the
  // ACK timeout.
  expect_reserved_bits<Lap>(
      {{8, 0, 32}, {15, 5, 3}, {16, 0, 32}, {58, 4, 4}, {61, 0, 2}, {62, 5, 3}, {63, 5, 3}});
  expect_reserved_bits<Apr>({{10, 0, 16}});      // Table 116: after AP Status
  expect_reserved_bits<SidrReq>({{6, 0, 16}});   // Table 119: after the P_Key
  expect_reserved_bits<SidrRep>({});             // Table 120: vendor ID fills the gaps
  // Table 146 ClassPortInfo: the byte before RedirectQP; everything after the 72-byte attribute.
  expect_reserved_bits<ClassPortInfo>(
      {{32, 0, 8}, {72, 0, static_cast<unsigned>((kCmDataSize - 72) * 8)}});
}

}  // namespace
}  // namespace fastcm::mad::test
