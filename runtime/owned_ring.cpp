#include "runtime/owned_ring.h"

#include <rte_ring.h>

#include <new>
#include <system_error>

namespace fastcm::runtime {

namespace {
constexpr std::align_val_t kRingAlign{64};  // rte_ring's cache-line alignment
}  // namespace

void OwnedRing::Free::operator()(rte_ring* ring) const noexcept { ::operator delete(ring, kRingAlign); }

OwnedRing::OwnedRing(const std::string& name, unsigned count, unsigned flags,
                     std::size_t element_size) {
  // With RING_F_EXACT_SZ the storage is the next power of two above count, which is what the
  // memory size must be computed for.
  const unsigned storage = (flags & RING_F_EXACT_SZ) != 0 ? rte_align32pow2(count + 1) : count;
  const ssize_t size = rte_ring_get_memsize_elem(static_cast<unsigned>(element_size), storage);
  if (size < 0) {
    throw std::system_error(static_cast<int>(-size), std::generic_category(), "ring size " + name);
  }
  ring_.reset(static_cast<rte_ring*>(::operator new(static_cast<std::size_t>(size), kRingAlign)));
  if (const int rc = rte_ring_init(ring_.get(), name.c_str(), count, flags); rc != 0) {
    throw std::system_error(-rc, std::generic_category(), "rte_ring_init " + name);
  }
}

std::uint32_t OwnedRing::count() const noexcept {
  // As DPDK's own HTS code loads them. The consumer tail first, with acquire (partner: the
  // dequeue's release store of that tail): the producer tail that dequeue had loaded then
  // happens-before our load of it, so ours is never behind the consumer tail and the difference
  // never wraps. It may count slots freed and refilled in between, which callers clamp. The
  // producer tail with acquire too (partner: the enqueue's release store of its tail).
  const std::uint32_t cons = __atomic_load_n(&ring_->cons.tail, __ATOMIC_ACQUIRE);
  const std::uint32_t prod = __atomic_load_n(&ring_->prod.tail, __ATOMIC_ACQUIRE);
  return prod - cons;
}

}  // namespace fastcm::runtime
