#include "mempool/mad_mempool.h"

#include <rte_errno.h>
#include <rte_mempool.h>

#include <new>
#include <type_traits>

#include "runtime/thread_sanitizer.h"

namespace fastcm::mempool {
namespace {

static_assert(std::is_trivially_destructible_v<engine::MadBuf>,
              "rte_mempool_free releases the elements without running destructors");
static_assert(alignof(engine::MadBuf) <= RTE_CACHE_LINE_SIZE,
              "rte_mempool aligns elements to a cache line");

// Constructs every element once at creation, so get() only has to reset the reference count.
void construct_buf(rte_mempool* /*pool*/, void* /*arg*/, void* obj, unsigned /*index*/) {
  new (obj) engine::MadBuf{};
}

// The mempool_ring driver's ops for each sharing mode (see PoolSharing).
const char* ring_ops(PoolSharing sharing) noexcept {
  return sharing == PoolSharing::threads ? "ring_mt_rts" : "ring_sp_sc";
}

shards::DpdkStatus error(shards::DpdkErrc code, std::string message) {
  return shards::DpdkStatus{code, std::move(message)};
}

}  // namespace

shards::DpdkStatus MadMempool::create(const shards::DpdkRuntime& /*runtime*/,
                                      const MadMempoolConfig& config,
                                      std::unique_ptr<MadMempool>* out) noexcept {
  using shards::DpdkErrc;
  if (config.capacity == 0) return error(DpdkErrc::invalid_argument, "capacity must be > 0");
  if (config.name.empty() || config.name.size() >= RTE_MEMPOOL_NAMESIZE) {
    return error(DpdkErrc::invalid_argument, "pool name must have 1 to " +
                                                 std::to_string(RTE_MEMPOOL_NAMESIZE - 1) +
                                                 " characters");
  }
  // rte_mempool's own limits, checked here so the error names them.
  if (config.cache_size > RTE_MEMPOOL_CACHE_MAX_SIZE ||
      static_cast<std::uint64_t>(config.cache_size) * 3 > static_cast<std::uint64_t>(config.capacity) * 2) {
    return error(DpdkErrc::invalid_argument,
                 "cache_size must be at most 512 and at most capacity / 1.5");
  }
  const bool shared = config.sharing == PoolSharing::threads;
  // rte_mempool_create picks its ring ops from the flags only (classic MP/MC at best); the ring
  // sync mode needs the empty-create, set-ops, populate sequence. One thread at a time gets no
  // per-lcore caches: its callers may be unregistered or change, so it owns one cache instead.
  rte_mempool* pool = rte_mempool_create_empty(config.name.c_str(), config.capacity,
                                               sizeof(engine::MadBuf),
                                               shared ? config.cache_size : 0, 0, SOCKET_ID_ANY, 0);
  if (pool == nullptr) {
    return error(DpdkErrc::pool_create_failed,
                 "rte_mempool_create_empty(" + config.name + "): " + rte_strerror(rte_errno));
  }
  const char* ops = ring_ops(config.sharing);
  if (const int rc = rte_mempool_set_ops_byname(pool, ops, nullptr); rc != 0) {
    rte_mempool_free(pool);
    return error(DpdkErrc::pool_create_failed, std::string("rte_mempool_set_ops_byname(") + ops +
                                                   "): " + rte_strerror(-rc));
  }
  // Populates every element or fails (no partial pool): the capacity is exact.
  if (const int rc = rte_mempool_populate_default(pool); rc < 0) {
    rte_mempool_free(pool);
    return error(DpdkErrc::pool_create_failed,
                 "rte_mempool_populate_default(" + config.name + "): " + rte_strerror(-rc));
  }
  rte_mempool_obj_iter(pool, construct_buf, nullptr);
  rte_mempool_cache* cache = nullptr;
  if (!shared && config.cache_size > 0) {
    cache = rte_mempool_cache_create(config.cache_size, SOCKET_ID_ANY);
    if (cache == nullptr) {
      rte_mempool_free(pool);
      return error(DpdkErrc::pool_create_failed,
                   "rte_mempool_cache_create(" + config.name + "): " + rte_strerror(rte_errno));
    }
  }
  out->reset(new (std::nothrow) MadMempool(pool, cache, config.capacity, config.accounts));
  if (*out == nullptr) {
    rte_mempool_cache_free(cache);
    rte_mempool_free(pool);
    return error(DpdkErrc::pool_create_failed, "out of memory for the MadMempool object");
  }
  return {};
}

MadMempool::~MadMempool() {
  if (owned_cache_ != nullptr) {
    rte_mempool_cache_flush(owned_cache_, pool_);
    rte_mempool_cache_free(owned_cache_);
  }
  rte_mempool_free(pool_);
}

rte_mempool_cache* MadMempool::cache() const noexcept {
  return owned_cache_ != nullptr ? owned_cache_ : rte_mempool_default_cache(pool_, rte_lcore_id());
}

engine::MadBuf* MadMempool::get(engine::MadAccount account) noexcept {
  if (account != engine::MadAccount::receive) return nullptr;
  void* obj = nullptr;
  if (rte_mempool_generic_get(pool_, &obj, 1, cache()) != 0) return nullptr;
  auto* buf = static_cast<engine::MadBuf*>(obj);
  // The previous owner's accesses happen-before ours through the ring's own release/acquire pair
  // (DPDK's C11 ring ops), or program order when the buffer stayed in this thread's cache. TSan
  // cannot see inside DPDK, so its builds also pair this acquire with the acq_rel decrement of
  // engine::release() that gave the buffer back. Other builds skip the load: the count sits on a
  // cache line of its own that is cold in a buffer that went round the pool, and the load waited
  // for that miss (84% of get()'s samples), where the store below does not wait.
  if constexpr (runtime::kThreadSanitizer) (void)buf->refs.load(std::memory_order_acquire);
  buf->refs.store(1, std::memory_order_relaxed);  // the caller is the only holder
  buf->account = 0;
  return buf;
}

std::uint32_t MadMempool::in_use() const noexcept {
  // rte_mempool_in_use_count counts the per-lcore caches as available, not an owned one.
  const std::uint32_t parked = owned_cache_ != nullptr ? owned_cache_->len : 0;
  return rte_mempool_in_use_count(pool_) - parked;
}

void MadMempool::put(engine::MadBuf* buf) noexcept {
  // The last reference's acq_rel decrement (engine::release) orders the tag's write before this.
  if (accounts_ != nullptr) accounts_->give(buf->account);
  void* obj = buf;
  rte_mempool_generic_put(pool_, &obj, 1, cache());
}

engine::MadBuf* AccountedMadPool::get(engine::MadAccount account) noexcept {
  if (account == engine::MadAccount::receive) return pool_.get();
  if (!accounts_.take(shard_, account)) return nullptr;
  engine::MadBuf* buf = pool_.get();
  if (buf == nullptr) {
    accounts_.give(MadAccounts::tag(shard_, account));
    return nullptr;
  }
  buf->account = MadAccounts::tag(shard_, account);
  return buf;
}

std::uint32_t AccountedMadPool::in_use() const noexcept { return accounts_.shard_in_use(shard_); }

}  // namespace fastcm::mempool
