// Send-side validation: encode() refuses a header that does not fit the message, a method the
// attribute does not allow, a value wider than its field and a value the spec makes invalid, each
// with the exact CodecStatus (error, field, group). Also the status's text forms.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "tests/mad/mad_test_support.h"

namespace fastcm::mad::test {
namespace {

template <CmMessage M>
CodecStatus encode_status(const M& msg, const MadHeader& header = header_for<M>()) {
  Mad out{};
  return encode(header, msg, out);
}

CodecStatus invalid(std::string_view field, std::string_view group = {}) {
  return CodecStatus{CodecErrc::invalid_value, field, group};
}
CodecStatus too_wide(std::string_view field, std::string_view group = {}) {
  return CodecStatus{CodecErrc::value_too_wide, field, group};
}

TEST(MadEncodeErrors, ValueTooWide) {
  Req r;
  r.local_qpn = 0x1000000;
  EXPECT_EQ(encode_status(r), too_wide("local_qpn"));
  r = Req{};
  r.primary.sl = 16;
  EXPECT_EQ(encode_status(r), too_wide("sl", "primary_"));
  r = Req{};
  r.alternate.sl = 16;
  EXPECT_EQ(encode_status(r), too_wide("sl", "alternate_"));
  r = Req{};
  r.primary.flow_label = 0x100000;
  EXPECT_EQ(encode_status(r), too_wide("flow_label", "primary_"));
  Lap l;
  l.alternate.local_ack_timeout = 32;
  EXPECT_EQ(encode_status(l), too_wide("local_ack_timeout", "alternate_"));
  ClassPortInfo c;
  c.capability_mask2 = 1U << 27;
  EXPECT_EQ(encode_status(c), too_wide("capability_mask2"));
}

// Every scalar field whose member could hold a value wider than the field: width + 1 bits and the
// member's maximum are both refused, naming the field and its group.
template <typename M>
class MadEncodeWidths : public ::testing::Test {};
TYPED_TEST_SUITE(MadEncodeWidths, AllMessages, MessageName);

TYPED_TEST(MadEncodeWidths, EveryNarrowFieldRefusesWiderValues) {
  using M = TypeParam;
  for (std::size_t k = 0; k < field_count<M>(); ++k) {
    M msg{};
    FieldPlace place{};
    std::uint64_t member_max = 0;
    with_field(msg, k, [&](const FieldPlace& p, const auto& member) {
      using T = std::remove_cvref_t<decltype(member)>;
      place = p;
      if constexpr (ScalarMember<T> && !std::is_same_v<T, bool>) {
        using U = std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                     std::type_identity<T>>;
        member_max = std::numeric_limits<typename U::type>::max();
      }
    });
    if (member_max <= width_mask(place.width)) continue;
    SCOPED_TRACE(std::string(place.prefix) + std::string(place.name));
    for (const std::uint64_t value : {width_mask(place.width) + 1, member_max}) {
      M wide{};
      with_field(wide, k, [value](const FieldPlace&, auto& member) {
        if constexpr (ScalarMember<std::remove_cvref_t<decltype(member)>>) set_raw(member, value);
      });
      EXPECT_EQ(encode_status(wide), too_wide(place.name, place.prefix)) << "value " << value;
    }
  }
}

TEST(MadEncodeErrors, ReqPathMtuOutsideOneToFive) {
  for (std::uint8_t code = 0; code <= 15; ++code) {
    Req r;
    r.path_packet_payload_mtu = static_cast<MtuCode>(code);
    const bool valid = code >= 1 && code <= 5;
    EXPECT_EQ(encode_status(r), valid ? CodecStatus{} : invalid("path_packet_payload_mtu"))
        << int{code};
  }
  Req r;
  r.path_packet_payload_mtu = static_cast<MtuCode>(16);
  EXPECT_EQ(encode_status(r), too_wide("path_packet_payload_mtu"));
}

TEST(MadEncodeErrors, PacketRatesOneAndAbove25) {
  for (std::uint8_t rate = 0; rate <= 63; ++rate) {
    SCOPED_TRACE(int{rate});
    const bool valid = rate == 0 || (rate >= 2 && rate <= 25);
    Req primary;
    primary.primary.packet_rate = rate;
    EXPECT_EQ(encode_status(primary), valid ? CodecStatus{} : invalid("packet_rate", "primary_"));
    Req alternate;
    alternate.alternate.packet_rate = rate;
    EXPECT_EQ(encode_status(alternate),
              valid ? CodecStatus{} : invalid("packet_rate", "alternate_"));
    Lap lap;
    lap.alternate.packet_rate = rate;
    EXPECT_EQ(encode_status(lap), valid ? CodecStatus{} : invalid("packet_rate", "alternate_"));
  }
}

TEST(MadEncodeErrors, MessageKindThreeIsReserved) {
  Mra mra;
  mra.message_mraed = static_cast<MessageKind>(3);
  EXPECT_EQ(encode_status(mra), invalid("message_mraed"));
  Rej rej;
  rej.message_rejected = static_cast<MessageKind>(3);
  EXPECT_EQ(encode_status(rej), invalid("message_rejected"));
  Rep rep;
  rep.failover_accepted = static_cast<FailoverAccepted>(3);
  EXPECT_EQ(encode_status(rep), invalid("failover_accepted"));
}

TEST(MadEncodeErrors, AdditionalInformationLongerThan72) {
  for (unsigned length = 0; length <= 0xff; ++length) {
    SCOPED_TRACE(length);
    const auto len = static_cast<std::uint8_t>(length);
    const bool valid = length <= 72;
    Rej rej;
    rej.rejected_info_length = len;
    // 7 bits on the wire: 128 and more do not fit at all.
    EXPECT_EQ(encode_status(rej), valid          ? CodecStatus{}
                                  : length < 128 ? invalid("rejected_info_length")
                                                 : too_wide("rejected_info_length"));
    Apr apr;
    apr.additional_info_length = len;
    EXPECT_EQ(encode_status(apr), valid ? CodecStatus{} : invalid("additional_info_length"));
    SidrRep sidr;
    sidr.additional_info_length = len;
    EXPECT_EQ(encode_status(sidr), valid ? CodecStatus{} : invalid("additional_info_length"));
  }
}

TEST(MadEncodeErrors, ReqTransportAndExtendedTransportMustAgree) {
  for (std::uint8_t transport = 0; transport <= 3; ++transport) {
    for (std::uint8_t extended = 0; extended <= 7; ++extended) {
      SCOPED_TRACE("transport " + std::to_string(transport) + " extended " +
                   std::to_string(extended));
      Req r;
      r.transport_service_type = static_cast<TransportServiceType>(transport);
      r.extended_transport_type = static_cast<ExtendedTransportType>(extended);
      if (transport == 3) {
        EXPECT_EQ(encode_status(r),
                  extended == 1 ? CodecStatus{} : invalid("extended_transport_type"));
      } else {
        EXPECT_EQ(encode_status(r),
                  extended == 0 ? CodecStatus{} : invalid("transport_service_type"));
      }
    }
  }
}

// The header's attribute must be the message's own: every other chapter-12 attribute, and IDs
// chapter 12 does not define, are refused.
template <typename M>
class MadEncodeHeader : public ::testing::Test {};
TYPED_TEST_SUITE(MadEncodeHeader, AllMessages, MessageName);

TYPED_TEST(MadEncodeHeader, AttributeMustBeTheMessages) {
  using M = TypeParam;
  for (const std::uint16_t attr : std::array<std::uint16_t, 16>{
           0x0000, 0x0001, 0x0002, 0x0010, 0x0011, 0x0012, 0x0013, 0x0014, 0x0015, 0x0016, 0x0017,
           0x0018, 0x0019, 0x001a, 0x001b, 0xffff}) {
    MadHeader header = header_for<M>();
    header.attribute_id = static_cast<AttrId>(attr);
    const bool own = attr == static_cast<std::uint16_t>(WireLayout<M>::kAttr);
    const CodecStatus want =
        own ? CodecStatus{} : CodecStatus{CodecErrc::unknown_attribute, "attribute_id", {}};
    EXPECT_EQ(encode_status(M{}, header), want) << "attribute 0x" << std::hex << attr;
  }
}

TYPED_TEST(MadEncodeHeader, MethodMustBeAllowedForTheAttribute) {
  using M = TypeParam;
  for (unsigned method = 0; method <= 0xff; ++method) {
    MadHeader header = header_for<M>();
    header.method = static_cast<Method>(method);
    const bool allowed = chapter12_allows(WireLayout<M>::kAttr, method);
    const CodecStatus want =
        allowed ? CodecStatus{} : CodecStatus{CodecErrc::bad_method, "method", {}};
    EXPECT_EQ(encode_status(M{}, header), want) << "method 0x" << std::hex << method;
  }
}

TEST(MadEncodeErrors, GetOfAReqAndSendOfClassPortInfo) {
  EXPECT_EQ(encode_status(Req{}, cm_header(Method::get, AttrId::req, kTestTid)),
            (CodecStatus{CodecErrc::bad_method, "method", {}}));
  EXPECT_EQ(
      encode_status(ClassPortInfo{}, cm_header(Method::send, AttrId::class_port_info, kTestTid)),
      (CodecStatus{CodecErrc::bad_method, "method", {}}));
}

// encode() writes all 256 bytes: whatever the buffer held before does not leak into reserved bits.
TEST(MadEncode, OverwritesEveryByteOfTheBuffer) {
  Mad clean{};
  ASSERT_EQ(encode(header_for<Req>(), Req{}, clean), CodecStatus{});
  Mad dirty{};
  dirty.fill(0xa5);
  ASSERT_EQ(encode(header_for<Req>(), Req{}, dirty), CodecStatus{});
  EXPECT_EQ(byte_diff(dirty, clean), "");
}

TEST(MadCodecStatus, DescribeNamesTheErrorGroupAndField) {
  EXPECT_EQ(invalid("packet_rate", "primary_").describe(), "invalid_value: primary_packet_rate");
  EXPECT_EQ(too_wide("local_qpn").describe(), "value_too_wide: local_qpn");
  EXPECT_EQ((CodecStatus{CodecErrc::short_buffer, {}, {}}).describe(), "short_buffer");
  EXPECT_EQ(CodecStatus{}.describe(), "ok");
  EXPECT_TRUE(CodecStatus{}.ok());
  EXPECT_FALSE(too_wide("sl").ok());
}

TEST(MadCodecStatus, EveryErrorHasItsName) {
  EXPECT_EQ(to_string(CodecErrc::ok), "ok");
  EXPECT_EQ(to_string(CodecErrc::short_buffer), "short_buffer");
  EXPECT_EQ(to_string(CodecErrc::bad_base_version), "bad_base_version");
  EXPECT_EQ(to_string(CodecErrc::bad_management_class), "bad_management_class");
  EXPECT_EQ(to_string(CodecErrc::bad_class_version), "bad_class_version");
  EXPECT_EQ(to_string(CodecErrc::bad_method), "bad_method");
  EXPECT_EQ(to_string(CodecErrc::unknown_attribute), "unknown_attribute");
  EXPECT_EQ(to_string(CodecErrc::invalid_value), "invalid_value");
  EXPECT_EQ(to_string(CodecErrc::value_too_wide), "value_too_wide");
  EXPECT_EQ(to_string(static_cast<CodecErrc>(0xff)), "unknown");
}

TEST(MadHeaderNames, AttributeNamesOfChapter12) {
  EXPECT_EQ(attr_name(AttrId::class_port_info), "class_port_info");
  EXPECT_EQ(attr_name(AttrId::req), "req");
  EXPECT_EQ(attr_name(AttrId::mra), "mra");
  EXPECT_EQ(attr_name(AttrId::rej), "rej");
  EXPECT_EQ(attr_name(AttrId::rep), "rep");
  EXPECT_EQ(attr_name(AttrId::rtu), "rtu");
  EXPECT_EQ(attr_name(AttrId::dreq), "dreq");
  EXPECT_EQ(attr_name(AttrId::drep), "drep");
  EXPECT_EQ(attr_name(AttrId::sidr_req), "sidr_req");
  EXPECT_EQ(attr_name(AttrId::sidr_rep), "sidr_rep");
  EXPECT_EQ(attr_name(AttrId::lap), "lap");
  EXPECT_EQ(attr_name(AttrId::apr), "apr");
  EXPECT_EQ(attr_name(static_cast<AttrId>(0x001b)), "");
}

}  // namespace
}  // namespace fastcm::mad::test
