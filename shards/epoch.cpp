// GCC's TSan build warns (-Wtsan, an error here) that the seq_cst fence inside DPDK's inline
// rte_rcu_qsbr_thread_online() is not modelled. TSan needs no fence here: what orders a reader's
// reads before a free is the release/acquire pair of Epoch::acquire_readers().
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif

#include "shards/epoch.h"

#include <rte_errno.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring_elem.h>

#include <cassert>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "runtime/checked_capacity.h"

namespace fastcm::shards {
namespace {

// rte_rcu_qsbr and its per-reader counters are cache-line aligned.
constexpr std::align_val_t kVariableAlign{RTE_CACHE_LINE_SIZE};

static_assert(DeferQueue::kMaxNameLength + 1 == RTE_RING_NAMESIZE);

// The queue's name, as its ring takes it. Throws std::invalid_argument for a length out of range.
std::string ring_name(std::string_view name) {
  if (name.empty() || name.size() > DeferQueue::kMaxNameLength) {
    throw std::invalid_argument("DeferQueue name must be 1.." + std::to_string(DeferQueue::kMaxNameLength) +
                                " characters");
  }
  return std::string(name);
}

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

DeferQueue::DeferQueue(Epoch& epoch, std::uint32_t capacity, std::string_view name)
    : epoch_(epoch),
      capacity_(runtime::checked_capacity("DeferQueue", capacity, kMaxCapacity)),
      // HTS on both sides: any thread may defer and reclaim, and the peek that reclaim() needs
      // (look at the oldest entry, take it only when due) exists for HTS and single-thread rings
      // only. RING_F_EXACT_SZ: room for exactly `capacity` entries.
      ring_(ring_name(name), capacity, RING_F_EXACT_SZ | RING_F_MP_HTS_ENQ | RING_F_MC_HTS_DEQ,
            sizeof(Deferred)) {}

DeferQueue::~DeferQueue() {
  // After this wait every reader has passed a quiescent point or gone offline since each pending
  // function was deferred, so all of them are due. (One could only be left behind if a defer()
  // raced the destructor, which the contract rules out.)
  rte_rcu_qsbr_synchronize(epoch_.v_.get(), RTE_QSBR_THRID_INVALID);
  Deferred deferred{};
  while (take_oldest(deferred, false)) run(deferred);
}

bool DeferQueue::reserve() noexcept {
  std::uint32_t n = pending_.load(std::memory_order_relaxed);
  do {
    if (n >= capacity_) return false;
    // Release: partner of run()'s acquire decrement (see pending_).
  } while (!pending_.compare_exchange_weak(n, n + 1, std::memory_order_release,
                                           std::memory_order_relaxed));
  return true;
}

bool DeferQueue::defer(void (*fn)(void*), void* ctx) noexcept {
  if (!reserve()) {
    reclaim();
    if (!reserve()) return false;
  }
  // The token after the caller's unpublish: rte_rcu_qsbr_start's release increment orders it.
  Deferred deferred{rte_rcu_qsbr_start(epoch_.v_.get()), fn, ctx};
  // Cannot fail: the ring holds exactly capacity_ entries and every entry holds a reservation.
  [[maybe_unused]] const int rc = rte_ring_enqueue_elem(ring_.get(), &deferred, sizeof deferred);
  assert(rc == 0);
  return true;
}

bool DeferQueue::take_oldest(Deferred& out, bool only_if_due) noexcept {
  if (rte_ring_dequeue_bulk_elem_start(ring_.get(), &out, sizeof out, 1, nullptr) == 0) return false;
  const bool take = !only_if_due || rte_rcu_qsbr_check(epoch_.v_.get(), out.token, false) == 1;
  rte_ring_dequeue_elem_finish(ring_.get(), take ? 1 : 0);
  return take;
}

std::size_t DeferQueue::reclaim() noexcept {
  // Every shard calls this after every batch, and most find nothing queued. Relaxed: an item
  // deferred concurrently is simply reclaimed at the next call.
  if (pending_.load(std::memory_order_relaxed) == 0) return 0;
  std::size_t ran = 0;
  Deferred deferred{};
  // At most capacity_: functions deferred meanwhile by other threads wait for the next call.
  while (ran < capacity_ && take_oldest(deferred, true)) {
    run(deferred);
    ++ran;
  }
  return ran;
}

bool DeferQueue::has_room() noexcept {
  if (pending_.load(std::memory_order_relaxed) < capacity_) return true;
  reclaim();
  return pending_.load(std::memory_order_relaxed) < capacity_;
}

void DeferQueue::run(const Deferred& deferred) noexcept {
  epoch_.acquire_readers();
  // Acquire: partner of reserve()'s release increment by the deferring thread.
  pending_.fetch_sub(1, std::memory_order_acquire);
  deferred.fn(deferred.ctx);
}

}  // namespace fastcm::shards
