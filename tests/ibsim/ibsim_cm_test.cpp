// CM scenarios between two (or three) processes through ibsim's simulated switch: each side is
// tests/ibsim/ibsim_peer (the engine over the umad fabric, under umad2sim) on its own HCA. The
// peers print what they saw; these tests wait for those lines with bounded polling.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/ibsim/simulator.h"

namespace fastcm::ibsim {
namespace {

using namespace std::chrono_literals;

constexpr auto kBound = 60s;  // a scenario's whole exchange, with retries, on a loaded machine

class IbsimCm : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(sim_.start(error)) << "the InfiniBand simulator could not start: " << error;
  }

  // A server peer on `hca`, once it reports its address ("ready lid=L gid=G").
  Process server(int hca, const std::string& scenario) {
    Process p = sim_.spawn_on(hca, {FASTCM_IBSIM_PEER, "--role", "server", "--scenario", scenario});
    const std::string ready = sim_.wait_line(p, "ready ", kBound);
    EXPECT_FALSE(ready.empty()) << "the server did not start:\n" << Simulator::output(p);
    const std::size_t lid = ready.find("lid="), gid = ready.find("gid=");
    if (lid != std::string::npos && gid != std::string::npos) {
      target_lid_ = ready.substr(lid + 4, ready.find(' ', lid) - lid - 4);
      target_gid_ = ready.substr(gid + 4, 32);
    }
    return p;
  }

  Process client(int hca, const std::string& scenario, const std::string& lid = {}) {
    return sim_.spawn_on(hca, {FASTCM_IBSIM_PEER, "--role", "client", "--scenario", scenario, "--target-lid",
                               lid.empty() ? target_lid_ : lid, "--target-gid", target_gid_});
  }

  // Waits for the client's exit and expects status 0; returns its output.
  std::string finish(Process& p) {
    EXPECT_TRUE(sim_.wait_exit(p, kBound)) << "the client did not finish:\n" << Simulator::output(p);
    const std::string out = Simulator::output(p);
    EXPECT_EQ(p.exit_status, 0) << out;
    return out;
  }
  // Stops the server and expects a clean exit (nothing leaked); returns its output.
  std::string stop(Process& p) {
    EXPECT_TRUE(sim_.terminate(p, kBound)) << "the server did not stop:\n" << Simulator::output(p);
    const std::string out = Simulator::output(p);
    EXPECT_EQ(p.exit_status, 0) << out;
    EXPECT_NE(out.find("leaked_mads=0"), std::string::npos) << out;
    return out;
  }
  // A server on Hca2 and a client on Hca3 run their scenarios; each side's output must hold the
  // given lines, and the server must stop clean.
  void exchange(const std::string& server_scenario, const std::string& client_scenario,
                const std::vector<std::string>& client_lines, const std::vector<std::string>& server_lines = {}) {
    Process s = server(2, server_scenario);
    Process c = client(3, client_scenario);
    const std::string client_out = finish(c);
    for (const std::string& line : client_lines) expect_has(client_out, line);
    const std::string server_out = stop(s);
    for (const std::string& line : server_lines) expect_has(server_out, line);
  }

  static void expect_has(const std::string& out, const std::string& line) {
    EXPECT_NE(out.find(line), std::string::npos) << "expected \"" << line << "\" in:\n" << out;
  }

  Simulator sim_;
  std::string target_lid_;
  std::string target_gid_;
};

TEST_F(IbsimCm, ConnectAcceptAndClientDisconnects) {
  Process s = server(2, "accept");
  Process c = client(3, "connect");
  const std::string out = finish(c);
  expect_has(out, "rx_event_fd=-1");  // umad2sim's fd: the bounded-poll path
  expect_has(out, "rep private=77656c636f6d65");  // "welcome"
  expect_has(out, "event drep_received");
  expect_has(out, "event timewait_exit");
  EXPECT_FALSE(sim_.wait_line(s, "disconnected 1", kBound).empty()) << Simulator::output(s);
  const std::string sout = stop(s);
  expect_has(sout, "req private=68656c6c6f");  // "hello"
  expect_has(sout, "established");
  expect_has(sout, "event dreq_received");
}

TEST_F(IbsimCm, ServerDisconnectsAndBothSidesPassTimeWait) {
  Process s = server(2, "server-dreq");
  Process c = client(3, "passive-dreq");
  const std::string out = finish(c);
  expect_has(out, "event dreq_received");
  expect_has(out, "event timewait_exit");
  EXPECT_FALSE(sim_.wait_line(s, "disconnected 1", kBound).empty()) << Simulator::output(s);
  const std::string sout = stop(s);
  expect_has(sout, "event drep_received");
}

TEST_F(IbsimCm, ConsumerRejectCarriesPrivateData) {
  exchange("reject", "connect", {"rej reason=28 ari= private=6e6f207468616e6b73"});  // "no thanks"
}

TEST_F(IbsimCm, NoListenIsRejectedWithInvalidServiceId) {
  exchange("idle", "connect", {"rej reason=8 "});
}

TEST_F(IbsimCm, WrongGidIsRejectedWithTheServersGidInTheAri) {
  Process s = server(2, "accept");
  Process c = client(3, "wrong-gid");
  expect_has(finish(c), "rej reason=12 ari=" + target_gid_);
  stop(s);
}

TEST_F(IbsimCm, SlowServerSendsMraThenAccepts) {
  exchange("slow", "connect", {"mra service_timeout=20", "event rep_received", "event timewait_exit"});
}

TEST_F(IbsimCm, ReqToAPortNobodyListensOnTimesOut) {
  const std::string lid = sim_.lid_of(6);  // Hca6 runs nothing
  ASSERT_FALSE(lid.empty());
  target_gid_ = std::string(32, '0');       // unused: the path has no GRH
  Process c = client(3, "connect", lid);
  const std::string out = finish(c);
  expect_has(out, "event req_error");
  expect_has(out, "req_retried=3");
  EXPECT_EQ(out.find("failed_sends=0 "), std::string::npos) << "ibsim returns undeliverable sends:\n" << out;
}

TEST_F(IbsimCm, DuplicateReqIsAnsweredWithTheRepSent) {
  exchange("accept", "duplicate", {"duplicate_rep identical=1"}, {"req_duplicate=1 rep_retried=1"});
}

TEST_F(IbsimCm, SidrRequestIsAnswered) {
  exchange("sidr", "sidr", {"sidr_rep status=0 qpn=0x4242 qkey=0x12345678"});
}

TEST_F(IbsimCm, LapIsAnsweredWithApr) {
  exchange("accept", "lap", {"apr status=0", "event timewait_exit"}, {"event lap_received"});
}

TEST_F(IbsimCm, ClassPortInfoGetIsAnswered) {
  // CapabilityMask: RC (bit 9), UC (12) and SIDR (13); the CM's part of the TID comes back.
  exchange("idle", "cpi", {"get_resp tid_low=0x5151 class_version=2 capability_mask=0x3200"});
}

TEST_F(IbsimCm, OneListenServesClientsOnTwoHcasAtOnce) {
  Process s = server(2, "accept");
  Process c1 = client(3, "connect");
  Process c2 = client(4, "connect");
  expect_has(finish(c1), "event timewait_exit");
  expect_has(finish(c2), "event timewait_exit");
  EXPECT_FALSE(sim_.wait_line(s, "disconnected 2", kBound).empty()) << Simulator::output(s);
  stop(s);
}

}  // namespace
}  // namespace fastcm::ibsim
