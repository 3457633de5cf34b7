// A MadPool on a DPDK rte_mempool, shared by the sharded engine's threads.
//
// With PoolSharing::threads every thread may get and put at once; a thread registered with
// DpdkRuntime::register_thread() gets a per-lcore cache (no shared-ring access for most
// operations), an unregistered one goes straight to the pool's ring. The pool holds a fixed
// number of buffers allocated once at creation; exhaustion returns null and never allocates.
// Buffers parked in one lcore's cache are not reachable from other lcores, so size `capacity` for
// the working set plus up to 1.5 x cache_size per registered lcore that gets or puts
// (PoolSharing::one_at_a_time: plus 1.5 x cache_size once, for the pool's own cache).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/mad_buf.h"
#include "mempool/mad_accounts.h"
#include "runtime/dpdk_runtime.h"

struct rte_mempool;
struct rte_mempool_cache;

namespace fastcm::mempool {

// Who gets and puts, which picks the pool ring's sync mode (DPDK's mempool_ring driver).
enum class PoolSharing : std::uint8_t {
  // Any threads at once (Threading::workers): "ring_mt_rts", relaxed tail sync. On the classic
  // MP/MC ring each put (get) waits until every earlier one has moved the tail, in order, so a
  // thread preempted inside its put stalls every other put for a time slice; on oversubscribed
  // cores that turned mass frees into CM retransmission storms. With RTS nobody waits for an
  // earlier thread: the last one inside moves the tail (a put waits only while the threads inside
  // hold more than 1/8 of the ring), so a preempted thread delays the visibility of its own
  // buffers, not the others' calls. HTS admits one thread at a time: preemption stalls everyone.
  threads,
  // One thread at a time, each hand-over ordered by the caller (Threading::caller, where the
  // application serializes every engine call): "ring_sp_sc", no atomic read-modify-write, and one
  // cache of cache_size owned by the pool (not per lcore: the caller may be an unregistered
  // thread, or a different thread from call to call), so get and put are array operations.
  one_at_a_time,
};

struct MadMempoolConfig {
  std::string name;               // unique among the process's rte_mempools, < 26 characters
  std::uint32_t capacity = 8191;  // buffers; 2^n - 1 uses the ring best
  std::uint32_t cache_size = 64;  // per-lcore cache, 0 .. 512 and at most capacity / 1.5
  PoolSharing sharing = PoolSharing::threads;
  // Where a returned buffer's credit goes back (its MadRef::account tag); null: no buffer is ever
  // charged. Must outlive the pool.
  MadAccounts* accounts = nullptr;
};

class MadMempool final : public engine::MadPool {
 public:
  // Creates the pool in EAL memory with the ring ops `config.sharing` names, every buffer
  // allocated and constructed. Thread: any thread. Ownership: `*out` owns the pool; `runtime`
  // must outlive it. Errors: invalid_argument for a bad capacity, cache size or name length;
  // pool_create_failed when DPDK refuses (name taken, EAL memory exhausted, ring ops not
  // registered: an application EAL without the mempool_ring driver), with DPDK's error text.
  [[nodiscard]] static shards::DpdkStatus create(const shards::DpdkRuntime& runtime,
                                                 const MadMempoolConfig& config,
                                                 std::unique_ptr<MadMempool>* out) noexcept;

  // Frees the pool. Every buffer must have been returned and no thread may use it any more.
  ~MadMempool() override;

  // A buffer with one reference, charged to nothing (the receive reserve), or null when every
  // buffer is out. Any other account is null here: AccountedMadPool charges them (its credits,
  // then a buffer from this pool). Thread: any (one at a time with PoolSharing::one_at_a_time),
  // and so for releasing a buffer, whose credit (if any) goes back to config.accounts.
  using engine::MadPool::get;
  [[nodiscard]] engine::MadBuf* get(engine::MadAccount account) noexcept override;
  // Handshakes are charged by AccountedMadPool; this pool has no credits to hold them.
  [[nodiscard]] bool room_for_handshake() const noexcept override { return false; }
  // Buffers handed out and not yet returned, from rte_mempool_in_use_count: exact while no get or
  // put runs, a snapshot otherwise (it sums the lcore caches without stopping their owners). An
  // exact shared counter would put one contended atomic on every get and put of every shard.
  // Thread: any; with PoolSharing::one_at_a_time, in turn with get and put (it reads the owned
  // cache's length).
  [[nodiscard]] std::uint32_t in_use() const noexcept override;

  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }

 private:
  friend class AccountedMadPool;

  MadMempool(rte_mempool* pool, rte_mempool_cache* owned_cache, std::uint32_t capacity, MadAccounts* accounts) noexcept
      : pool_(pool), owned_cache_(owned_cache), capacity_(capacity), accounts_(accounts) {}
  void put(engine::MadBuf* buf) noexcept override;
  // The owned cache, else the calling lcore's (null for an unregistered thread or cache_size 0).
  [[nodiscard]] rte_mempool_cache* cache() const noexcept;

  rte_mempool* pool_;
  rte_mempool_cache* owned_cache_;  // PoolSharing::one_at_a_time with a cache, else null
  std::uint32_t capacity_;
  MadAccounts* accounts_;
};

// One shard's view of the engine's pool: get(sent / kept / answer) takes a credit of the shard's
// account first (none left: null, nothing taken), get(receive) charges nothing. The buffer's tag
// sends the credit back whoever returns it. Thread: as MadMempool; the charged gets, the kept
// credit's calls (reserve_kept .. return_spare_kept) and room_for_handshake from the shard's thread
// (its protocol), where the shard's credits are taken and its spare is held.
class AccountedMadPool final : public engine::MadPool {
 public:
  AccountedMadPool(MadMempool& pool, MadAccounts& accounts, std::uint32_t shard) noexcept
      : pool_(pool), accounts_(accounts), shard_(shard) {}

  using engine::MadPool::get;
  [[nodiscard]] engine::MadBuf* get(engine::MadAccount account) noexcept override;
  [[nodiscard]] bool room_for_handshake() const noexcept override {
    return accounts_.room_for_handshake(shard_, spare_kept_ ? 1 : 0);
  }
  // The shard's handshake credits taken now (sent + kept); between two received MADs of a burst,
  // the spare kept credit (below) is among them.
  [[nodiscard]] std::uint32_t in_use() const noexcept override;

  // A received MAD may stay referenced after its handling (kept by an endpoint, an event queue or
  // the application): before handling, the shard takes a kept credit for it (false: none left, the
  // MAD must not be handled), and afterwards charges the buffer with it or gives it back. A credit
  // given back stays as the spare for the next MAD until return_spare_kept(), which the shard
  // calls once per burst: most MADs are not kept, and two atomic updates of a shared counter per
  // MAD become two per burst.
  [[nodiscard]] bool reserve_kept() noexcept {
    if (spare_kept_) {
      spare_kept_ = false;
      return true;
    }
    return accounts_.take(shard_, engine::MadAccount::kept);
  }
  // `buf` (a receive buffer the caller holds a reference on) takes the reserved credit.
  void charge_kept(engine::MadBuf& buf) noexcept { buf.account = MadAccounts::tag(shard_, engine::MadAccount::kept); }
  // Undoes charge_kept(buf): `buf` (still referenced by the caller) is a receive buffer again and
  // the reserved credit is the caller's to charge or cancel.
  void uncharge_kept(engine::MadBuf& buf) noexcept {
    buf.account = MadAccounts::tag(shard_, engine::MadAccount::receive);
  }
  // The reserved credit becomes the spare.
  void cancel_kept() noexcept { spare_kept_ = true; }
  // Gives the spare back, if there is one.
  void return_spare_kept() noexcept {
    if (!spare_kept_) return;
    spare_kept_ = false;
    accounts_.give(MadAccounts::tag(shard_, engine::MadAccount::kept));
  }

 private:
  void put(engine::MadBuf* buf) noexcept override { pool_.put(buf); }

  MadMempool& pool_;
  MadAccounts& accounts_;
  std::uint32_t shard_;
  bool spare_kept_ = false;  // the shard's thread only
};

}  // namespace fastcm::mempool
