// Receive-side validation: every rule decode() enforces, reached with a hand-corrupted MAD and
// answered with the exact CodecStatus (error, field, group); reserved bits ignored; a longer
// buffer read as its first 256 bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tests/mad/mad_test_support.h"

namespace fastcm::mad::test {
namespace {

template <CmMessage M>
Mad encoded(const M& msg = M{}) {
  Mad wire{};
  EXPECT_EQ(encode(header_for<M>(), msg, wire), CodecStatus{});
  return wire;
}

CodecStatus decode_status(std::span<const std::uint8_t> buf) {
  DecodedMad out;
  return decode(buf, out);
}

CodecStatus invalid(std::string_view field, std::string_view group = {}) {
  return CodecStatus{CodecErrc::invalid_value, field, group};
}

TEST(MadDecodeErrors, ShortBuffer) {
  const Mad wire = encoded<Req>();
  for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{255}}) {
    SCOPED_TRACE(size);
    const std::span<const std::uint8_t> buf(wire.data(), size);
    const CodecStatus want{CodecErrc::short_buffer, {}, {}};
    EXPECT_EQ(decode_status(buf), want);
    MadHeader header;
    EXPECT_EQ(decode_header(buf, header), want);
  }
}

TEST(MadDecodeErrors, BadBaseVersion) {
  for (const std::uint8_t version : std::array<std::uint8_t, 4>{0x00, 0x02, 0x80, 0xff}) {
    Mad wire = encoded<Req>();
    wire[0] = version;  // BaseVersion
    EXPECT_EQ(decode_status(wire), (CodecStatus{CodecErrc::bad_base_version, "base_version", {}}))
        << int{version};
  }
}

TEST(MadDecodeErrors, BadManagementClass) {
  // 0x01 subnet management (LID routed), 0x03 subnet administration, 0x81 directed route SMP.
  for (const std::uint8_t mgmt_class :
       std::array<std::uint8_t, 7>{0x00, 0x01, 0x03, 0x06, 0x08, 0x81, 0x87}) {
    Mad wire = encoded<Req>();
    wire[1] = mgmt_class;  // MgmtClass
    EXPECT_EQ(decode_status(wire),
              (CodecStatus{CodecErrc::bad_management_class, "mgmt_class", {}}))
        << int{mgmt_class};
  }
}

TEST(MadDecodeErrors, BadClassVersion) {
  for (const std::uint8_t version : std::array<std::uint8_t, 4>{0x00, 0x01, 0x03, 0xff}) {
    Mad wire = encoded<Req>();
    wire[2] = version;  // ClassVersion
    EXPECT_EQ(decode_status(wire),
              (CodecStatus{CodecErrc::bad_class_version, "class_version", {}}))
        << int{version};
  }
}

// Every method byte against every attribute (chapter12_allows() lists the allowed ones).
template <typename M>
class MadDecodeMethods : public ::testing::Test {};
TYPED_TEST_SUITE(MadDecodeMethods, AllMessages, MessageName);

TYPED_TEST(MadDecodeMethods, OnlyTheChapter12MethodsAreAccepted) {
  using M = TypeParam;
  for (unsigned method = 0; method <= 0xff; ++method) {
    Mad wire = encoded<M>();
    wire[3] = static_cast<std::uint8_t>(method);  // R bit + Method
    const bool allowed = chapter12_allows(WireLayout<M>::kAttr, method);
    const CodecStatus want =
        allowed ? CodecStatus{} : CodecStatus{CodecErrc::bad_method, "method", {}};
    EXPECT_EQ(decode_status(wire), want) << "method 0x" << std::hex << method;
  }
}

TEST(MadDecodeErrors, GetOfAReqAndSendOfClassPortInfo) {
  Mad req = encoded<Req>();
  req[3] = 0x01;  // Get
  EXPECT_EQ(decode_status(req), (CodecStatus{CodecErrc::bad_method, "method", {}}));
  Mad cpi = encoded<ClassPortInfo>();
  cpi[3] = 0x03;  // Send
  EXPECT_EQ(decode_status(cpi), (CodecStatus{CodecErrc::bad_method, "method", {}}));
}

TEST(MadDecodeErrors, UnknownAttribute) {
  for (const std::uint16_t attr :
       std::array<std::uint16_t, 7>{0x0000, 0x0002, 0x000f, 0x001b, 0x0020, 0x0110, 0xffff}) {
    Mad wire = encoded<Req>();
    wire[16] = static_cast<std::uint8_t>(attr >> 8);  // AttributeID, big-endian
    wire[17] = static_cast<std::uint8_t>(attr);
    EXPECT_EQ(decode_status(wire),
              (CodecStatus{CodecErrc::unknown_attribute, "attribute_id", {}}))
        << "attribute 0x" << std::hex << attr;
  }
}

TEST(MadDecodeErrors, ExactlyTheChapter12AttributesAreKnown) {
  for (std::uint32_t attr = 0; attr <= 0xffff; ++attr) {
    Mad wire{};
    wire[0] = 0x01;
    wire[1] = 0x07;
    wire[2] = 0x02;
    const bool known = attr == 0x0001 || (attr >= 0x0010 && attr <= 0x001a);
    wire[3] = attr == 0x0001 ? 0x81 : 0x03;  // a method each known attribute allows
    wire[16] = static_cast<std::uint8_t>(attr >> 8);
    wire[17] = static_cast<std::uint8_t>(attr);
    MadHeader header;
    const CodecStatus status = decode_header(wire, header);
    ASSERT_EQ(status.ok(), known) << "attribute 0x" << std::hex << attr;
    if (!known) {
      ASSERT_EQ(status, (CodecStatus{CodecErrc::unknown_attribute, "attribute_id", {}}));
    }
  }
}

// The header rules run in a fixed order, and the first one broken is the one reported.
TEST(MadDecodeErrors, FirstBrokenHeaderRuleIsReported) {
  Mad wire = encoded<Req>();
  wire[3] = 0x01;                 // bad method
  wire[17] = 0x1b;                // unknown attribute
  EXPECT_EQ(decode_status(wire).errc, CodecErrc::unknown_attribute);
  wire[2] = 0x01;                 // bad class version
  EXPECT_EQ(decode_status(wire).errc, CodecErrc::bad_class_version);
  wire[1] = 0x03;                 // bad management class
  EXPECT_EQ(decode_status(wire).errc, CodecErrc::bad_management_class);
  wire[0] = 0x02;                 // bad base version
  EXPECT_EQ(decode_status(wire).errc, CodecErrc::bad_base_version);
  EXPECT_EQ(decode_status(std::span(wire.data(), 255)).errc, CodecErrc::short_buffer);
}

// Writes every value of a `width`-bit field at MAD byte/bit into a valid encoding of M: values
// `valid` accepts must decode to themselves (read back with `get`), the others must fail as `bad`.
template <CmMessage M, typename Valid, typename Get>
void expect_decoded_values(std::size_t byte, unsigned bit, unsigned width, Valid valid, Get get,
                           const CodecStatus& bad, const M& base = M{}) {
  for (std::uint64_t value = 0; value <= width_mask(width); ++value) {
    SCOPED_TRACE("value " + std::to_string(value));
    Mad wire = encoded(base);
    write_bits(wire, byte, bit, width, value);
    DecodedMad out;
    const CodecStatus status = decode(wire, out);
    if (valid(value)) {
      ASSERT_EQ(status, CodecStatus{});
      EXPECT_EQ(get(std::get<M>(out.message)), value);
    } else {
      EXPECT_EQ(status, bad);
    }
  }
}

template <typename T>
std::uint64_t raw(T v) {
  return raw_of(v);
}

TEST(MadDecodeErrors, ReqPathMtuOutsideOneToFive) {
  // Path Packet Payload MTU: top nibble of CM byte 50 (MAD byte 74).
  expect_decoded_values<Req>(
      74, 0, 4, [](std::uint64_t v) { return v >= 1 && v <= 5; },
      [](const Req& r) { return raw(r.path_packet_payload_mtu); },
      invalid("path_packet_payload_mtu"));
}

bool valid_rate(std::uint64_t v) { return v == 0 || (v >= 2 && v <= 25); }

TEST(MadDecodeErrors, ReqPacketRatesOneAndAbove25) {
  // Primary Packet Rate: low 6 bits of CM byte 91 (MAD 115); alternate: CM byte 135 (MAD 159).
  expect_decoded_values<Req>(
      115, 2, 6, valid_rate, [](const Req& r) { return raw(r.primary.packet_rate); },
      invalid("packet_rate", "primary_"));
  expect_decoded_values<Req>(
      159, 2, 6, valid_rate, [](const Req& r) { return raw(r.alternate.packet_rate); },
      invalid("packet_rate", "alternate_"));
}

TEST(MadDecodeErrors, LapAlternatePacketRate) {
  // Alternate Packet Rate: low 6 bits of CM byte 61 (MAD 85).
  expect_decoded_values<Lap>(
      85, 2, 6, valid_rate, [](const Lap& l) { return raw(l.alternate.packet_rate); },
      invalid("packet_rate", "alternate_"));
}

bool two_bit_kind(std::uint64_t v) { return v <= 2; }

TEST(MadDecodeErrors, MessageKindThreeIsReserved) {
  // MRA Message MRAed and REJ Message Rejected: top 2 bits of CM byte 8 (MAD 32).
  expect_decoded_values<Mra>(
      32, 0, 2, two_bit_kind, [](const Mra& m) { return raw(m.message_mraed); },
      invalid("message_mraed"));
  expect_decoded_values<Rej>(
      32, 0, 2, two_bit_kind, [](const Rej& m) { return raw(m.message_rejected); },
      invalid("message_rejected"));
  // REP Failover Accepted: bits 5-6 of CM byte 26 (MAD 50).
  expect_decoded_values<Rep>(
      50, 5, 2, two_bit_kind, [](const Rep& m) { return raw(m.failover_accepted); },
      invalid("failover_accepted"));
}

bool info_length(std::uint64_t v) { return v <= 72; }

TEST(MadDecodeErrors, AdditionalInformationLongerThan72) {
  // REJ Rejected Info Length: top 7 bits of CM byte 9 (MAD 33), 73..127 invalid.
  expect_decoded_values<Rej>(
      33, 0, 7, info_length, [](const Rej& m) { return raw(m.rejected_info_length); },
      invalid("rejected_info_length"));
  // APR Additional Information Length: CM byte 8 (MAD 32), 73..255 invalid.
  expect_decoded_values<Apr>(
      32, 0, 8, info_length, [](const Apr& m) { return raw(m.additional_info_length); },
      invalid("additional_info_length"));
  // SIDR_REP Additional Information Length: CM byte 5 (MAD 29).
  expect_decoded_values<SidrRep>(
      29, 0, 8, info_length, [](const SidrRep& m) { return raw(m.additional_info_length); },
      invalid("additional_info_length"));
}

// Transport Service Type (bits 5-6 of CM byte 43, MAD 67) 3 defers to the Extended Transport
// Type (bits 5-7 of CM byte 51, MAD 75), of which only XRC (1) is defined; types 0-2 carry 0.
TEST(MadDecodeErrors, ReqTransportAndExtendedTransportMustAgree) {
  for (std::uint64_t transport = 0; transport <= 3; ++transport) {
    for (std::uint64_t extended = 0; extended <= 7; ++extended) {
      SCOPED_TRACE("transport " + std::to_string(transport) + " extended " +
                   std::to_string(extended));
      Mad wire = encoded<Req>();
      write_bits(wire, 67, 5, 2, transport);
      write_bits(wire, 75, 5, 3, extended);
      const CodecStatus status = decode_status(wire);
      if (transport == 3) {
        EXPECT_EQ(status, extended == 1 ? CodecStatus{} : invalid("extended_transport_type"));
      } else {
        EXPECT_EQ(status, extended == 0 ? CodecStatus{} : invalid("transport_service_type"));
      }
    }
  }
}

// Every bit no field declares — reserved rows of the tables and header bytes 18-19 — is ignored
// on receive: set them all (and random subsets) in a valid MAD, and it decodes to the same
// message, which re-encodes with those bits clear.
template <typename M>
class MadReservedBits : public ::testing::Test {};
TYPED_TEST_SUITE(MadReservedBits, AllMessages, MessageName);

TYPED_TEST(MadReservedBits, IgnoredOnReceiveAndZeroOnSend) {
  using M = TypeParam;
  Mad reserved = declared_bits<M>();
  for (std::uint8_t& b : reserved) b = static_cast<std::uint8_t>(~b);

  std::mt19937_64 rng(0x7e5e7ed);
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const MadHeader header = random_header<M>(rng);
    const M msg = random_valid_message<M>(rng);
    Mad clean{};
    ASSERT_EQ(encode(header, msg, clean), CodecStatus{});
    for (std::size_t i = 0; i < kMadSize; ++i) {
      ASSERT_EQ(clean[i] & reserved[i], 0) << "reserved bit sent at MAD byte " << i;
    }

    Mad noisy = clean;
    for (std::size_t i = 0; i < kMadSize; ++i) {
      const auto noise = round == 0 ? std::uint8_t{0xff} : static_cast<std::uint8_t>(rng());
      noisy[i] = static_cast<std::uint8_t>(noisy[i] | (noise & reserved[i]));
    }
    DecodedMad out;
    ASSERT_EQ(decode(noisy, out), CodecStatus{});
    EXPECT_EQ(out.header, header);
    EXPECT_TRUE(std::get<M>(out.message) == msg);
    Mad again{};
    ASSERT_EQ(encode(out.header, std::get<M>(out.message), again), CodecStatus{});
    EXPECT_EQ(byte_diff(again, clean), "");
  }
}

TEST(MadDecode, LongerBufferIsReadAsItsFirst256Bytes) {
  std::mt19937_64 rng(0x1076);
  const Req msg = random_valid_message<Req>(rng);
  const Mad wire = encoded(msg);
  for (const std::size_t size : {std::size_t{257}, std::size_t{300}, std::size_t{4096}}) {
    SCOPED_TRACE(size);
    std::vector<std::uint8_t> buf(size, 0xff);  // trailing bytes that would be invalid as a MAD
    std::copy(wire.begin(), wire.end(), buf.begin());
    DecodedMad out;
    ASSERT_EQ(decode(buf, out), CodecStatus{});
    EXPECT_EQ(out.header, header_for<Req>());
    EXPECT_TRUE(std::get<Req>(out.message) == msg);
  }
}

}  // namespace
}  // namespace fastcm::mad::test
