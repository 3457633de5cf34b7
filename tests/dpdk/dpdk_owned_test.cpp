// Engine-owned EAL (DpdkRuntime::start_owned) and the rte_mempools on it: MadMempool, and the
// PostedCallPool a shard returns its finished posted calls to. EAL initialises once per process,
// so main() starts the runtime before the tests and records what the start did.
#include <gtest/gtest.h>
#include <pthread.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <sched.h>

#include <barrier>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mempool/mad_mempool.h"
#include "runtime/dpdk_runtime.h"
#include "shards/posted_call.h"

namespace {

using fastcm::engine::MadBuf;
using fastcm::mempool::MadMempool;
using fastcm::mempool::MadMempoolConfig;
using fastcm::mempool::PoolSharing;
using fastcm::shards::DpdkErrc;
using fastcm::shards::DpdkRuntime;

struct CapturedLog {
  std::mutex mutex;
  std::string text;
};

CapturedLog g_log;
std::unique_ptr<DpdkRuntime> g_runtime;
fastcm::shards::DpdkStatus g_start_status;
cpu_set_t g_affinity_before;
cpu_set_t g_affinity_after;

void capture(void* ctx, std::string_view text) {
  auto* log = static_cast<CapturedLog*>(ctx);
  const std::lock_guard lock(log->mutex);
  log->text.append(text);
}

std::unique_ptr<MadMempool> make_pool(const std::string& name, std::uint32_t capacity,
                                      std::uint32_t cache_size,
                                      PoolSharing sharing = PoolSharing::threads) {
  std::unique_ptr<MadMempool> pool;
  const auto status = MadMempool::create(*g_runtime, {name, capacity, cache_size, sharing}, &pool);
  EXPECT_TRUE(status.ok()) << status.message;
  return pool;
}

TEST(DpdkOwned, StartSucceedsInEngineOwnedMode) {
  ASSERT_TRUE(g_start_status.ok()) << g_start_status.message;
  ASSERT_NE(g_runtime, nullptr);
  EXPECT_EQ(g_runtime->mode(), DpdkRuntime::Mode::engine_owned);
  EXPECT_GT(rte_lcore_count(), 0U);
}

TEST(DpdkOwned, CallerAffinityRestoredAfterInit) {
  ASSERT_TRUE(g_start_status.ok());
  EXPECT_TRUE(CPU_EQUAL(&g_affinity_before, &g_affinity_after))
      << "CPUs before " << CPU_COUNT(&g_affinity_before) << ", after "
      << CPU_COUNT(&g_affinity_after);
}

TEST(DpdkOwned, EalLogReachesTheSink) {
  const std::lock_guard lock(g_log.mutex);
  EXPECT_NE(g_log.text.find("EAL: "), std::string::npos) << g_log.text;
}

TEST(DpdkOwned, SecondStartIsAlreadyInitialisedNamingHostMode) {
  std::unique_ptr<DpdkRuntime> second;
  const auto status = DpdkRuntime::start_owned({}, &second);
  EXPECT_EQ(status.code, DpdkErrc::already_initialized);
  EXPECT_NE(status.message.find("attach_hosted"), std::string::npos) << status.message;
  EXPECT_EQ(second, nullptr);
}

TEST(DpdkOwned, InvalidPoolConfigIsRejected) {
  std::unique_ptr<MadMempool> pool;
  EXPECT_EQ(MadMempool::create(*g_runtime, {"bad_cap", 0, 0}, &pool).code,
            DpdkErrc::invalid_argument);
  EXPECT_EQ(MadMempool::create(*g_runtime, {"bad_cache", 63, 64}, &pool).code,
            DpdkErrc::invalid_argument);
  EXPECT_EQ(MadMempool::create(*g_runtime, {"", 63, 0}, &pool).code, DpdkErrc::invalid_argument);
  EXPECT_EQ(pool, nullptr);
}

TEST(DpdkOwned, DuplicatePoolNameFailsToCreate) {
  auto first = make_pool("dup_name", 15, 0);
  std::unique_ptr<MadMempool> second;
  const auto status = MadMempool::create(*g_runtime, {"dup_name", 15, 0}, &second);
  EXPECT_EQ(status.code, DpdkErrc::pool_create_failed);
  EXPECT_EQ(second, nullptr);
}

TEST(MadMempool, GetPutExhaustionAndInUse) {
  constexpr std::uint32_t kCapacity = 15;
  auto pool = make_pool("get_put", kCapacity, 0);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->capacity(), kCapacity);
  EXPECT_EQ(pool->in_use(), 0U);
  std::vector<MadBuf*> bufs;
  for (std::uint32_t i = 0; i < kCapacity; ++i) {
    MadBuf* buf = pool->get();
    ASSERT_NE(buf, nullptr) << i;
    EXPECT_EQ(buf->refs.load(), 1U);
    buf->packet.mad[0] = static_cast<std::uint8_t>(i);  // writable, whole element
    buf->packet.mad[255] = static_cast<std::uint8_t>(i);
    bufs.push_back(buf);
  }
  EXPECT_EQ(pool->in_use(), kCapacity);
  EXPECT_EQ(pool->get(), nullptr);  // exhausted: null, no allocation
  EXPECT_EQ(pool->in_use(), kCapacity);
  for (MadBuf* buf : bufs) fastcm::engine::release(*pool, buf);
  EXPECT_EQ(pool->in_use(), 0U);
  MadBuf* again = pool->get();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->refs.load(), 1U);
  fastcm::engine::release(*pool, again);
  EXPECT_EQ(pool->in_use(), 0U);
}

// The owned cache of a one-thread-at-a-time pool is reachable by every get: the whole capacity
// can be taken, and buffers parked in the cache do not count as in use.
TEST(MadMempool, OneAtATimePoolReachesEveryBufferThroughItsOwnCache) {
  constexpr std::uint32_t kCapacity = 63;
  auto pool = make_pool("one_at_a_time", kCapacity, 32, PoolSharing::one_at_a_time);
  ASSERT_NE(pool, nullptr);
  for (int round = 0; round < 2; ++round) {
    std::vector<MadBuf*> bufs;
    for (std::uint32_t i = 0; i < kCapacity; ++i) {
      MadBuf* buf = pool->get();
      ASSERT_NE(buf, nullptr) << "round " << round << " buffer " << i;
      EXPECT_EQ(buf->refs.load(), 1U);
      bufs.push_back(buf);
    }
    EXPECT_EQ(pool->get(), nullptr);
    EXPECT_EQ(pool->in_use(), kCapacity);
    for (MadBuf* buf : bufs) fastcm::engine::release(*pool, buf);
    EXPECT_EQ(pool->in_use(), 0U) << "round " << round;
  }
}

// Threads share a relaxed-tail-sync ring (no thread waits for a preempted one); one thread at a
// time needs no atomic read-modify-write.
TEST(MadMempool, SharingPicksTheRingSyncMode) {
  auto shared = make_pool("sync_threads", 127, 32, PoolSharing::threads);
  auto alone = make_pool("sync_alone", 127, 32, PoolSharing::one_at_a_time);
  ASSERT_NE(shared, nullptr);
  ASSERT_NE(alone, nullptr);
  const auto ops_of = [](const char* name) {
    const rte_mempool* mp = rte_mempool_lookup(name);
    return mp == nullptr ? std::string() : std::string(rte_mempool_get_ops(mp->ops_index)->name);
  };
  EXPECT_EQ(ops_of("sync_threads"), "ring_mt_rts");
  EXPECT_EQ(ops_of("sync_alone"), "ring_sp_sc");
}

TEST(MadMempool, LastReleaseReturnsTheBuffer) {
  auto pool = make_pool("release", 7, 0);
  ASSERT_NE(pool, nullptr);
  MadBuf* buf = pool->get();
  ASSERT_NE(buf, nullptr);
  fastcm::engine::retain(*buf);
  fastcm::engine::retain(*buf);
  fastcm::engine::release(*pool, buf);
  fastcm::engine::release(*pool, buf);
  EXPECT_EQ(pool->in_use(), 1U);  // one holder left
  fastcm::engine::release(*pool, buf);
  EXPECT_EQ(pool->in_use(), 0U);
  fastcm::engine::release(*pool, nullptr);  // ignored
  EXPECT_EQ(pool->in_use(), 0U);
}

// A shard reserves a kept credit before handling each received MAD. A credit the MAD did not use
// stays reserved as the spare for the next MAD, uncounted by the admission check, until the
// burst's end gives it back; a MAD that is kept takes its credit along to the buffer's last
// release.
TEST(AccountedMadPool, AnUnusedKeptCreditServesTheNextMadUntilTheBurstEnds) {
  using fastcm::engine::MadAccount;
  fastcm::mempool::MadAccounts accounts(1, {.sent = 8, .kept = 16, .answer = 2});
  std::unique_ptr<MadMempool> pool;
  ASSERT_TRUE(MadMempool::create(*g_runtime, {"kept_spare", 31, 0, PoolSharing::threads, &accounts}, &pool).ok());
  fastcm::mempool::AccountedMadPool shard_pool(*pool, accounts, 0);
  const auto kept_now = [&] { return accounts.level(0, MadAccount::kept).now; };

  ASSERT_TRUE(shard_pool.reserve_kept());
  shard_pool.cancel_kept();  // the first MAD was not kept: its credit is the spare
  EXPECT_EQ(kept_now(), 1u);
  ASSERT_TRUE(shard_pool.reserve_kept());  // the second MAD reserves the spare, no new credit
  EXPECT_EQ(kept_now(), 1u);
  MadBuf* kept = pool->get();
  ASSERT_NE(kept, nullptr);
  shard_pool.charge_kept(*kept);  // the second MAD is kept
  ASSERT_TRUE(shard_pool.reserve_kept());
  EXPECT_EQ(kept_now(), 2u);
  shard_pool.cancel_kept();

  // 14 of 16 kept credits taken, one of them the spare: the admission mark (16 / 8 = 2 credits
  // free) counts 13, so a handshake still has room; one more taken credit and it has none.
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(accounts.take(0, MadAccount::kept));
  EXPECT_EQ(kept_now(), 14u);
  EXPECT_TRUE(shard_pool.room_for_handshake());
  shard_pool.return_spare_kept();  // the burst ends
  EXPECT_EQ(kept_now(), 13u);
  EXPECT_TRUE(shard_pool.room_for_handshake());
  ASSERT_TRUE(accounts.take(0, MadAccount::kept));
  EXPECT_FALSE(shard_pool.room_for_handshake());
  shard_pool.return_spare_kept();  // no spare: nothing given
  EXPECT_EQ(kept_now(), 14u);

  for (int i = 0; i < 13; ++i) accounts.give(fastcm::mempool::MadAccounts::tag(0, MadAccount::kept));
  fastcm::engine::release(*pool, kept);  // the kept MAD's credit comes back with the buffer
  EXPECT_EQ(kept_now(), 0u);
}

// A shard gives the posted-call records it ran back at its burst's end, together: until then they
// count as taken and no poster gets them; a record beyond the batch's room gives the held ones
// back first.
TEST(FinishedCalls, HoldTheBurstsRecordsUntilTheFlushGivesThemBackTogether) {
  using fastcm::shards::FinishedCalls;
  using fastcm::shards::PostedCall;
  constexpr std::uint32_t kRecords = FinishedCalls::kCapacity + 2;
  fastcm::shards::PostedCallPool pool("finished_calls", kRecords);
  std::vector<PostedCall*> taken;
  while (PostedCall* record = pool.take()) taken.push_back(record);
  ASSERT_EQ(taken.size(), kRecords);

  FinishedCalls finished;
  finished.add(*taken[0]);
  finished.add(*taken[1]);
  EXPECT_EQ(pool.in_use(), kRecords);  // held, not yet free
  EXPECT_EQ(pool.take(), nullptr);
  finished.flush();
  EXPECT_EQ(pool.in_use(), kRecords - 2);
  finished.flush();  // nothing held: nothing given twice
  EXPECT_EQ(pool.in_use(), kRecords - 2);

  taken[0] = pool.take();
  taken[1] = pool.take();
  ASSERT_NE(taken[1], nullptr);
  for (PostedCall* record : taken) finished.add(*record);  // the 33rd add gives the first 32 back
  EXPECT_EQ(pool.in_use(), 2u);
  finished.flush();
  EXPECT_EQ(pool.in_use(), 0u);
  std::vector<PostedCall*> again;
  while (PostedCall* record = pool.take()) again.push_back(record);
  EXPECT_EQ(again.size(), kRecords);  // every record came back exactly once
  pool.give_back(again);
}

TEST(MadMempool, RegisteredThreadsGetAndPutConcurrently) {
  constexpr std::uint32_t kThreads = 3;
  constexpr std::uint32_t kPerThread = 64;
  constexpr std::uint32_t kRounds = 200;
  constexpr std::uint32_t kCapacity = 511;  // more than kThreads * (kPerThread + cache)
  auto pool = make_pool("threads", kCapacity, 32);
  ASSERT_NE(pool, nullptr);
  std::vector<std::uint32_t> lcores(kThreads, LCORE_ID_ANY);
  std::vector<std::uint64_t> failures(kThreads, 0);
  // Every thread stays registered until all are done, so no lcore id is handed over between
  // threads mid-test (EAL's lcore bookkeeping synchronises through locks TSan cannot see).
  std::barrier done(kThreads);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const bool registered = g_runtime->register_thread().ok();
      if (!registered) ++failures[t];
      lcores[t] = rte_lcore_id();
      std::vector<MadBuf*> held;
      for (std::uint32_t round = 0; round < kRounds; ++round) {
        for (std::uint32_t i = 0; i < kPerThread; ++i) {
          MadBuf* buf = pool->get();
          if (buf == nullptr || buf->refs.load(std::memory_order_relaxed) != 1) {
            ++failures[t];
            continue;
          }
          buf->packet.mad[0] = static_cast<std::uint8_t>(t);  // exclusive while held
          held.push_back(buf);
        }
        for (MadBuf* buf : held) {
          if (buf->packet.mad[0] != t) ++failures[t];
          fastcm::engine::release(*pool, buf);
        }
        held.clear();
      }
      done.arrive_and_wait();
      if (registered) g_runtime->unregister_thread();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0U) << "thread " << t;
    EXPECT_NE(lcores[t], LCORE_ID_ANY) << "thread " << t << " got no lcore id";
  }
  // Every buffer came back; rte_mempool_in_use_count counts the unregistered lcores' caches too
  // (those buffers stay there until another thread registers with that lcore id).
  EXPECT_EQ(pool->in_use(), 0U);
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  pthread_getaffinity_np(pthread_self(), sizeof(g_affinity_before), &g_affinity_before);
  fastcm::shards::DpdkOwnedConfig config;
  config.log_level = "lib.eal:info";  // so EAL's start-up lines reach the sink
  config.log = {capture, &g_log};
  g_start_status = DpdkRuntime::start_owned(config, &g_runtime);
  pthread_getaffinity_np(pthread_self(), sizeof(g_affinity_after), &g_affinity_after);
  const int rc = RUN_ALL_TESTS();
  g_runtime.reset();
  return rc;
}
