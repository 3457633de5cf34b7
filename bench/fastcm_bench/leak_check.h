// The leak check that ends every run: MADs an engine still holds and endpoints create_id can no
// longer give once the teardown has drained.
#pragma once

#include <chrono>
#include <cstdint>

#include "bench/fastcm_bench/rig.h"
#include "fastcm/engine.h"

namespace fastcm::bench {

struct LeakCheck {
  std::uint64_t leaked_mads = 0;  // mad_buffers_in_use() after the teardown, the run's engines
  std::uint64_t leaked_ceps = 0;  // endpoints create_id could no longer give, the run's engines
  double wall_s = 0;
};

// Endpoints of `max_endpoints` that create_id cannot give on `engine`: creates as many idle
// endpoints as it can (one thread per shard, `shards` threads), then destroys them. Endpoints
// still in time-wait count as unavailable: when the count is not 0 and `timewait` is not zero,
// the check is made again every 50 ms until it is 0 or `timewait` has passed (time-wait is two
// packet life times plus the peer's ACK delay, which a peer on another fabric sets). Thread
// contract: main thread; blocks for the check (seconds for a million endpoints); the engine's
// own threads serve the calls.
[[nodiscard]] std::uint64_t unavailable_endpoints(Engine& engine, std::uint32_t max_endpoints,
                                                  std::uint32_t shards,
                                                  std::chrono::steady_clock::duration timewait);

// MADs the rig's engines still hold, and the endpoints create_id can no longer give on each
// (waiting up to rig.timewait_bound() for MADs a peer sent late and for time-wait to end). Main
// thread, after the teardown.
[[nodiscard]] LeakCheck check_leaks(Rig& rig, const RigSizing& sizing, std::uint32_t shards);

}  // namespace fastcm::bench
