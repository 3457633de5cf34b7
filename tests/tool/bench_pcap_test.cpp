// fastcm-bench --pcap: every CM MAD the listen sends and receives during a storm is in the capture,
// and both Wireshark (tshark) and `fastcm-mad pcap` decode every one of them.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tool/run_tool.h"

namespace fastcm::tools {
namespace {

// 1,500 connections make 7,500 MADs at the listen: fewer than the tap's queue holds (8,192), so
// none can be dropped however late the writer thread gets a core. At 2,000 (10,000 MADs) a storm
// now outruns a writer that waits its turn on a shared 2-core machine.
constexpr int kConnections = 1500;

TEST(FastcmBenchPcap, EveryMadOfTheListenIsCapturedAndDecodes) {
  test::ScratchDir dir;
  const std::string pcap = (dir.path() / "storm.pcapng").string();
  const test::ToolRun bench = test::run_tool(
      FASTCM_BENCH_TOOL, {"--connections", std::to_string(kConnections), "--disconnect", "--pcap", pcap, "--json"});
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  const nlohmann::json j = nlohmann::json::parse(bench.out);
  // Per connection the listen receives REQ, RTU, DREQ and sends REP, DREP.
  EXPECT_EQ(j["pcap"]["written"], 5 * kConnections);
  EXPECT_EQ(j["pcap"]["dropped_queue_full"], 0);
  EXPECT_EQ(j["pcap"]["dropped_limit"], 0);
  EXPECT_EQ(j["pcap"]["write_errors"], 0);

  // tshark: one CM message name per packet, none malformed.
  const test::ToolRun tshark = test::run_tool(
      FASTCM_TSHARK_PATH, {"-r", pcap, "-T", "fields", "-e", "infiniband.mad.attributeid", "-e",
                           "_ws.malformed", "-e", "_ws.expert.severity"});
  ASSERT_EQ(tshark.exit_code, 0) << tshark.err;
  std::istringstream lines(tshark.out);
  std::size_t packets = 0;
  std::map<std::string, std::size_t> attributes;
  for (std::string line; std::getline(lines, line); ++packets) {
    const std::size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    ++attributes[line.substr(0, tab)];
    EXPECT_EQ(line.substr(tab), "\t\t") << "packet " << packets + 1 << " is malformed or flagged";
  }
  // REQ, REP, RTU, DREQ, DREP: one each per connection.
  EXPECT_EQ(attributes, (std::map<std::string, std::size_t>{{"0x0010", kConnections},
                                                           {"0x0013", kConnections},
                                                           {"0x0014", kConnections},
                                                           {"0x0015", kConnections},
                                                           {"0x0016", kConnections}}));
  EXPECT_EQ(packets, 5u * kConnections);

  const test::ToolRun mad = test::run_tool(FASTCM_MAD_TOOL, {"pcap", pcap});
  ASSERT_EQ(mad.exit_code, 0) << mad.err;
  const std::string frames = std::to_string(5 * kConnections);
  EXPECT_NE(mad.err.find(frames + " frames: " + frames + " MADs (0 malformed, 0 bad ICRC)"), std::string::npos)
      << mad.err;
}

}  // namespace
}  // namespace fastcm::tools
