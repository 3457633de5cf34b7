#include "bench/fastcm_bench/leak_check.h"

#include <atomic>
#include <thread>
#include <vector>

namespace fastcm::bench {

namespace {

void ignore_event(const Event&, void*) {}

std::uint64_t unavailable_now(Engine& engine, std::uint32_t max_endpoints, std::uint32_t shards) {
  // Each create_id from outside the engine is a call handed to a shard and waited for; one
  // thread per shard keeps every shard busy instead of waking one at a time.
  const std::uint32_t threads = shards;
  std::vector<std::vector<Id>> ids(threads);
  std::atomic<std::uint32_t> taken{0};  // relaxed: only caps the total
  const Delivery delivery{.handler = &ignore_event};
  std::vector<std::thread> creators;
  for (std::uint32_t t = 0; t < threads; ++t) {
    ids[t].reserve(max_endpoints / threads + 1);
    creators.emplace_back([&, t] {
      Id id;
      while (taken.fetch_add(1, std::memory_order_relaxed) < max_endpoints &&
             engine.create_id(delivery, nullptr, id) == Status::ok) {
        ids[t].push_back(id);
      }
    });
  }
  // Every creator joins before any endpoint is destroyed, so all that were taken exist at once and
  // the engine's endpoint high-water mark reaches the whole table.
  for (std::thread& creator : creators) creator.join();
  std::uint64_t created = 0;
  for (const std::vector<Id>& taken_by_one : ids) {
    created += taken_by_one.size();
    for (const Id id : taken_by_one) (void)engine.destroy(id);
  }
  return max_endpoints - created;
}

// Calls count() until it returns 0 or `bound` has passed, `interval` apart; returns its last value.
template <typename Count>
std::uint64_t settled_count(Count count, std::chrono::steady_clock::duration bound,
                            std::chrono::steady_clock::duration interval) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  for (;;) {
    const std::uint64_t n = count();
    if (n == 0 || std::chrono::steady_clock::now() >= give_up) return n;
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace

std::uint64_t unavailable_endpoints(Engine& engine, std::uint32_t max_endpoints,
                                    std::uint32_t shards,
                                    std::chrono::steady_clock::duration timewait) {
  return settled_count([&] { return unavailable_now(engine, max_endpoints, shards); }, timewait,
                       std::chrono::milliseconds(50));
}

LeakCheck check_leaks(Rig& rig, const RigSizing& sizing, std::uint32_t shards) {
  LeakCheck c;
  const auto start = std::chrono::steady_clock::now();
  const auto check = [&](Engine& engine) {
    // A peer on another fabric may send at any moment (a late retransmission or duplicate), and a
    // MAD holds a credit while its shard handles it: a leak is a count that stays.
    c.leaked_mads += settled_count([&] { return engine.mad_buffers_in_use(); },
                                   rig.timewait_bound(), std::chrono::milliseconds(1));
    c.leaked_ceps +=
        unavailable_endpoints(engine, sizing.max_endpoints, shards, rig.timewait_bound());
  };
  if (rig.has_server()) check(rig.server());
  if (rig.has_client()) check(rig.client());
  c.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

}  // namespace fastcm::bench
