// rte_rcu_qsbr_dq_* are experimental in DPDK 22.11: without this they are deprecated-declared, an
// error under -Werror. Only this file uses them.
#define ALLOW_EXPERIMENTAL_API 1
// GCC's TSan build warns (-Wtsan, an error here) that the seq_cst fence inside DPDK's inline
// rte_rcu_qsbr_thread_online() is not modelled. TSan needs no fence here: what orders a reader's
// reads before a free is the release/acquire pair of Epoch::acquire_readers().
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif

#include "shards/epoch.h"

#include <rte_errno.h>
#include <rte_rcu_qsbr.h>

#include <cassert>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

namespace fastcm::shards {
namespace {

// rte_rcu_qsbr and its per-reader counters are cache-line aligned.
constexpr std::align_val_t kVariableAlign{RTE_CACHE_LINE_SIZE};

static_assert(DeferQueue::kMaxNameLength + 1 == RTE_RCU_QSBR_DQ_NAMESIZE);

}  // namespace

void Epoch::VariableDeleter::operator()(rte_rcu_qsbr* v) const noexcept {
  ::operator delete(v, kVariableAlign);
}

Epoch::Epoch(std::uint32_t readers) : readers_(readers) {
  if (readers == 0 || readers > kMaxReaders) {
    throw std::invalid_argument("Epoch readers must be 1.." + std::to_string(kMaxReaders));
  }
  const std::size_t size = rte_rcu_qsbr_get_memsize(readers);
  v_.reset(static_cast<rte_rcu_qsbr*>(::operator new(size, kVariableAlign)));
  if (rte_rcu_qsbr_init(v_.get(), readers) != 0) {
    throw std::system_error(rte_errno, std::generic_category(), "rte_rcu_qsbr_init");
  }
  // Every reader id registered up front, so grace-period checks take DPDK's all-readers path;
  // a registered reader starts offline and delays nothing until it goes online.
  for (std::uint32_t reader = 0; reader < readers; ++reader) {
    if (rte_rcu_qsbr_thread_register(v_.get(), reader) != 0) {
      throw std::system_error(rte_errno, std::generic_category(), "rte_rcu_qsbr_thread_register");
    }
  }
}

Epoch::~Epoch() = default;

void Epoch::online(std::uint32_t reader) noexcept {
  assert(reader < readers_);
  rte_rcu_qsbr_thread_online(v_.get(), reader);
}

void Epoch::quiescent(std::uint32_t reader) noexcept {
  assert(reader < readers_);
  rte_rcu_qsbr_quiescent(v_.get(), reader);
}

void Epoch::offline(std::uint32_t reader) noexcept {
  assert(reader < readers_);
  rte_rcu_qsbr_thread_offline(v_.get(), reader);
}

void Epoch::acquire_readers() const noexcept {
  for (std::uint32_t reader = 0; reader < readers_; ++reader) {
    // Acquire: partner of the release store of this counter in rte_rcu_qsbr_quiescent() and
    // rte_rcu_qsbr_thread_offline(). The value is not needed; DPDK's check already read it.
    static_cast<void>(
        std::atomic_ref<std::uint64_t>(v_->qsbr_cnt[reader].cnt).load(std::memory_order_acquire));
  }
}

DeferQueue::DeferQueue(Epoch& epoch, std::uint32_t capacity, std::string_view name,
                       bool multi_writer)
    : epoch_(epoch), capacity_(capacity) {
  if (capacity == 0 || capacity > kMaxCapacity) {
    throw std::invalid_argument("DeferQueue capacity must be 1.." + std::to_string(kMaxCapacity));
  }
  if (name.empty() || name.size() > kMaxNameLength) {
    throw std::invalid_argument("DeferQueue name must be 1.." + std::to_string(kMaxNameLength) +
                                " characters");
  }
  const std::string ring_name(name);
  rte_rcu_qsbr_dq_parameters params{};
  params.name = ring_name.c_str();
  // Multi-writer: DPDK's RTS ring enqueue; single writer: the cheaper SP enqueue. Reclamation
  // dequeues with HTS either way.
  params.flags = multi_writer ? 0 : RTE_RCU_QSBR_DQ_MT_UNSAFE;
  params.size = capacity;
  params.esize = sizeof(Deferred);
  // Above `size`: no reclamation hidden inside the enqueue; defer() reclaims only when full and
  // callers reclaim() at their own cadence.
  params.trigger_reclaim_limit = std::numeric_limits<std::uint32_t>::max();
  params.max_reclaim_size = 0;
  params.free_fn = run_deferred;
  params.p = this;
  params.v = epoch.v_.get();
  dq_ = rte_rcu_qsbr_dq_create(&params);
  if (dq_ == nullptr) {
    throw std::system_error(rte_errno, std::generic_category(),
                            "rte_rcu_qsbr_dq_create " + ring_name);
  }
}

DeferQueue::~DeferQueue() {
  // After this wait every reader has passed a quiescent point or gone offline since each pending
  // function was deferred, so the delete below runs them all and frees the queue. (It could only
  // leave some behind if a defer() raced the destructor, which the contract rules out.)
  rte_rcu_qsbr_synchronize(epoch_.v_.get(), RTE_QSBR_THRID_INVALID);
  rte_rcu_qsbr_dq_delete(dq_);
}

bool DeferQueue::reserve() noexcept {
  std::uint32_t n = pending_.load(std::memory_order_relaxed);
  do {
    if (n >= capacity_) return false;
    // Release: partner of run_deferred()'s acquire decrement (see pending_).
  } while (!pending_.compare_exchange_weak(n, n + 1, std::memory_order_release,
                                           std::memory_order_relaxed));
  return true;
}

bool DeferQueue::defer(void (*fn)(void*), void* ctx) noexcept {
  if (!reserve()) {
    reclaim();
    if (!reserve()) return false;
  }
  Deferred deferred{fn, ctx};
  // The ring holds more than capacity_ and every item in it holds a reservation, so this cannot
  // find it full; DPDK's status is honoured all the same.
  if (rte_rcu_qsbr_dq_enqueue(dq_, &deferred) != 0) {
    pending_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

std::size_t DeferQueue::reclaim() noexcept {
  // Every shard calls this after every batch; most find nothing queued, and DPDK's reclaim of an
  // empty queue still costs a ring dequeue attempt and a debug-log call. Relaxed: an item deferred
  // concurrently is simply reclaimed at the next call.
  if (pending_.load(std::memory_order_relaxed) == 0) return 0;
  unsigned ran = 0;
  // Fails only for a null queue or a zero count, neither possible here.
  rte_rcu_qsbr_dq_reclaim(dq_, capacity_, &ran, nullptr, nullptr);
  return ran;
}

bool DeferQueue::has_room() noexcept {
  if (pending_.load(std::memory_order_relaxed) < capacity_) return true;
  reclaim();
  return pending_.load(std::memory_order_relaxed) < capacity_;
}

void DeferQueue::run_deferred(void* queue, void* element, unsigned count) noexcept {
  // DPDK 22.11 hands over one element per call (count == 1), a copy of what defer() enqueued,
  // not necessarily aligned for Deferred.
  static_cast<void>(count);
  auto* self = static_cast<DeferQueue*>(queue);
  Deferred deferred{};
  std::memcpy(&deferred, element, sizeof deferred);
  self->epoch_.acquire_readers();
  // Acquire: partner of reserve()'s release increment by the deferring thread.
  self->pending_.fetch_sub(1, std::memory_order_acquire);
  deferred.fn(deferred.ctx);
}

}  // namespace fastcm::shards
