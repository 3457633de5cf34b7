// A storm of 10,000 connections between two fastcm-bench processes through ibsim's simulated
// switch: --role server on one HCA, --role client with --disconnect on another; both must end
// with no leaked endpoints or MADs. Release stage only (tests/ibsim/CMakeLists.txt): speed is
// not asserted, but a sanitizer build would take too long for ctest's bound.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <string>

#include "tests/ibsim/simulator.h"

namespace fastcm::ibsim {
namespace {

using namespace std::chrono_literals;

constexpr const char* kConnections = "10000";
// Lanes of the client (connections in flight). umad2sim 0.10 holds its process-wide mutex while it
// writes a MAD to ibsim's socket, and its receiver thread needs that mutex to drain the socket
// ibsim writes to; ibsim, single-threaded, blocks writing to a client whose socket is full. A
// large burst (the default window, 1024) fills both and the two deadlock; 16 lanes stay clear.
constexpr const char* kWindow = "16";
// 4.096 µs · 2^14 ≈ 67 ms: a MAD the simulator lost is sent again soon.
constexpr const char* kCmTimeout = "14";
constexpr const char* kServiceId = "4660";  // 0x1234

// The word after `key` in `line` ("... LID 0x0003 GID fe80::10:3 ..."), or "".
std::string word_after(const std::string& line, const std::string& key) {
  const std::size_t at = line.find(key);
  if (at == std::string::npos) return {};
  const std::size_t from = at + key.size();
  const std::size_t to = line.find_first_of(" ,\n", from);
  return line.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

void expect_no_leaks(const std::string& json, const char* side) {
  EXPECT_NE(json.find("\"leaked_ceps\": 0"), std::string::npos) << side << ":\n" << json;
  EXPECT_NE(json.find("\"leaked_mads\": 0"), std::string::npos) << side << ":\n" << json;
}

TEST(IbsimStorm, TenThousandConnectionsBetweenTwoBenchProcessesLeakNothing) {
  Simulator sim;
  std::string error;
  ASSERT_TRUE(sim.start(error)) << "the InfiniBand simulator could not start: " << error;

  Process server = sim.spawn_on(2, {FASTCM_PROGRAM, "--fabric", "umad", "--role", "server", "--service-id",
                                    kServiceId, "--json"});
  const std::string listening = sim.wait_line(server, "fastcm-bench: listening", 60s);
  ASSERT_FALSE(listening.empty()) << "the server did not listen:\n" << Simulator::output(server);
  const std::string lid = word_after(listening, "LID ");
  const std::string gid = word_after(listening, "GID ");
  ASSERT_FALSE(lid.empty() || gid.empty()) << listening;

  Process client = sim.spawn_on(3, {FASTCM_PROGRAM, "--fabric", "umad", "--role", "client", "--service-id",
                                    kServiceId, "--target-lid", std::to_string(std::stoul(lid, nullptr, 0)),
                                    "--target-gid", gid, "--connections", kConnections, "--disconnect", "--window", kWindow, "--cm-timeout", kCmTimeout, "--json"});
  ASSERT_TRUE(sim.wait_exit(client, 240s)) << "the client storm did not finish:\n" << Simulator::output(client);
  const std::string client_out = Simulator::output(client);
  EXPECT_EQ(client.exit_status, 0) << client_out;
  expect_no_leaks(client_out, "client");
  EXPECT_NE(client_out.find("\"established\": " + std::string(kConnections)), std::string::npos) << client_out;

  ASSERT_TRUE(sim.terminate(server, 60s)) << "the server did not stop:\n" << Simulator::output(server);
  const std::string server_out = Simulator::output(server);
  EXPECT_EQ(server.exit_status, 0) << server_out;
  expect_no_leaks(server_out, "server");
  std::cout << "client:\n" << client_out << "\nserver:\n" << server_out;  // the storm's figures, for the log
}

}  // namespace
}  // namespace fastcm::ibsim
