// The soak: fastcm-bench's full connection life cycle over a loopback fabric that loses,
// duplicates and reorders MADs. Every connection must end exactly once, no event may reach the
// application twice (or after its endpoint's destroy), and nothing may leak. The tool checks all
// of it itself (its exit status); the test also reads the JSON so a failure names what broke.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/tool/run_tool.h"

namespace fastcm::tools {
namespace {

TEST(FastcmBenchSoak, TenThousandLifeCyclesThroughLossDuplicationAndReorderingEndOnceEach) {
  const test::ToolRun run = test::run_tool(
      FASTCM_BENCH_TOOL, {"--connections", "10000", "--disconnect", "--cm-timeout", "14", "--loss",
                          "10", "--dup", "5", "--reorder", "5", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["attempted"], 10000);
  EXPECT_EQ(j["established"], 10000);
  EXPECT_EQ(j["disconnected"], 10000);
  EXPECT_EQ(j["unaccounted"], 0);
  EXPECT_EQ(j["duplicate_events"], 0);
  EXPECT_EQ(j["server_duplicate_events"], 0);
  EXPECT_EQ(j["leaked_ceps"], 0);
  EXPECT_EQ(j["leaked_mads"], 0);
  // The faults happened, and the engines recovered from them by retransmitting.
  EXPECT_GT(j["fabric"]["lost"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["fabric"]["duplicated"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["fabric"]["delayed"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["retries"].get<std::uint64_t>(), 0u);
}

}  // namespace
}  // namespace fastcm::tools
