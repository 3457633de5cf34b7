// Operating fastcm-bench as the README shows: a settings file under the command line, a capture
// Wireshark decodes, and metrics a Prometheus server accepts (promtool) or a script reads (JSON).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tool/run_tool.h"

namespace fastcm::tools {
namespace {

const std::string kDemoIni = std::string(FASTCM_CONFIGS_DIR) + "/demo.ini";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The sum of every sample of `family` whose labels include all of `labels` (each `name="value"`).
std::uint64_t prometheus_sum(const std::string& text, const std::string& family,
                             const std::vector<std::string>& labels) {
  std::uint64_t sum = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(family + "{", 0) != 0) continue;
    bool match = true;
    for (const std::string& label : labels) match = match && line.find(label) != std::string::npos;
    if (match) sum += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

// The done-when, as a test: the demo's settings, 10,000 connections, a capture and metrics.
TEST(FastcmBenchOperate, DemoSettingsWithCaptureAndMetrics) {
  test::ScratchDir dir;
  const std::string pcap = (dir.path() / "x.pcapng").string();
  const std::string prom = (dir.path() / "m.prom").string();
  const test::ToolRun bench = test::run_tool(
      FASTCM_BENCH_TOOL, {"--config", kDemoIni, "--connections", "10000", "--pcap", pcap, "--metrics", prom});
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  EXPECT_NE(bench.out.find("over 4 ports, 4 shards per engine"), std::string::npos) << bench.out;

  // Every packet of the capture is a CM MAD tshark decodes, none malformed: per connection REQ,
  // REP, RTU, and at the teardown DREQ and DREP.
  const test::ToolRun tshark = test::run_tool(
      FASTCM_TSHARK_PATH, {"-r", pcap, "-T", "fields", "-e", "infiniband.mad.attributeid", "-e", "_ws.malformed"});
  ASSERT_EQ(tshark.exit_code, 0) << tshark.err;
  std::istringstream lines(tshark.out);
  std::size_t packets = 0;
  for (std::string line; std::getline(lines, line); ++packets) {
    ASSERT_TRUE(std::regex_match(line, std::regex("0x00(10|13|14|15|16)\t"))) << "packet " << packets + 1 << ": " << line;
  }
  // The tap never waits on its writer: what a busy machine left it no time to write is counted and
  // reported ("not recorded: N writer behind"), and with the written ones makes up every MAD.
  std::size_t writer_behind = 0;
  std::smatch behind;
  if (std::regex_search(bench.out, behind, std::regex("not recorded: ([0-9,]+) writer behind"))) {
    writer_behind = std::stoul(std::regex_replace(behind[1].str(), std::regex(","), ""));
  }
  EXPECT_EQ(packets + writer_behind, 5u * 10000) << bench.out;

  // promtool accepts the metrics, and they count what the storm did.
  ASSERT_NE(std::string(FASTCM_PROMTOOL_PATH).find("promtool"), std::string::npos)
      << "promtool not found when configured: apt-get install prometheus (scripts/setup does)";
  const test::ToolRun promtool = test::run_tool(FASTCM_PROMTOOL_PATH, {"check", "metrics"}, read_file(prom));
  EXPECT_EQ(promtool.exit_code, 0) << promtool.out << promtool.err;
  const std::string text = read_file(prom);
  EXPECT_EQ(prometheus_sum(text, "fastcm_messages_received_total", {"engine=\"server\"", "message=\"req\""}), 10000u);
  EXPECT_EQ(prometheus_sum(text, "fastcm_messages_sent_total", {"engine=\"client\"", "message=\"rtu\""}), 10000u);
  EXPECT_EQ(prometheus_sum(text, "fastcm_drops_total", {}), 0u);
  // Every connection stayed established until the teardown: the endpoints' high-water mark holds
  // them all (the leak check then takes every endpoint once more, up to the limit).
  EXPECT_GE(prometheus_sum(text, "fastcm_endpoints_high_water", {"engine=\"server\""}), 10000u);
  EXPECT_GT(prometheus_sum(text, "fastcm_shard_inbox_high_water", {"engine=\"server\""}), 0u);
  EXPECT_GT(prometheus_sum(text, "fastcm_mad_buffers_high_water", {"engine=\"client\"", "half=\"sent\""}), 0u);
}

TEST(FastcmBenchOperate, JsonMetricsForAFileNamedJson) {
  test::ScratchDir dir;
  const std::string path = (dir.path() / "m.json").string();
  const test::ToolRun bench = test::run_tool(
      FASTCM_BENCH_TOOL, {"--connections", "500", "--ports", "2", "--metrics", path, "--metrics-interval", "10"});
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(path));
  ASSERT_EQ(j["engines"].size(), 2u);
  EXPECT_EQ(j["engines"][0]["name"], "server");
  std::uint64_t reqs = 0;
  for (const auto& shard : j["engines"][0]["shards"]) {
    for (const auto& port : shard["ports"]) reqs += port["messages"]["req"]["received"].get<std::uint64_t>();
  }
  EXPECT_EQ(reqs, 500u);
  EXPECT_EQ(j["engines"][0]["shards"].size(), 2u);
  EXPECT_EQ(j["engines"][0]["endpoints"]["limit"], j["engines"][0]["endpoints"]["high_water"]);
}

TEST(FastcmBenchOperate, CommandLineOverridesTheSettingsFile) {
  const test::ToolRun bench =
      test::run_tool(FASTCM_BENCH_TOOL, {"--config", kDemoIni, "--connections", "300", "--shards", "2", "--json"});
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  const nlohmann::json j = nlohmann::json::parse(bench.out);
  EXPECT_EQ(j["shards"], 2);  // the file says 4
  EXPECT_EQ(j["ports"], 4);   // from the file (the tool's default is 4 too, so also:)
  const test::ToolRun two_ports = test::run_tool(
      FASTCM_BENCH_TOOL, {"--config", kDemoIni, "--connections", "300", "--ports", "2", "--json"});
  ASSERT_EQ(two_ports.exit_code, 0) << two_ports.err;
  EXPECT_EQ(nlohmann::json::parse(two_ports.out)["ports"], 2);
}

TEST(FastcmBenchOperate, SettingsFileMistakesNameFileSectionAndKey) {
  test::ScratchDir dir;
  const std::string path = (dir.path() / "bad.ini").string();
  std::ofstream(path) << "[engine]\nshards = 65\n";
  test::ToolRun bench = test::run_tool(FASTCM_BENCH_TOOL, {"--config", path, "-n", "10"});
  EXPECT_EQ(bench.exit_code, 2);
  EXPECT_NE(bench.err.find("fastcm-bench: --config " + path + ": [engine] shards: must be 1..64"), std::string::npos)
      << bench.err;
  std::ofstream(path) << "[engine]\nthreading = caller\n";
  bench = test::run_tool(FASTCM_BENCH_TOOL, {"--config", path, "-n", "10"});
  EXPECT_EQ(bench.exit_code, 2);
  EXPECT_NE(bench.err.find("[engine] threading: fastcm-bench runs the engines on worker threads"), std::string::npos)
      << bench.err;
}

}  // namespace
}  // namespace fastcm::tools
