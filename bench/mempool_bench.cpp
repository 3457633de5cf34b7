// Getting and returning one MAD buffer: MadMempool (rte_mempool with per-lcore caches) against
// malloc/free and new/delete of the same MadBuf size, from 1 and 2 threads at once.
//
// Each iteration takes one buffer, touches its first byte (so the allocator cannot elide the
// pair) and gives it back. malloc gets sizeof(MadBuf) raw bytes (16-byte aligned only); new goes
// through the 64-byte-aligned operator new and MadBuf's constructor, which zeroes the MAD (`mad{}`):
// what a new-based pool would pay on every get. Every benchmark thread registers with DPDK (an
// lcore id, hence a mempool cache) for the mempool cases, as the engine's shard threads do;
// registration happens outside the timed loop. CPU time is the figure to read: the machine is shared and the two
// threads may share one core.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "mempool/mad_mempool.h"
#include "runtime/dpdk_runtime.h"

namespace {

using fastcm::engine::MadBuf;
using fastcm::mempool::MadMempool;

// Started once in main() before any benchmark runs (EAL initialises once per process); the pool
// is created on first use and kept for the process.
std::unique_ptr<fastcm::shards::DpdkRuntime> g_runtime;
std::unique_ptr<MadMempool> g_pool;

void BM_MadMempool(benchmark::State& state) {
  if (!g_runtime->register_thread().ok()) {
    state.SkipWithError("no lcore id for this thread");
    return;
  }
  for (auto _ : state) {
    MadBuf* buf = g_pool->get();
    if (buf == nullptr) {
      state.SkipWithError("pool exhausted");
      break;
    }
    buf->packet.mad[0] = 1;
    benchmark::DoNotOptimize(buf);
    fastcm::engine::release(*g_pool, buf);
  }
  g_runtime->unregister_thread();
}

void BM_Malloc(benchmark::State& state) {
  for (auto _ : state) {
    auto* buf = static_cast<MadBuf*>(std::malloc(sizeof(MadBuf)));
    if (buf == nullptr) {
      state.SkipWithError("malloc failed");
      break;
    }
    buf->packet.mad[0] = 1;
    benchmark::DoNotOptimize(buf);
    std::free(buf);
  }
}

void BM_New(benchmark::State& state) {
  for (auto _ : state) {
    auto* buf = new MadBuf;
    buf->packet.mad[0] = 1;
    benchmark::DoNotOptimize(buf);
    delete buf;
  }
}

BENCHMARK(BM_MadMempool)->Threads(1)->Threads(2);
BENCHMARK(BM_Malloc)->Threads(1)->Threads(2);
BENCHMARK(BM_New)->Threads(1)->Threads(2);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const auto started = fastcm::shards::DpdkRuntime::start_owned({}, &g_runtime);
  if (!started.ok()) {
    std::fprintf(stderr, "EAL did not start: %s\n", started.message.c_str());
    return 1;
  }
  // The engine's default shape: 8191 buffers, a 64-buffer cache per lcore.
  const auto created = MadMempool::create(*g_runtime, {"bench_mad", 8191, 64}, &g_pool);
  if (!created.ok()) {
    std::fprintf(stderr, "pool not created: %s\n", created.message.c_str());
    return 1;
  }
  benchmark::AddCustomContext("sizeof_MadBuf", std::to_string(sizeof(MadBuf)));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_pool.reset();
  g_runtime.reset();
  return 0;
}
