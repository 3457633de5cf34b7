// Wireshark cross-check of the CM codec: random messages of every attribute are encoded, framed as
// RoCEv2 packets (with a correct ICRC) into one pcap, decoded by one tshark run, and every item
// Wireshark shows for the MAD must equal the encoded field (or, for the Wireshark defects listed
// in wireshark_cm_rules.cpp, be consistent with the defect).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "engine/mad/codec.h"
#include "fabric/roce_udp/pcap_file.h"
#include "fabric/roce_udp/rocev2_frame.h"
#include "fastcm/rdma_cm.h"
#include "tests/fuzz/cm_message_types.h"
#include "tests/mad/mad_test_support.h"
#include "tests/wire/expected_items.h"
#include "tests/wire/tshark_decode.h"
#include "tests/wire/wireshark_cm_rules.h"

namespace fastcm::wire_test {
namespace {

using mad::AnyMessage;
using mad::MadHeader;
using mad::test::Mad;

constexpr std::uint64_t kSeed = 0x5EED'0C0D'EC0D'EC01;  // fixed, so a failure reproduces
constexpr int kPerAttribute = 20;
constexpr int kRdmaCmReqs = 12;

struct FrameCase {
  MadHeader header;
  AnyMessage message;
  Mad mad{};
};

template <mad::CmMessage M>
FrameCase encoded_case(const MadHeader& header, const M& msg) {
  FrameCase c{header, msg, {}};
  const mad::CodecStatus s = mad::encode(header, msg, mad::MadSpan(c.mad));
  EXPECT_TRUE(s.ok()) << s.describe();
  return c;
}

// A REQ as rdma_cm sends it (IBTA Vol. 1 Annex A11), built with fastcm's rdma_cm helpers: the
// service ID of a port space and port, and private data opening with the IP header (random
// addresses and source port) before random consumer data. IPoIB is left out: its service IDs lie
// outside Annex A11's range, so Wireshark shows those REQs as plain ones.
mad::Req rdma_cm_req(std::mt19937_64& rng, bool ipv4) {
  constexpr std::array<rdma_cm::PortSpace, 3> kPortSpaces{rdma_cm::PortSpace::tcp,
                                                          rdma_cm::PortSpace::udp,
                                                          rdma_cm::PortSpace::ib};
  mad::Req req = mad::test::random_valid_message<mad::Req>(rng);
  req.service_id = rdma_cm::service_id(kPortSpaces[rng() % kPortSpaces.size()],
                                       static_cast<std::uint16_t>(rng()));
  rdma_cm::Ipv6Address src{};
  rdma_cm::Ipv6Address dst{};
  for (std::size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<std::uint8_t>(rng());
    dst[i] = static_cast<std::uint8_t>(rng());
  }
  const auto port = static_cast<std::uint16_t>(rng());
  const rdma_cm::IpHeader header =
      ipv4 ? rdma_cm::IpHeader::ipv4({src[0], src[1], src[2], src[3]},
                                     {dst[0], dst[1], dst[2], dst[3]}, port)
           : rdma_cm::IpHeader::ipv6(src, dst, port);
  std::array<std::uint8_t, rdma_cm::kMaxReqConsumerData> consumer{};
  std::copy(req.private_data.end() - consumer.size(), req.private_data.end(), consumer.begin());
  std::size_t used = 0;
  EXPECT_EQ(rdma_cm::encode_private_data(header, consumer, req.private_data, used),
            rdma_cm::HeaderStatus::ok);
  return req;
}

std::vector<FrameCase> make_cases() {
  std::mt19937_64 rng(kSeed);
  std::vector<FrameCase> cases;
  fuzz::for_each_message_type([&]<typename M>(std::type_identity<M>) {
    for (int n = 0; n < kPerAttribute; ++n) {
      const MadHeader header = mad::test::random_header<M>(rng);
      cases.push_back(encoded_case(header, mad::test::random_valid_message<M>(rng)));
    }
  });
  for (int n = 0; n < kRdmaCmReqs; ++n) {
    const MadHeader header = mad::test::random_header<mad::Req>(rng);
    cases.push_back(encoded_case(header, rdma_cm_req(rng, n % 2 == 0)));
  }
  return cases;
}

// Ethernet / IPv6 / UDP 4791 / BTH / DETH / MAD / ICRC: the framing tshark decodes fully
// (tshark 4.0 over IPv4 shows only 4 bytes of the REQ's primary GIDs).
// Errors: throws PcapError or std::runtime_error.
void write_pcap(const std::vector<FrameCase>& cases, const std::filesystem::path& path) {
  const roce::RoceEndpoint src{{0x02, 0, 0, 0, 0, 1},
                               Gid::from_parts(0xFE80000000000000, 0x0200'00FF'FE00'0001)};
  const roce::RoceEndpoint dst{{0x02, 0, 0, 0, 0, 2},
                               Gid::from_parts(0xFE80000000000000, 0x0200'00FF'FE00'0002)};
  roce::PcapWriter writer(path);
  std::array<std::uint8_t, roce::kMaxRocev2FrameSize> frame{};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    roce::RoceGsiHeader gsi;
    gsi.udp_src_port = static_cast<std::uint16_t>(0xC000 + i);
    gsi.psn = static_cast<std::uint32_t>(i);
    const std::size_t size = roce::build_rocev2_frame(src, dst, gsi, cases[i].mad, frame);
    if (size == 0) throw std::runtime_error("frame " + std::to_string(i + 1) + " was not built");
    writer.write(std::span(frame).first(size), roce::PcapTimestamp{static_cast<std::int64_t>(i)});
  }
  writer.flush();
}

// The pcap, tshark's decoding of it, and the cases it was built from: made once for all tests.
struct CrossCheckRun {
  std::vector<FrameCase> cases;
  std::vector<TsharkFrame> frames;
  std::filesystem::path pcap;
  std::string error;  // non-empty when writing the pcap or running tshark failed
};

const CrossCheckRun& crosscheck_run() {
  static const CrossCheckRun r = [] {
    CrossCheckRun out;
    out.cases = make_cases();
    const std::filesystem::path dir = FASTCM_WIRE_OUTPUT_DIR;
    out.pcap = dir / "cm_wireshark_crosscheck.pcap";
    try {
      write_pcap(out.cases, out.pcap);
      out.frames =
          decode_with_tshark(FASTCM_TSHARK_PATH, out.pcap, dir / "cm_wireshark_crosscheck.json");
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    return out;
  }();
  return r;
}

// Fails the current test unless tshark produced one frame per case; returns whether it did.
bool frames_ready(const CrossCheckRun& r) {
  if (!r.error.empty()) {
    ADD_FAILURE() << r.error;
    return false;
  }
  if (r.frames.size() != r.cases.size()) {
    ADD_FAILURE() << "tshark decoded " << r.frames.size() << " frames of " << r.cases.size()
                  << " in " << r.pcap;
    return false;
  }
  return true;
}

std::string attr_of(const FrameCase& c) {
  return std::string(mad::attr_name(c.header.attribute_id));
}

void report(const std::vector<std::string>& problems, const FrameCase& c, const TsharkFrame& f,
            const CrossCheckRun& r) {
  for (const std::string& p : problems) {
    ADD_FAILURE() << "frame " << f.number << " (" << attr_of(c) << ") of " << r.pcap << ": " << p;
  }
}

// fastcm's reading of an rdma_cm REQ (parse_service_id, decode_private_data) against Wireshark's:
// the rules above compare Wireshark with raw bytes, this compares it with the helpers' fields.
std::vector<std::string> rdma_cm_differences(const mad::Req& req, const ItemMap& shown) {
  const auto address = rdma_cm::parse_service_id(req.service_id);
  rdma_cm::IpHeader h;
  std::span<const std::uint8_t> consumer;
  const rdma_cm::HeaderStatus status = rdma_cm::decode_private_data(req.private_data, h, consumer);
  if (!address || status != rdma_cm::HeaderStatus::ok) {
    return {"the rdma_cm helpers do not read this REQ: " + std::string(rdma_cm::to_string(status))};
  }
  std::vector<std::string> problems;
  const auto expect = [&](const std::string& item, Text text, const FieldValue& value) {
    const auto it = shown.find(item);
    if (it == shown.end() || it->second.size() != 1 || parse_shown(it->second[0], text) != value) {
      problems.push_back(item + " does not show the helpers' " + format_value(value, text));
    }
  };
  const auto v4 = h.ip_version == rdma_cm::IpVersion::v4;
  const auto src = v4 ? std::vector<std::uint8_t>(h.src_addr.end() - 4, h.src_addr.end())
                      : std::vector<std::uint8_t>(h.src_addr.begin(), h.src_addr.end());
  const auto dst = v4 ? std::vector<std::uint8_t>(h.dst_addr.end() - 4, h.dst_addr.end())
                      : std::vector<std::uint8_t>(h.dst_addr.begin(), h.dst_addr.end());
  const std::string req_item = "infiniband.cm.req.";
  expect(req_item + "serviceid.protocol", Text::number,
         {static_cast<std::uint16_t>(address->port_space) & 0xFFu, {}});
  expect(req_item + "serviceid.dport", Text::number, {address->port, {}});
  expect(req_item + "ip_cm.ipv", Text::number, {static_cast<std::uint8_t>(h.ip_version), {}});
  expect(req_item + "ip_cm.sport", Text::number, {h.src_port, {}});
  expect(req_item + (v4 ? "ip_cm.sip4" : "ip_cm.sip6"), v4 ? Text::ipv4 : Text::ipv6, {0, src});
  expect(req_item + (v4 ? "ip_cm.dip4" : "ip_cm.dip6"), v4 ? Text::ipv4 : Text::ipv6, {0, dst});
  expect(req_item + "ip_cm.private", Text::byte_string, {0, {consumer.begin(), consumer.end()}});
  return problems;
}

// Compares the bodies of every frame whose message is an M; returns how many were compared.
template <mad::CmMessage M>
int check_bodies(bool want_rdma_cm) {
  const CrossCheckRun& r = crosscheck_run();
  if (!frames_ready(r)) return 0;
  int checked = 0;
  for (std::size_t i = 0; i < r.cases.size(); ++i) {
    const FrameCase& c = r.cases[i];
    const M* msg = std::get_if<M>(&c.message);
    if (msg == nullptr) continue;
    if constexpr (std::is_same_v<M, mad::Req>) {
      if (is_rdma_cm_service_id(msg->service_id) != want_rdma_cm) continue;
    }
    const TsharkFrame& f = r.frames[i];
    if (!f.cm_body) {
      ADD_FAILURE() << "frame " << f.number << ": tshark did not dissect the " << attr_of(c)
                    << " body";
      continue;
    }
    const MessageRules& rules = body_rules(c.message);
    const Expectations e = expectations_for(rules, *msg);
    report(e.unmapped, c, f, r);
    report(compare_items(e.items, *f.cm_body), c, f, r);
    if constexpr (std::is_same_v<M, mad::Req>) {
      if (want_rdma_cm) report(rdma_cm_differences(*msg, *f.cm_body), c, f, r);
    }
    ++checked;
  }
  return checked;
}

TEST(WiresharkCrossCheck, TsharkDecodesEveryFrameInOrder) {
  const CrossCheckRun& r = crosscheck_run();
  ASSERT_TRUE(frames_ready(r));
  for (std::size_t i = 0; i < r.frames.size(); ++i) {
    EXPECT_EQ(r.frames[i].number, i + 1);
  }
}

// The common header of all 12 attributes, and the bytes tshark saw: the MAD and its CM data area
// exactly as encoded.
TEST(WiresharkCrossCheck, MadHeaderOfEveryAttribute) {
  const CrossCheckRun& r = crosscheck_run();
  ASSERT_TRUE(frames_ready(r));
  std::set<mad::AttrId> attributes;
  for (std::size_t i = 0; i < r.cases.size(); ++i) {
    const FrameCase& c = r.cases[i];
    const TsharkFrame& f = r.frames[i];
    Expectations e = expectations_for(header_rules(), c.header);
    const FieldValue cm_data{0, {c.mad.begin() + mad::kMadHeaderSize, c.mad.end()}};
    e.items.push_back(Expectation{"infiniband.mad.data", 0, Text::byte_string, cm_data,
                                  "the CM data area after the header, as encoded"});
    report(e.unmapped, c, f, r);
    report(compare_items(e.items, f.mad_header), c, f, r);
    EXPECT_EQ(parse_shown(f.mad_bytes, Text::byte_string),
              (FieldValue{0, {c.mad.begin(), c.mad.end()}}))
        << "frame " << f.number << ": the MAD tshark shows differs from the encoded one";
    EXPECT_EQ(parse_shown(f.cm_data_bytes, Text::byte_string), cm_data)
        << "frame " << f.number << ": the CM data tshark shows differs from the encoded one";
    attributes.insert(c.header.attribute_id);
  }
  EXPECT_EQ(attributes.size(), std::variant_size_v<AnyMessage>);
}

TEST(WiresharkCrossCheck, ReqBodies) { EXPECT_EQ(check_bodies<mad::Req>(false), kPerAttribute); }
TEST(WiresharkCrossCheck, RdmaCmReqBodies) { EXPECT_EQ(check_bodies<mad::Req>(true), kRdmaCmReqs); }
TEST(WiresharkCrossCheck, RepBodies) { EXPECT_EQ(check_bodies<mad::Rep>(false), kPerAttribute); }
TEST(WiresharkCrossCheck, RejBodies) { EXPECT_EQ(check_bodies<mad::Rej>(false), kPerAttribute); }
TEST(WiresharkCrossCheck, RtuBodies) { EXPECT_EQ(check_bodies<mad::Rtu>(false), kPerAttribute); }
TEST(WiresharkCrossCheck, DreqBodies) { EXPECT_EQ(check_bodies<mad::Dreq>(false), kPerAttribute); }
TEST(WiresharkCrossCheck, DrepBodies) { EXPECT_EQ(check_bodies<mad::Drep>(false), kPerAttribute); }

// MRA, LAP, APR, SIDR_REQ, SIDR_REP and ClassPortInfo bodies are not dissected by Wireshark 4.0;
// when a Wireshark upgrade starts dissecting one, this fails so that its rules get written.
TEST(WiresharkCrossCheck, UndissectedBodiesStayUndissected) {
  const CrossCheckRun& r = crosscheck_run();
  ASSERT_TRUE(frames_ready(r));
  for (std::size_t i = 0; i < r.cases.size(); ++i) {
    const MessageRules& rules = body_rules(r.cases[i].message);
    const TsharkFrame& f = r.frames[i];
    if (rules.dissected) continue;
    EXPECT_FALSE(f.cm_body.has_value())
        << "frame " << f.number << ": Wireshark now dissects " << rules.message
        << " bodies; write their rules (" << rules.spec_table
        << ") in wireshark_cm_rules.cpp instead of: " << kNotDissected;
  }
}

// Coverage without tshark: every field of every dissected message has a rule, and every rule is
// well formed (names a codec field; a reason when not compared).
TEST(WiresharkCrossCheck, EveryFieldOfDissectedMessagesHasARule) {
  std::mt19937_64 rng(kSeed);
  const std::vector<std::pair<AnyMessage, const char*>> samples{
      {mad::test::random_valid_message<mad::Req>(rng), "REQ"},
      {rdma_cm_req(rng, true), "REQ rdma_cm IPv4"},
      {rdma_cm_req(rng, false), "REQ rdma_cm IPv6"},
      {mad::Rep{}, "REP"},
      {mad::Rej{}, "REJ"},
      {mad::Rtu{}, "RTU"},
      {mad::Dreq{}, "DREQ"},
      {mad::Drep{}, "DREP"}};
  std::set<const MessageRules*> used{&header_rules()};
  for (const auto& [message, name] : samples) {
    const MessageRules& rules = body_rules(message);
    ASSERT_TRUE(rules.dissected) << name;
    used.insert(&rules);
    const Expectations e =
        std::visit([&rules](const auto& m) { return expectations_for(rules, m); }, message);
    EXPECT_TRUE(e.unmapped.empty()) << name << ": " << ::testing::PrintToString(e.unmapped);
  }
  const Expectations h = expectations_for(header_rules(), MadHeader{});
  EXPECT_TRUE(h.unmapped.empty()) << ::testing::PrintToString(h.unmapped);
  for (const MessageRules* rules : all_dissected_rules()) {
    EXPECT_TRUE(used.contains(rules)) << rules->message << " rules are never exercised";
  }
}

// The comparison itself can fail: a wrong value, a missing item and an unexplained item are all
// reported.
TEST(WiresharkCrossCheck, ComparisonReportsEveryKindOfDifference) {
  // Built one by one: GCC 12 at -O2 misreports a braced list of these as maybe-uninitialized.
  std::vector<Expectation> expected;
  expected.push_back(Expectation{"a", 0, Text::number, FieldValue{0x2A, {}}, "x"});
  expected.push_back(Expectation{"b", 1, Text::byte_string, FieldValue{0, {1, 2}}, "y"});
  expected.push_back(Expectation{"c", 0, Text::ipv6, FieldValue{0, std::vector<std::uint8_t>(16, 0)}, "z"});
  const ItemMap shown{{"a", {"0x2b"}}, {"b", {"00", "01:02"}}, {"c", {"::"}}, {"d", {"7"}}};
  const std::vector<std::string> problems = compare_items(expected, shown);
  // "a" shows another value; the first "b" and "d" are explained by nothing.
  ASSERT_EQ(problems.size(), 3U) << ::testing::PrintToString(problems);
  EXPECT_NE(problems[0].find("shows 0x2b"), std::string::npos);
  EXPECT_EQ(compare_items({expected[2]}, {{"c", {"::"}}}), std::vector<std::string>{});
  const ItemMap missing{{"c", {}}};
  EXPECT_EQ(compare_items({expected[2]}, missing).size(), 1U);
}

TEST(WiresharkCrossCheck, ReadsTsharkNotations) {
  EXPECT_EQ(parse_shown("0x000006b7", Text::number), (FieldValue{0x6B7, {}}));
  EXPECT_EQ(parse_shown("28534", Text::number), (FieldValue{28534, {}}));
  EXPECT_EQ(parse_shown("0xffffffffffffffff", Text::number), (FieldValue{~std::uint64_t{0}, {}}));
  EXPECT_FALSE(parse_shown("0x", Text::number));
  EXPECT_FALSE(parse_shown("12a", Text::number));
  EXPECT_EQ(parse_shown("1f:26:2d", Text::byte_string), (FieldValue{0, {0x1F, 0x26, 0x2D}}));
  EXPECT_EQ(parse_shown("50", Text::byte_string), (FieldValue{0, {0x50}}));
  EXPECT_FALSE(parse_shown("1f:2", Text::byte_string));
  EXPECT_FALSE(parse_shown("1f2d", Text::byte_string));
  EXPECT_FALSE(parse_shown("", Text::byte_string));
  const auto v6 = parse_shown("fb02:910::5d64", Text::ipv6);
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->bytes.size(), 16U);
  EXPECT_EQ(v6->bytes[2], 0x09);
  EXPECT_EQ(v6->bytes[15], 0x64);
  EXPECT_EQ(parse_shown("76.77.78.79", Text::ipv4), (FieldValue{0, {76, 77, 78, 79}}));
  EXPECT_FALSE(parse_shown("76.77.78", Text::ipv4));
}

}  // namespace
}  // namespace fastcm::wire_test
