// Wireshark cross-check of the CM codec: random messages of every attribute are encoded, framed as
// RoCEv2 packets (with a correct ICRC) into one pcap, decoded by one tshark run, and every item
// Wireshark shows for the MAD must equal the encoded field (or, for the Wireshark defects listed
// in wireshark_cm_rules.cpp, be consistent with the defect).
#include <gtest/gtest.h>

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

// A REQ as rdma_cm sends it (IBTA Vol. 1 Annex A11): service ID 0x0000000001 | port space | port,
// and private data opening with the IP header: version byte, IP version nibble (4 or 6), reserved
// nibble, source port, then source and destination addresses of 16 bytes each (an IPv4 one in the
// last 4). Everything but the IP version stays random: Wireshark only displays it.
mad::Req rdma_cm_req(std::mt19937_64& rng, bool ipv4) {
  constexpr std::array<std::uint64_t, 4> kPortSpaces{0x02, 0x06, 0x11, 0x3F};  // IPoIB TCP UDP IB
  mad::Req req = mad::test::random_valid_message<mad::Req>(rng);
  req.service_id =
      kRdmaCmServiceIdPrefix | kPortSpaces[rng() % kPortSpaces.size()] << 16 | (rng() & 0xFFFF);
  const auto low_nibble = static_cast<std::uint8_t>(req.private_data[1] & 0x0F);
  req.private_data[1] = static_cast<std::uint8_t>((ipv4 ? 4 : 6) << 4 | low_nibble);
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
// (PLATFORM.md §10; over IPv4 it shows only 4 bytes of the REQ's primary GIDs).
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
