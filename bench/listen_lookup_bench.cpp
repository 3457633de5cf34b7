// ListenRegistry::match(), a shard's lookup of the listen for each received REQ (and SIDR REQ),
// with 1, 16 and 256 listens of mixed masks and ports, for service IDs that hit and that miss.
//
// Listen i: mask kind i % 3 (exact, low byte wildcard, low 32 bits wildcard), port i % 3 (every
// port, port 1, port 2), and service ID (i << 32) | (i << 8) under a common top byte, so every
// listen is distinct. A hit query is built for each listen (one that listen's mask accepts, on a
// port it serves) and the loop cycles through them, averaging over the precedence order; a miss
// query has another top byte, which every mask keeps, so it scans every live listen and finds none.
//
// The registry is read as a shard reads it: one Epoch reader online for the whole run (match()
// hands out pointers valid until the reader's next quiescent point, and nothing is removed here).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "fastcm/engine.h"
#include "runtime/dpdk_runtime.h"
#include "shards/epoch.h"
#include "shards/listen_registry.h"

namespace {

using fastcm::Id;
using fastcm::ListenParams;
using fastcm::Status;
using fastcm::shards::Epoch;
using fastcm::shards::ListenRegistry;

constexpr std::uint64_t kHitTop = std::uint64_t{0x10} << 56;
constexpr std::uint64_t kMissTop = std::uint64_t{0x20} << 56;
constexpr std::uint64_t kMasks[] = {~std::uint64_t{0}, ~std::uint64_t{0xFF},
                                    ~std::uint64_t{0xFFFF'FFFF}};
constexpr std::uint32_t kQueries = 1024;  // cycled through; a power of two for the index mask

void ignore_event(const fastcm::Event&, void*) {}

struct Query {
  std::uint64_t service_id;
  std::uint8_t port;
};

ListenParams listen_params(std::uint32_t i) {
  ListenParams params;
  params.service_id = kHitTop | std::uint64_t{i} << 32 | std::uint64_t{i} << 8;
  params.service_mask = kMasks[i % 3];
  params.port = static_cast<std::uint8_t>(i % 3);
  params.backlog = 16;
  params.delivery.handler = ignore_event;
  return params;
}

// A query listen i's mask accepts (its wildcard bits changed), on a port it serves.
Query hit_query(std::uint32_t i, std::uint32_t salt) {
  const ListenParams p = listen_params(i);
  const std::uint64_t wildcard = ~p.service_mask;
  const std::uint64_t id = (p.service_id & p.service_mask) | (std::uint64_t{salt} * 0x9E37'79B9 & wildcard);
  const auto port = static_cast<std::uint8_t>(p.port == 0 ? 1 + salt % 2 : p.port);
  return {id, port};
}

void run_lookups(benchmark::State& state, bool hit) {
  const auto listens = static_cast<std::uint32_t>(state.range(0));
  Epoch epoch(1);
  {
    ListenRegistry registry(listens, epoch);
    for (std::uint32_t i = 0; i < listens; ++i) {
      Id id;
      if (registry.add(listen_params(i), id) != Status::ok) {
        state.SkipWithError("listen not added");
        return;
      }
    }
    std::vector<Query> queries(kQueries);
    for (std::uint32_t q = 0; q < kQueries; ++q) {
      queries[q] = hit ? hit_query(q % listens, q)
                       : Query{kMissTop | std::uint64_t{q} << 8, static_cast<std::uint8_t>(1 + q % 2)};
    }
    epoch.online(0);
    std::uint32_t q = 0;
    std::uint64_t found = 0;
    for (auto _ : state) {
      const Query& query = queries[q++ & (kQueries - 1)];
      const auto* listen = registry.match(query.service_id, query.port);
      benchmark::DoNotOptimize(listen);
      found += listen != nullptr ? 1 : 0;
    }
    epoch.offline(0);
    // A run whose lookups did not all hit (or all miss) as intended measured something else.
    const std::uint64_t expected = hit ? static_cast<std::uint64_t>(state.iterations()) : 0;
    if (found != expected) state.SkipWithError("lookups did not hit/miss as intended");
  }
}

void BM_ListenMatchHit(benchmark::State& state) { run_lookups(state, true); }
void BM_ListenMatchMiss(benchmark::State& state) { run_lookups(state, false); }

BENCHMARK(BM_ListenMatchHit)->ArgName("listens")->Arg(1)->Arg(16)->Arg(256);
BENCHMARK(BM_ListenMatchMiss)->ArgName("listens")->Arg(1)->Arg(16)->Arg(256);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // The registry's retire queue is a DeferQueue, an rte_ring: EAL starts once, before any run.
  std::unique_ptr<fastcm::shards::DpdkRuntime> runtime;
  const auto started = fastcm::shards::DpdkRuntime::start_owned({}, &runtime);
  if (!started.ok()) {
    std::fprintf(stderr, "EAL did not start: %s\n", started.message.c_str());
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
