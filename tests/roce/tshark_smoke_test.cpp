// Wireshark's dissectors as an independent reader of our frames: tshark must see RoCEv2 with the
// BTH/DETH fields we wrote, verify our IPv4 header and IPv6 UDP checksums, and find a CM REQ.
// tshark does not check the ICRC (icrc_test.cpp does); it only shows where it sits.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/roce_udp/pcap_file.h"
#include "fabric/roce_udp/rocev2_frame.h"
#include "sample_frames.h"
#include "temp_dir.h"

namespace fastcm::roce {
namespace {

using nlohmann::json;

constexpr const char* kTshark = FASTCM_TSHARK_PATH;

// Runs tshark on `pcap` and returns its JSON, or fails the test with tshark's stderr.
json tshark_json(const std::filesystem::path& pcap, const std::filesystem::path& stderr_file) {
  const std::string cmd = std::string("'") + kTshark + "' -r '" + pcap.string() +
                          "' -T json -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE"
                          // Heuristic dissectors that would claim CM private data.
                          " --disable-protocol infiniband_sdp --disable-protocol iser"
                          " --disable-protocol nvme-rdma --disable-protocol lnet 2>'" +
                          stderr_file.string() + "'";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return {};
  }
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = pclose(pipe);
  if (status != 0) {
    std::ifstream err(stderr_file);
    std::stringstream text;
    text << err.rdbuf();
    ADD_FAILURE() << "tshark exited with status " << status << ": " << text.str();
    return {};
  }
  return json::parse(out);
}

// The first value stored under `key` anywhere below `node` (tshark nests fields in *_tree objects).
const json* find_field(const json& node, const std::string& key) {
  if (!node.is_object() && !node.is_array()) return nullptr;
  if (node.is_object()) {
    if (const auto it = node.find(key); it != node.end()) return &*it;
  }
  for (const auto& child : node) {
    if (const json* found = find_field(child, key)) return found;
  }
  return nullptr;
}

std::string field(const json& layers, const std::string& key) {
  const json* v = find_field(layers, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "<missing " + key + ">";
}

std::string hex32(std::uint32_t v) {
  char s[11];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

TEST(TsharkSmoke, DecodesOurIpv6AndIpv4FramesAsACmReq) {
  ASSERT_TRUE(std::filesystem::exists(kTshark))
      << "tshark not found (CMake looked for it at configure time: '" << kTshark
      << "'); scripts/setup installs it";
  const test::TempDir dir;
  const auto pcap = dir.path() / "cm_req.pcap";
  const std::vector<std::vector<std::uint8_t>> frames = {
      test::build_frame(test::ipv6_endpoint(1), test::ipv6_endpoint(2), test::sample_header(),
                        test::cm_req_mad(0xAABBCCDD)),
      test::build_frame(test::ipv4_endpoint(1), test::ipv4_endpoint(2), test::sample_header(),
                        test::cm_req_mad(0xAABBCCDD))};
  {
    PcapWriter writer(pcap);
    for (const auto& f : frames) writer.write(f, PcapTimestamp{1'000'000});
    writer.flush();
  }

  const json packets = tshark_json(pcap, dir.path() / "tshark.stderr");
  ASSERT_TRUE(packets.is_array());
  ASSERT_EQ(packets.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE(i == 0 ? "IPv6 frame" : "IPv4 frame");
    const json& layers = packets[i]["_source"]["layers"];
    EXPECT_EQ(field(layers, "frame.protocols"),
              i == 0 ? "eth:ethertype:ipv6:udp:infiniband" : "eth:ethertype:ip:udp:infiniband");
    if (i == 0) {
      EXPECT_EQ(field(layers, "ipv6.src"), "fe80::200:ff:fe00:1");
      EXPECT_EQ(field(layers, "udp.checksum.status"), "1");  // 1 = good
    } else {
      EXPECT_EQ(field(layers, "ip.src"), "10.0.0.1");
      EXPECT_EQ(field(layers, "ip.checksum.status"), "1");
      EXPECT_EQ(field(layers, "ip.flags.df"), "1");
    }
    EXPECT_EQ(field(layers, "udp.srcport"), "49443");
    EXPECT_EQ(field(layers, "udp.dstport"), "4791");

    EXPECT_EQ(field(layers, "infiniband.bth.opcode"), "100");  // UD SEND_ONLY
    EXPECT_EQ(field(layers, "infiniband.bth.p_key"), "65535");
    EXPECT_EQ(field(layers, "infiniband.bth.destqp"), "0x000001");
    EXPECT_EQ(field(layers, "infiniband.bth.psn"), "11259375");  // 0xABCDEF
    EXPECT_EQ(field(layers, "infiniband.bth.padcnt"), "0");
    EXPECT_EQ(field(layers, "infiniband.deth.q_key"), "0x0000000080010000");
    EXPECT_EQ(field(layers, "infiniband.deth.srcqp"), "0x00000001");

    EXPECT_EQ(field(layers, "infiniband.mad.baseversion"), "0x01");
    EXPECT_EQ(field(layers, "infiniband.mad.mgmtclass"), "0x07");
    EXPECT_EQ(field(layers, "infiniband.mad.classversion"), "0x02");
    EXPECT_EQ(field(layers, "infiniband.mad.method"), "0x03");
    EXPECT_EQ(field(layers, "infiniband.mad.transactionid"), "0x0000000012345678");
    EXPECT_EQ(field(layers, "infiniband.mad.attributeid"), "0x0010");
    EXPECT_EQ(field(layers, "infiniband.cm.req"), "0xaabbccdd");  // Local Communication ID

    // tshark reads the 4 ICRC bytes big-endian; ours go least significant byte first.
    const FrameParse parsed = parse_rocev2_frame(frames[i]);
    ASSERT_EQ(parsed.errc, FrameErrc::ok);
    EXPECT_EQ(field(layers, "infiniband.invariant.crc"),
              hex32(__builtin_bswap32(parsed.frame.icrc)));
  }
}

}  // namespace
}  // namespace fastcm::roce
