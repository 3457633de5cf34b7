// Engine-owned EAL (EalOwner::engine): the first engine of the process starts EAL without
// hugepages, later ones reuse it, and the caller keeps its CPU affinity (EAL pins the thread that
// initializes it, and threads created afterwards would inherit the pin).
#include <gtest/gtest.h>
#include <sched.h>

#include "tests/dpdk/engine_handshake.h"

namespace fastcm::test {
namespace {

cpu_set_t affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return set;
}

TEST(EngineOwnedEal, ApplicationOwnedIsRefusedWhileNoEalIsUp) {
  SteadyClock clock;
  loopback::LoopbackFabric fabric(loopback::LoopbackConfig::two_hcas(1), clock);
  EXPECT_EQ(Engine::create(fabric.hca(0), clock, EngineConfig{.eal = EalOwner::application}), nullptr);
}

TEST(EngineOwnedEal, FirstEngineStartsEalAndTheCallerKeepsItsAffinity) {
  const cpu_set_t before = affinity();
  SteadyClock clock;
  loopback::LoopbackFabric fabric(loopback::LoopbackConfig::two_hcas(1), clock);
  auto first = Engine::create(fabric.hca(0), clock, EngineConfig{.shards = 2, .max_endpoints = 64});
  ASSERT_NE(first, nullptr);
  const cpu_set_t after = affinity();
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  auto second = Engine::create(fabric.hca(1), clock, EngineConfig{.shards = 2, .max_endpoints = 64});
  EXPECT_NE(second, nullptr);  // reuses the EAL the first one started
}

TEST(EngineOwnedEal, WorkersConnectOnTheEngineOwnedEal) { expect_worker_handshake(EalOwner::engine); }

}  // namespace
}  // namespace fastcm::test
