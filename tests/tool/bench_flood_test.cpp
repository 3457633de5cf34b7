// fastcm-bench --flood-rate: one source floods the listen with REQs it never completes while the
// storm's clients connect from other ports. The half-open budget per source must shed the flood
// (counted by reason) so that every legitimate connect succeeds during it, the server's endpoints
// and MAD buffers stay within the budget's reach, and a fresh connect is answered after it.
// Small and slow enough for a loaded machine: it asserts behaviour, never speed.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tool/run_tool.h"

namespace fastcm::tools {
namespace {

std::uint64_t u64(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

TEST(FastcmBenchFlood, OneSourceIsShedWhileLegitimateConnectsSucceedAndTheServerAnswersAfter) {
  constexpr std::uint64_t kConnections = 200;
  const test::ToolRun run = test::run_tool(
      FASTCM_BENCH_TOOL, {"--flood-rate", "20000", "--flood-seconds", "3", "--connections",
                          std::to_string(kConnections), "--cm-timeout", "14", "--json"});
  // Drained, nothing leaked, every connection accounted for, no duplicate event.
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  const nlohmann::json& f = j["flood"];
  ASSERT_TRUE(f.is_object()) << run.out;
  const std::uint64_t per_source = u64(f["half_open_per_source"]);

  // The flood was offered (and to one port, so to one source's budget).
  EXPECT_GT(u64(f["sent"]), per_source) << run.out;
  EXPECT_EQ(u64(f["refused"]), 0u);

  // Every legitimate connect succeeded while the flood ran.
  EXPECT_EQ(u64(j["established"]), kConnections) << run.out;
  EXPECT_EQ(u64(f["established_by_end"]), kConnections) << run.out;

  // The flood beyond its source's budget was shed, counted by reason, and answered by REJ (the
  // listen's default policy); each of its REQs was either admitted or counted somewhere.
  const nlohmann::json& drops = f["server_drops"];
  EXPECT_GT(u64(drops["source_budget"]), 0u) << run.out;
  EXPECT_GE(u64(f["answers"]["rej"]), u64(drops["source_budget"]));
  std::uint64_t shed = u64(f["server_queue_full"]);
  for (const auto& [reason, n] : drops.items()) shed += u64(n);
  EXPECT_GE(shed + u64(f["admitted"]), u64(f["sent"])) << run.out;
  // Admitted: the budget's worth of the flood (its handshakes outlive the test: 2^20 timeouts),
  // and the probe's connects.
  EXPECT_LE(u64(f["admitted"]), per_source + u64(f["recovery"]["attempts"])) << run.out;

  // The server stayed within the budget's reach: the flood's half-open handshakes, the storm's
  // connections and the probe's, far below its tables' bounds.
  EXPECT_LE(u64(f["server_endpoints_high"]), per_source + 2 * kConnections) << run.out;
  EXPECT_LE(u64(f["server_endpoints_high"]), u64(f["max_endpoints"]));
  EXPECT_LE(u64(f["server_mads_high"]), u64(f["mad_buffers"]));

  // A fresh connect was answered with a REP once the flood stopped.
  EXPECT_TRUE(f["recovery"]["answered"].get<bool>()) << run.out;
}

// A usage error: exit status 2, `message` on standard error.
void expect_usage_error(const std::vector<std::string>& args, const std::string& message) {
  const test::ToolRun run = test::run_tool(FASTCM_BENCH_TOOL, args);
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find(message), std::string::npos) << "stderr: " << run.err;
}

TEST(FastcmBenchFlood, FloodOptionsNeedTheLoopbackRigAndARate) {
  expect_usage_error({"--fabric", "udp", "--address", "127.0.0.1", "--role", "server",
                      "--flood-rate", "1000"},
                     "--flood-rate floods from a third loopback HCA: --role both only");
  expect_usage_error({"--flood-seconds", "2"}, "--flood-seconds needs --flood-rate");
  expect_usage_error({"--flood-rate", "1000", "--duration", "2"},
                     "--duration does not apply");
  expect_usage_error({"--flood-rate", "0"}, "--flood-rate");
}

}  // namespace
}  // namespace fastcm::tools
