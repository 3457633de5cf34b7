// End-of-run checks of the stress suite: waiting (bounded) until the engines and the fabric are
// idle, proving every pooled MAD and endpoint slot came back, and summing counters.
//
// Thread contract: the test's thread, once the storm's own threads are stopped or only finishing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "fastcm/engine.h"
#include "tests/stress/probe.h"
#include "tests/stress/stress_env.h"

namespace fastcm::stress {

using Deadline = std::chrono::steady_clock::time_point;

// Waits until both engines hold no pooled MAD and nothing is in flight on the fabric; false at
// the deadline. Shards finish time-wait and deferred frees on their own, so this polls (1 ms).
bool wait_for_idle_pools(StressCluster& cluster, Deadline deadline);

// Takes every endpoint slot of `engine` (max_endpoints of them, then no_resources), and gives
// them back; retried until the deadline while slots are still held (time-wait ends on its own).
// Returns how many ids the last attempt could create, and the status that stopped it. An event
// for one of these idle endpoints is a violation in `ledger`.
struct Capacity {
  std::uint32_t created = 0;
  Status stopped_by = Status::ok;
};
Capacity measure_capacity(Engine& engine, std::uint32_t max_endpoints, Ledger& ledger,
                          Deadline deadline);
// The same for listens (service IDs from kCapacityServiceBase): max_listens fit, and not one more.
Capacity measure_listen_capacity(Engine& engine, std::uint32_t max_listens, Ledger& ledger,
                                 Deadline deadline);

// Port counters of `engine` summed over its ports.
PortCounters total_counters(const Engine& engine);

// Up to `limit` probes that are not done, described, with their engine state when it still has one.
std::string stuck_probes(ProbeArena& arena, StressCluster& cluster, std::size_t limit);

}  // namespace fastcm::stress
