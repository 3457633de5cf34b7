#include "tools/fastcm-mad/mad_json.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "tests/tool/random_fields.h"
#include "tools/fastcm-mad/hex_text.h"

namespace fastcm::tools {
namespace {

using Mad = std::array<std::uint8_t, mad::kMadSize>;

template <typename V>
struct TypesOf;
template <typename... M>
struct TypesOf<std::variant<M...>> {
  using type = ::testing::Types<M...>;
};

// Every message type the codec decodes.
template <typename M>
class MadJsonRoundTrip : public ::testing::Test {};
TYPED_TEST_SUITE(MadJsonRoundTrip, TypesOf<mad::AnyMessage>::type);

TYPED_TEST(MadJsonRoundTrip, SeededRandomMessagesSurviveJsonText) {
  using M = TypeParam;
  constexpr std::uint64_t kSeeds = 64;
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const mad::MadHeader header = test::random_header(rng, mad::WireLayout<M>::kAttr);
    const M msg = test::random_message<M>(rng, header);
    Mad wire{};
    ASSERT_TRUE(mad::encode(header, msg, wire).ok());

    const MadAsJson decoded = mad_to_json(wire);
    ASSERT_TRUE(decoded.ok) << decoded.json.dump();
    std::size_t field_count = 0;
    mad::visit_fields(msg, [&](const mad::FieldPlace&, const auto&) { ++field_count; });
    EXPECT_EQ(decoded.json.at("fields").size(), field_count);
    EXPECT_EQ(decoded.json.at("message"), mad::attr_name(mad::WireLayout<M>::kAttr));

    // Through text, as the CLI does: encode(decode(x)) gives the same bytes and the same message.
    const Json reparsed = Json::parse(decoded.json.dump());
    Mad again{};
    const std::optional<MadJsonError> error = json_to_mad(reparsed, again);
    ASSERT_FALSE(error.has_value()) << error->error;
    EXPECT_EQ(again, wire);
    mad::DecodedMad back;
    ASSERT_TRUE(mad::decode(again, back).ok());
    EXPECT_EQ(back.header, header);
    ASSERT_TRUE(std::holds_alternative<M>(back.message));
    EXPECT_TRUE(std::get<M>(back.message) == msg);
    EXPECT_EQ(mad_to_json(again).json, decoded.json);
  }
}

// A REQ written byte by byte from IBTA Table 106, not through the codec.
Mad hand_built_req() {
  Mad m{};
  m[0] = 1;     // base version
  m[1] = 0x07;  // CM class
  m[2] = 2;     // class version
  m[3] = 0x03;  // Send
  const std::array<std::uint8_t, 8> tid{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  std::copy(tid.begin(), tid.end(), m.begin() + 8);
  m[17] = 0x10;  // attribute REQ
  // CM data from byte 24.
  const std::array<std::uint8_t, 4> comm_id{0xde, 0xad, 0xbe, 0xef};
  std::copy(comm_id.begin(), comm_id.end(), m.begin() + 24);
  const std::array<std::uint8_t, 8> service_id{0, 0, 0, 0, 0x01, 0x06, 0x04, 0xd2};
  std::copy(service_id.begin(), service_id.end(), m.begin() + 32);
  const std::array<std::uint8_t, 8> ca_guid{0x00, 0x02, 0xc9, 0x03, 0, 0, 0, 0x01};
  std::copy(ca_guid.begin(), ca_guid.end(), m.begin() + 40);
  m[57] = 0x01;  // local QPN 0x000123
  m[58] = 0x23;
  m[59] = 4;     // responder resources
  m[74] = 0x47;  // MTU 4 (2048), RDC 0, RNR retry count 7
  m[77] = 0x11;  // primary local port LID 0x0011
  const std::array<std::uint8_t, 16> gid{0xfe, 0x80, 0,    0,    0, 0, 0, 0,
                                         0,    0x02, 0xc9, 0x03, 0, 0, 0, 0x01};
  std::copy(gid.begin(), gid.end(), m.begin() + 80);  // primary local port GID
  m[115] = 0x03;                                      // primary packet rate 3 (10 Gb/s)
  m[118] = 0x58;                                      // primary SL 5, subnet local
  m[164] = 0xab;                                      // private data
  m[165] = 0xcd;
  return m;
}

TEST(MadJson, HandBuiltReqDecodesToTheExpectedKeysAndValues) {
  const MadAsJson out = mad_to_json(hand_built_req());
  ASSERT_TRUE(out.ok) << out.json.dump();
  const Json& j = out.json;

  std::vector<std::string> top;
  for (const auto& item : j.items()) top.push_back(item.key());
  EXPECT_EQ(top, (std::vector<std::string>{"header", "message", "fields"}));
  EXPECT_EQ(j.at("message"), "req");
  EXPECT_EQ(j.at("header"), Json::parse(R"({"base_version": 1, "mgmt_class": 7, "class_version": 2,
      "method": 3, "status": 0, "class_specific": 0, "transaction_id": "0x0102030405060708",
      "attribute_id": 16, "attribute_modifier": 0})"));

  std::vector<std::string> keys;
  for (const auto& item : j.at("fields").items()) keys.push_back(item.key());
  const std::vector<std::string> path{"local_port_lid",  "remote_port_lid",  "local_port_gid",
                                      "remote_port_gid", "flow_label",       "packet_rate",
                                      "traffic_class",   "hop_limit",        "sl",
                                      "subnet_local",    "local_ack_timeout"};
  std::vector<std::string> expected{"local_comm_id",
                                    "vendor_id",
                                    "service_id",
                                    "local_ca_guid",
                                    "local_q_key",
                                    "local_qpn",
                                    "responder_resources",
                                    "local_eecn",
                                    "initiator_depth",
                                    "remote_eecn",
                                    "remote_cm_response_timeout",
                                    "transport_service_type",
                                    "end_to_end_flow_control",
                                    "starting_psn",
                                    "local_cm_response_timeout",
                                    "retry_count",
                                    "partition_key",
                                    "path_packet_payload_mtu",
                                    "rdc_exists",
                                    "rnr_retry_count",
                                    "max_cm_retries",
                                    "srq",
                                    "extended_transport_type"};
  for (const std::string& p : path) expected.push_back("primary_" + p);
  for (const std::string& p : path) expected.push_back("alternate_" + p);
  expected.push_back("sap_supported");
  expected.push_back("private_data");
  EXPECT_EQ(keys, expected);

  const Json& f = j.at("fields");
  EXPECT_EQ(f.at("local_comm_id"), 0xdeadbeefU);
  EXPECT_EQ(f.at("service_id"), "0x00000000010604d2");
  EXPECT_EQ(f.at("local_ca_guid"), "0x0002c90300000001");
  EXPECT_EQ(f.at("local_qpn"), 0x123);
  EXPECT_EQ(f.at("responder_resources"), 4);
  EXPECT_EQ(f.at("path_packet_payload_mtu"), 4);
  EXPECT_EQ(f.at("rdc_exists"), false);
  EXPECT_EQ(f.at("rnr_retry_count"), 7);
  EXPECT_EQ(f.at("primary_local_port_lid"), 0x11);
  EXPECT_EQ(f.at("primary_local_port_gid"), "fe80::2:c903:0:1");
  EXPECT_EQ(f.at("primary_remote_port_gid"), "::");
  EXPECT_EQ(f.at("primary_packet_rate"), 3);
  EXPECT_EQ(f.at("primary_sl"), 5);
  EXPECT_EQ(f.at("primary_subnet_local"), true);
  EXPECT_EQ(f.at("alternate_sl"), 0);
  EXPECT_EQ(f.at("private_data"), "abcd");
}

TEST(MadJson, ShortBufferGivesTheErrorOnly) {
  const std::vector<std::uint8_t> short_buf(100, 0);
  const MadAsJson out = mad_to_json(short_buf);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.json,
            Json::parse(R"({"error": "short_buffer", "errc": "short_buffer", "field": null})"));
}

TEST(MadJson, BadClassVersionShowsTheHeaderAsReceived) {
  Mad m = hand_built_req();
  m[2] = 1;
  const MadAsJson out = mad_to_json(m);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.json.at("error"), "bad_class_version: class_version");
  EXPECT_EQ(out.json.at("errc"), "bad_class_version");
  EXPECT_EQ(out.json.at("field"), "class_version");
  EXPECT_EQ(out.json.at("header").at("class_version"), 1);
  EXPECT_EQ(out.json.at("header").at("transaction_id"), "0x0102030405060708");
  EXPECT_FALSE(out.json.contains("message"));
  EXPECT_FALSE(out.json.contains("fields"));
}

TEST(MadJson, InvalidMtuShowsTheFieldsDecodedBeforeIt) {
  Mad m = hand_built_req();
  m[74] = 0x77;  // MTU code 7
  const MadAsJson out = mad_to_json(m);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.json.at("error"), "invalid_value: path_packet_payload_mtu");
  EXPECT_EQ(out.json.at("errc"), "invalid_value");
  EXPECT_EQ(out.json.at("field"), "path_packet_payload_mtu");
  EXPECT_EQ(out.json.at("message"), "req");
  EXPECT_EQ(out.json.at("header").at("attribute_id"), 16);
  const Json& f = out.json.at("fields");
  EXPECT_EQ(f.at("local_comm_id"), 0xdeadbeefU);
  EXPECT_EQ(f.at("local_qpn"), 0x123);
  EXPECT_TRUE(f.contains("partition_key"));
  EXPECT_FALSE(f.contains("path_packet_payload_mtu"));
  EXPECT_FALSE(f.contains("primary_local_port_gid"));
}

TEST(MadJson, ErrorInAGroupNamesTheFieldWithItsPrefix) {
  Mad m = hand_built_req();
  m[24 + 96 + 39] = 0x01;  // alternate packet rate 1 is reserved
  const MadAsJson out = mad_to_json(m);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.json.at("field"), "alternate_packet_rate");
  EXPECT_EQ(out.json.at("error"), "invalid_value: alternate_packet_rate");
  EXPECT_EQ(out.json.at("fields").at("primary_local_port_gid"), "fe80::2:c903:0:1");
  EXPECT_TRUE(out.json.at("fields").contains("alternate_flow_label"));
  EXPECT_FALSE(out.json.at("fields").contains("alternate_packet_rate"));
}

std::optional<MadJsonError> encode_text(const char* json, Mad& out) {
  return json_to_mad(Json::parse(json), out);
}

TEST(MadJson, EncodeFillsDefaultsAndTakesTheAttributeFromTheMessage) {
  Mad m{};
  ASSERT_EQ(encode_text(R"({"message": "rtu", "fields": {"local_comm_id": 7}})", m), std::nullopt);
  const MadAsJson out = mad_to_json(m);
  ASSERT_TRUE(out.ok) << out.json.dump();
  EXPECT_EQ(out.json.at("header").at("attribute_id"), 0x14);
  EXPECT_EQ(out.json.at("header").at("method"), 3);
  EXPECT_EQ(out.json.at("header").at("transaction_id"), "0x0000000000000000");
  EXPECT_EQ(out.json.at("fields"),
            Json::parse(R"({"local_comm_id": 7, "remote_comm_id": 0, "private_data": ""})"));
}

TEST(MadJson, EncodeAcceptsHexIntegersAnyGidTextAndShortSeparatedBytes) {
  Mad m{};
  ASSERT_EQ(encode_text(R"({"message": "req", "header": {"transaction_id": 4660},
      "fields": {"local_qpn": "0x123", "service_id": 17, "path_packet_payload_mtu": 5,
                 "primary_local_port_gid": "FE80:0:0:0:2:C903:0:1", "private_data": "AB:CD 01"}})",
                        m),
            std::nullopt);
  const MadAsJson out = mad_to_json(m);
  ASSERT_TRUE(out.ok) << out.json.dump();
  EXPECT_EQ(out.json.at("header").at("transaction_id"), "0x0000000000001234");
  EXPECT_EQ(out.json.at("fields").at("local_qpn"), 0x123);
  EXPECT_EQ(out.json.at("fields").at("service_id"), "0x0000000000000011");
  EXPECT_EQ(out.json.at("fields").at("primary_local_port_gid"), "fe80::2:c903:0:1");
  EXPECT_EQ(out.json.at("fields").at("private_data"), "abcd01");
}

struct EncodeErrorCase {
  std::string json;
  const char* errc;
  const char* field;
};

void PrintTo(const EncodeErrorCase& c, std::ostream* os) { *os << c.json; }

std::string case_name(const ::testing::TestParamInfo<EncodeErrorCase>& info) {
  return std::to_string(info.index) + "_" + info.param.errc + "_" + info.param.field;
}

class MadJsonEncodeError : public ::testing::TestWithParam<EncodeErrorCase> {};

TEST_P(MadJsonEncodeError, NamesTheRuleAndTheField) {
  Mad m{};
  const std::optional<MadJsonError> error = encode_text(GetParam().json.c_str(), m);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->errc, GetParam().errc);
  EXPECT_EQ(error->field, GetParam().field);
  EXPECT_NE(error->error.find(GetParam().errc), std::string::npos) << error->error;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MadJsonEncodeError,
    ::testing::Values(
        EncodeErrorCase{R"({"message": "req", "fields": {"primary_lid": 3}})", "unknown_field",
                        "primary_lid"},
        EncodeErrorCase{R"({"message": "req", "header": {"tid": 3}})", "unknown_field", "tid"},
        EncodeErrorCase{R"({"message": "req", "frame": 3})", "unknown_field", "frame"},
        EncodeErrorCase{R"({"message": "rtu", "fields": {"service_id": 1}})", "unknown_field",
                        "service_id"},
        EncodeErrorCase{R"({"message": "connect"})", "unknown_message", "message"},
        EncodeErrorCase{R"({"fields": {}})", "unknown_message", "message"},
        EncodeErrorCase{R"({"message": 16})", "bad_type", "message"},
        EncodeErrorCase{R"([1, 2])", "not_an_object", ""},
        EncodeErrorCase{R"({"message": "req", "fields": [1]})", "not_an_object", "fields"},
        // The codec's own checks, reached once the JSON is well formed.
        EncodeErrorCase{R"({"message": "req", "fields": {"primary_sl": 16}})", "value_too_wide",
                        "primary_sl"},
        EncodeErrorCase{R"({"message": "req", "fields": {"path_packet_payload_mtu": 0}})",
                        "invalid_value", "path_packet_payload_mtu"},
        EncodeErrorCase{R"({"message": "rtu", "header": {"method": 1}})", "bad_method", "method"},
        EncodeErrorCase{R"({"message": "rtu", "header": {"attribute_id": 16}})",
                        "unknown_attribute", "attribute_id"},
        // Values the member itself cannot hold, and text of the wrong kind.
        EncodeErrorCase{R"({"message": "rtu", "fields": {"local_comm_id": 4294967296}})",
                        "value_too_wide", "local_comm_id"},
        EncodeErrorCase{R"({"message": "rtu", "fields": {"private_data": ")" +
                            std::string(2 * 225, '1') + R"("}})",
                        "value_too_wide", "private_data"},
        EncodeErrorCase{R"({"message": "rtu", "fields": {"local_comm_id": -1}})", "bad_value",
                        "local_comm_id"},
        EncodeErrorCase{R"({"message": "rtu", "fields": {"local_comm_id": 1.5}})", "bad_type",
                        "local_comm_id"},
        EncodeErrorCase{R"({"message": "rtu", "fields": {"local_comm_id": "12"}})", "bad_value",
                        "local_comm_id"},
        EncodeErrorCase{R"({"message": "rtu", "fields": {"private_data": "abc"}})", "bad_value",
                        "private_data"},
        EncodeErrorCase{R"({"message": "req", "fields": {"srq": 1}})", "bad_type", "srq"},
        EncodeErrorCase{R"({"message": "req", "fields": {"primary_local_port_gid": "10.0.0.1"}})",
                        "bad_value", "primary_local_port_gid"}),
    case_name);

}  // namespace
}  // namespace fastcm::tools
