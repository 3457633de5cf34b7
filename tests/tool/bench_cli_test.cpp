// The fastcm-bench binary run as a subprocess: the checks of its fabric and role options, a
// fabric that cannot be opened, and a server and a client as two processes over the udp fabric.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tool/run_tool.h"
#include "tests/udp/udp_test_support.h"

namespace fastcm::tools {
namespace {

using test::RunningTool;
using test::ToolRun;

ToolRun run_bench(const std::vector<std::string>& args) {
  return test::run_tool(FASTCM_BENCH_TOOL, args);
}

// A usage error: exit status 2, nothing on standard output, `message` on standard error.
void expect_usage_error(const std::vector<std::string>& args, const std::string& message) {
  const ToolRun run = run_bench(args);
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find(message), std::string::npos) << "stderr: " << run.err;
}

const std::vector<std::string> kUdpClient{"--fabric", "udp", "--address", "127.0.0.2", "--role",
                                          "client"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

TEST(FastcmBenchCli, RolesOtherThanBothNeedAFabricAnotherProcessReaches) {
  expect_usage_error({"--role", "server"}, "--role server needs a fabric another process can reach");
  expect_usage_error({"--role", "client", "--target-gid", "::1"},
                     "--role client needs a fabric another process can reach");
  expect_usage_error({"--fabric", "udp", "--address", "127.0.0.1"},
                     "--role both runs both sides in one process over the loopback fabric");
}

TEST(FastcmBenchCli, FabricOptionsBelongToTheirFabric) {
  expect_usage_error(with(kUdpClient, {"--target-ip", "127.0.0.1", "--ports", "2"}),
                     "--ports applies to the loopback fabric only");
  expect_usage_error(with(kUdpClient, {"--target-ip", "127.0.0.1", "--loss", "1"}),
                     "--loss applies to the loopback fabric only");
  expect_usage_error(with(kUdpClient, {"--target-ip", "127.0.0.1", "--device", "mlx5_0"}),
                     "--device applies to --fabric umad only");
  expect_usage_error({"--fabric", "umad", "--role", "server", "--address", "127.0.0.1"},
                     "--address applies to --fabric udp only");
  expect_usage_error({"--hca-port", "1"}, "--hca-port applies to --fabric umad only");
  expect_usage_error({"--fabric", "udp", "--role", "server"},
                     "--fabric udp needs at least one --address");
}

TEST(FastcmBenchCli, TheClientNeedsATargetThatFitsTheFabric) {
  expect_usage_error(kUdpClient, "--role client needs the listen's address");
  expect_usage_error(with(kUdpClient, {"--target-lid", "5", "--target-gid", "::ffff:127.0.0.1"}),
                     "--target-lid: udp ports have no LIDs");
  expect_usage_error(with(kUdpClient, {"--target-gid", "not-a-gid"}), "not-a-gid is not a GID");
  expect_usage_error(with(kUdpClient, {"--target-ip", "300.1.1.1"}),
                     "300.1.1.1 is not an IPv4 or IPv6 address");
}

TEST(FastcmBenchCli, RdmaCmAddressingNeedsBothAddressesOfOneFamily) {
  expect_usage_error(with(kUdpClient, {"--target-ip", "127.0.0.1", "--rdma-cm-port", "7471"}),
                     "--rdma-cm-port needs --source-ip and --target-ip");
  expect_usage_error(with(kUdpClient, {"--target-ip", "127.0.0.1", "--rdma-cm-port", "7471",
                                       "--source-ip", "::1"}),
                     "--source-ip and --target-ip must both be IPv4 or both IPv6");
  expect_usage_error(with(kUdpClient, {"--target-ip", "127.0.0.1", "--source-ip", "127.0.0.2"}),
                     "--source-ip is the rdma_cm header's source address");
  expect_usage_error(with(kUdpClient, {"--target-ip", "127.0.0.1", "--rdma-cm-port", "7471",
                                       "--source-ip", "127.0.0.2", "--private-data", "57"}),
                     "--private-data: with --rdma-cm-port at most 56 bytes");
  expect_usage_error(
      {"--fabric", "udp", "--address", "127.0.0.1", "--role", "server", "--service-id", "5",
       "--rdma-cm-port", "5"},
      "--service-id and --rdma-cm-port both name the listen's service ID");
}

TEST(FastcmBenchCli, ClientAndServerOptionsStayOnTheirSide) {
  const std::vector<std::string> server{"--fabric", "udp", "--address", "127.0.0.1", "--role",
                                        "server"};
  expect_usage_error(with(server, {"--disconnect"}),
                     "--disconnect applies to the storm's client side");
  expect_usage_error(with(server, {"--target-ip", "127.0.0.2"}),
                     "--target-ip applies to the storm's client side");
  expect_usage_error({"--target-gid", "::1"}, "--target-gid addresses another process's listen");
}

TEST(FastcmBenchCli, ContendersRunBesideTheStormAndAreReaped) {
  expect_usage_error({"--fabric", "udp", "--address", "127.0.0.1", "--role", "server", "--contend", "1"},
                     "--contend applies to the storm's client side");
  const ToolRun run = run_bench({"--connections", "3000", "--ports", "1", "--contend", "2", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["contend"]["processes"], 2);
  // The storm ran with them: they took CPU time, and they were reaped (getrusage counts a child
  // only once waited for).
  EXPECT_GT(j["contend"]["cpu_s"].get<double>(), 0.0);
  EXPECT_EQ(j["established"], 3000);
}

TEST(FastcmBenchCli, AFabricThatCannotBeOpenedEndsTheRunWithItsReason) {
  // 192.0.2.1 (TEST-NET-1) is no address of this machine.
  const ToolRun run = run_bench({"--fabric", "udp", "--address", "192.0.2.1", "--role", "server"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err.rfind("fastcm-bench: --fabric udp: ", 0), 0u) << run.err;
  EXPECT_EQ(run.err.find("listening"), std::string::npos) << run.err;

  const ToolRun umad =
      run_bench({"--fabric", "umad", "--device", "no-such-hca", "--role", "server"});
  EXPECT_EQ(umad.exit_code, 1) << umad.err;
  EXPECT_EQ(umad.err.rfind("fastcm-bench: --fabric umad: ", 0), 0u) << umad.err;
}

// The server listens on 127.0.0.1, the client storms it from 127.0.0.2 (both on one free UDP
// port), then the server is stopped by SIGTERM: both account for every connection and leak
// nothing.
TEST(FastcmBenchCli, ServerAndClientProcessesOverUdp) {
  const std::uint16_t port = roce::test::free_udp_port("127.0.0.1");
  ASSERT_NE(port, 0);
  const std::string udp_port = std::to_string(port);
  RunningTool server(FASTCM_BENCH_TOOL,
                     {"--fabric", "udp", "--address", "127.0.0.1", "--udp-port", udp_port,
                      "--role", "server", "--connections", "1000", "--json"});
  ASSERT_TRUE(server.wait_for_stderr("fastcm-bench: listening", std::chrono::seconds(60)))
      << "the server never printed its listening line; stderr: " << server.err();
  EXPECT_NE(server.err().find("GID ::ffff:127.0.0.1"), std::string::npos) << server.err();

  const ToolRun client = run_bench({"--fabric", "udp", "--address", "127.0.0.2", "--udp-port",
                                    udp_port, "--role", "client", "--target-ip", "127.0.0.1",
                                    "--connections", "300", "--window", "32", "--disconnect",
                                    "--json"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  const nlohmann::json c = nlohmann::json::parse(client.out);
  EXPECT_EQ(c["role"], "client");
  EXPECT_EQ(c["established"], 300);
  EXPECT_EQ(c["disconnected"], 300);
  EXPECT_EQ(c["rejected"], 0);
  EXPECT_EQ(c["timed_out"], 0);
  EXPECT_EQ(c["leaked_ceps"], 0);
  EXPECT_EQ(c["leaked_mads"], 0);

  server.signal(SIGTERM);
  const ToolRun s = server.wait();
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const nlohmann::json j = nlohmann::json::parse(s.out);
  EXPECT_EQ(j["role"], "server");
  EXPECT_EQ(j["stopped_by"], "SIGTERM");
  EXPECT_EQ(j["accepted"], 300);
  EXPECT_EQ(j["reqs_received"], 300);
  EXPECT_EQ(j["leaked_ceps"], 0);
  EXPECT_EQ(j["leaked_mads"], 0);
  EXPECT_EQ(j["teardown"]["drained"], true);
}

}  // namespace
}  // namespace fastcm::tools
