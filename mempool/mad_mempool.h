// A MadPool on a DPDK rte_mempool, shared by the sharded engine's threads.
//
// Every thread may get and put at once; a thread registered with DpdkRuntime::register_thread()
// gets a per-lcore cache (no shared-ring access for most operations), an unregistered one goes
// straight to the pool's ring. The pool holds a fixed number of buffers allocated once at
// creation; exhaustion returns null and never allocates. Buffers parked in one lcore's cache are
// not reachable from other lcores, so size `capacity` for the working set plus up to 1.5 x
// cache_size per registered lcore.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/mad_buf.h"
#include "shards/dpdk_runtime.h"

struct rte_mempool;

namespace fastcm::mempool {

struct MadMempoolConfig {
  std::string name;               // unique among the process's rte_mempools, < 26 characters
  std::uint32_t capacity = 8191;  // buffers; 2^n - 1 uses the ring best
  std::uint32_t cache_size = 64;  // per-lcore cache, 0 .. 512 and at most capacity / 1.5
};

class MadMempool final : public engine::MadPool {
 public:
  // Creates the pool in EAL memory with the default multi-producer/multi-consumer ring ops.
  // Thread: any thread. Ownership: `*out` owns the pool; `runtime` must outlive it.
  // Errors: invalid_argument for a bad capacity, cache size or name length; pool_create_failed
  // when rte_mempool_create fails (name taken, EAL memory exhausted), with rte_errno's text.
  [[nodiscard]] static shards::DpdkStatus create(const shards::DpdkRuntime& runtime,
                                                 const MadMempoolConfig& config,
                                                 std::unique_ptr<MadMempool>* out) noexcept;

  // Frees the pool. Every buffer must have been returned and no thread may use it any more.
  ~MadMempool() override;

  // A buffer with one reference, or null when every buffer is out. Thread: any.
  [[nodiscard]] engine::MadBuf* get() noexcept override;
  // Buffers handed out and not yet returned, from rte_mempool_in_use_count: exact while no get or
  // put runs, a snapshot otherwise (it sums the lcore caches without stopping their owners). An
  // exact shared counter would put one contended atomic on every get and put of every shard.
  [[nodiscard]] std::uint32_t in_use() const noexcept override;

  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }

 private:
  MadMempool(rte_mempool* pool, std::uint32_t capacity) noexcept
      : pool_(pool), capacity_(capacity) {}
  void put(engine::MadBuf* buf) noexcept override;

  rte_mempool* pool_;
  std::uint32_t capacity_;
};

}  // namespace fastcm::mempool
