// Application-owned EAL (DpdkRuntime::attach_hosted): main() plays an SPDK-style host that
// initialises EAL itself, after checking that attaching before that is refused.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_log.h>

#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

#include "mempool/mad_mempool.h"
#include "runtime/dpdk_runtime.h"
#include "tests/dpdk/engine_handshake.h"

namespace {

using fastcm::mempool::MadMempool;
using fastcm::shards::DpdkErrc;
using fastcm::shards::DpdkRuntime;
using fastcm::shards::DpdkStatus;

DpdkStatus g_before_init;
int g_host_init_rc = -1;
std::FILE* g_host_log = nullptr;

TEST(DpdkHosted, AttachBeforeHostInitIsNotInitialised) {
  EXPECT_EQ(g_before_init.code, DpdkErrc::not_initialized);
  EXPECT_NE(g_before_init.message.find("rte_eal_init"), std::string::npos)
      << g_before_init.message;
}

TEST(DpdkHosted, HostInitSucceedsSoAttachNeverInitialisedEal) {
  // Had attach_hosted called rte_eal_init, the host's own init would have failed with EALREADY.
  EXPECT_GE(g_host_init_rc, 0);  // the number of arguments EAL parsed
}

TEST(DpdkHosted, AttachAfterHostInitIsApplicationOwned) {
  std::unique_ptr<DpdkRuntime> runtime;
  const auto status = DpdkRuntime::attach_hosted(&runtime);
  ASSERT_TRUE(status.ok()) << status.message;
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ(runtime->mode(), DpdkRuntime::Mode::application_owned);
  runtime.reset();
  EXPECT_EQ(rte_log_get_stream(), g_host_log);  // the host's log stream is left alone
}

TEST(DpdkHosted, EngineOwnedStartIsRefusedAndLeavesHostLogAlone) {
  std::unique_ptr<DpdkRuntime> runtime;
  const auto status = DpdkRuntime::start_owned({}, &runtime);
  EXPECT_EQ(status.code, DpdkErrc::already_initialized);
  EXPECT_NE(status.message.find("attach_hosted"), std::string::npos) << status.message;
  EXPECT_EQ(runtime, nullptr);
  EXPECT_EQ(rte_log_get_stream(), g_host_log);
}

TEST(DpdkHosted, RegisteredThreadUsesAPoolOnTheHostsEal) {
  std::unique_ptr<DpdkRuntime> runtime;
  ASSERT_TRUE(DpdkRuntime::attach_hosted(&runtime).ok());
  std::unique_ptr<MadMempool> pool;
  const auto status = MadMempool::create(*runtime, {"hosted", 63, 8}, &pool);
  ASSERT_TRUE(status.ok()) << status.message;
  unsigned lcore = LCORE_ID_ANY;
  bool got = false;
  std::thread worker([&] {
    if (!runtime->register_thread().ok()) return;
    lcore = rte_lcore_id();
    fastcm::engine::MadBuf* buf = pool->get();
    got = buf != nullptr;
    fastcm::engine::release(*pool, buf);
    runtime->unregister_thread();
  });
  worker.join();
  EXPECT_NE(lcore, LCORE_ID_ANY);
  EXPECT_TRUE(got);
  EXPECT_EQ(pool->in_use(), 0U);
}

// The sharded engine on the host's EAL: its threads register as lcores of the host's EAL.
TEST(DpdkHosted, EngineRunsOnTheApplicationsEal) {
  fastcm::test::expect_worker_handshake(fastcm::EalOwner::application);
}

// An engine told it owns EAL cannot start it in a process whose host already did.
TEST(DpdkHosted, EngineOwnedEalIsRefusedWhenTheHostInitialisedIt) {
  fastcm::SteadyClock clock;
  fastcm::loopback::LoopbackFabric fabric(fastcm::loopback::LoopbackConfig::two_hcas(1), clock);
  EXPECT_EQ(fastcm::Engine::create(fabric.hca(0), clock, fastcm::EngineConfig{.eal = fastcm::EalOwner::engine}),
            nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  {
    std::unique_ptr<DpdkRuntime> runtime;
    g_before_init = DpdkRuntime::attach_hosted(&runtime);
  }
  // The host's own EAL set-up, as an SPDK-style application would do it.
  g_host_log = stderr;
  rte_openlog_stream(g_host_log);
  std::string args[] = {"host", "--no-huge", "--no-shconf", "--no-pci", "--no-telemetry",
                        "-m", "64", "-l", "0", "--log-level=error"};
  char* argv_eal[std::size(args)];
  for (std::size_t i = 0; i < std::size(args); ++i) argv_eal[i] = args[i].data();
  g_host_init_rc = rte_eal_init(static_cast<int>(std::size(args)), argv_eal);
  const int rc = RUN_ALL_TESTS();
  rte_eal_cleanup();
  return rc;
}
