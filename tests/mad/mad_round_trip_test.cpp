// Seeded round trips of every field of every CM message and of the MAD header:
// encode -> decode gives the same structs, decode -> encode gives the same bytes, and the encoding
// equals the test's own rendering of every field at its declared place (reserved bits zero).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "tests/mad/mad_test_support.h"

namespace fastcm::mad::test {
namespace {

constexpr int kRoundsPerMessage = 300;

template <typename M>
class MadRoundTrip : public ::testing::Test {};
TYPED_TEST_SUITE(MadRoundTrip, AllMessages, MessageName);

TYPED_TEST(MadRoundTrip, RandomMessagesSurviveEncodeDecodeEncode) {
  using M = TypeParam;
  const std::uint64_t seed = 0x5eed0000U + static_cast<std::uint64_t>(WireLayout<M>::kAttr);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < kRoundsPerMessage; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const MadHeader header = random_header<M>(rng);
    const M msg = random_valid_message<M>(rng);

    Mad wire{};
    ASSERT_EQ(encode(header, msg, wire), CodecStatus{});
    EXPECT_EQ(byte_diff(wire, render_by_places(header, msg)), "");

    DecodedMad decoded;
    ASSERT_EQ(decode(wire, decoded), CodecStatus{});
    EXPECT_EQ(decoded.header, header);
    ASSERT_TRUE(std::holds_alternative<M>(decoded.message));
    EXPECT_EQ(std::get<M>(decoded.message), msg);

    Mad again{};
    ASSERT_EQ(encode(decoded.header, std::get<M>(decoded.message), again), CodecStatus{});
    EXPECT_EQ(byte_diff(again, wire), "");
  }
}

// Every field drawn at least once with its top bit set: the randomizer reaches each field's width
// (a field it never sets would make the round trip above vacuous for that field).
TYPED_TEST(MadRoundTrip, RandomizerSetsTheTopBitOfEveryField) {
  using M = TypeParam;
  std::mt19937_64 rng(0x70b17);
  const std::size_t n = field_count<M>();
  std::vector<bool> seen(n, false);
  for (int round = 0; round < kRoundsPerMessage; ++round) {
    M msg = random_valid_message<M>(rng);
    std::size_t i = 0;
    visit_fields(msg, [&](const FieldPlace& place, const auto& member) {
      using T = std::remove_cvref_t<decltype(member)>;
      if constexpr (ScalarMember<T>) {
        if ((raw_of(member) >> (place.width - 1)) & 1U) seen[i] = true;
      } else {
        for (std::uint8_t b : bytes_of(member)) seen[i] = seen[i] || (b & 0x80U) != 0;
      }
      ++i;
    });
  }
  M names{};
  std::size_t i = 0;
  visit_fields(names, [&](const FieldPlace& place, const auto&) {
    // Fields whose top bit no valid value sets: MTU codes stop at 5 (of 4 bits), packet rates
    // at 24 (of 6), 8-bit additional information lengths at 72, the extended transport at 1.
    const bool top_bit_invalid = place.name == "path_packet_payload_mtu" ||
                                 place.name == "packet_rate" ||
                                 place.name == "additional_info_length" ||
                                 place.name == "extended_transport_type";
    EXPECT_NE(seen[i], top_bit_invalid) << place.prefix << place.name;
    ++i;
  });
}

TEST(MadRoundTripHeader, RandomHeadersOfEveryAttributeSurvive) {
  std::mt19937_64 rng(0x4eade7);
  const auto one = [&rng]<typename M>(M) {
    for (int round = 0; round < 50; ++round) {
      const MadHeader header = random_header<M>(rng);
      Mad wire{};
      ASSERT_EQ(encode(header, M{}, wire), CodecStatus{});
      MadHeader back;
      ASSERT_EQ(decode_header(wire, back), CodecStatus{});
      EXPECT_EQ(back, header);
      // The header's own bytes, independently: TID big-endian at 8-15, modifier at 20-23.
      EXPECT_EQ(read_bits(wire, 8, 0, 64), header.transaction_id);
      EXPECT_EQ(read_bits(wire, 20, 0, 32), header.attribute_modifier);
    }
  };
  one(ClassPortInfo{});
  one(Req{});
  one(Mra{});
  one(Rej{});
  one(Rep{});
  one(Rtu{});
  one(Dreq{});
  one(Drep{});
  one(SidrReq{});
  one(SidrRep{});
  one(Lap{});
  one(Apr{});
}

}  // namespace
}  // namespace fastcm::mad::test
