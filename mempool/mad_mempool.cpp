#include "mempool/mad_mempool.h"

#include <rte_errno.h>
#include <rte_mempool.h>

#include <new>
#include <type_traits>

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
  // Flags 0: multi-producer/multi-consumer "ring_mp_mc" ops (the mempool_ring driver, which the
  // shared-library EAL loads from its PMD directory).
  rte_mempool* pool = rte_mempool_create(config.name.c_str(), config.capacity,
                                         sizeof(engine::MadBuf), config.cache_size, 0, nullptr,
                                         nullptr, construct_buf, nullptr, SOCKET_ID_ANY, 0);
  if (pool == nullptr) {
    return error(DpdkErrc::pool_create_failed,
                 "rte_mempool_create(" + config.name + "): " + rte_strerror(rte_errno));
  }
  out->reset(new (std::nothrow) MadMempool(pool, config.capacity));
  if (*out == nullptr) {
    rte_mempool_free(pool);
    return error(DpdkErrc::pool_create_failed, "out of memory for the MadMempool object");
  }
  return {};
}

MadMempool::~MadMempool() { rte_mempool_free(pool_); }

engine::MadBuf* MadMempool::get() noexcept {
  void* obj = nullptr;
  if (rte_mempool_get(pool_, &obj) != 0) return nullptr;
  auto* buf = static_cast<engine::MadBuf*>(obj);
  // Pairs with the acq_rel decrement of engine::release() that gave the buffer back, so the
  // previous owner's accesses happen-before ours in the C++ model itself, not only through the
  // ring's DPDK barriers (which TSan cannot see). A plain load on x86.
  (void)buf->refs.load(std::memory_order_acquire);
  buf->refs.store(1, std::memory_order_relaxed);  // the caller is the only holder
  return buf;
}

std::uint32_t MadMempool::in_use() const noexcept { return rte_mempool_in_use_count(pool_); }

void MadMempool::put(engine::MadBuf* buf) noexcept { rte_mempool_put(pool_, buf); }

}  // namespace fastcm::mempool
