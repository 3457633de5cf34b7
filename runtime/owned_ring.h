// A DPDK rte_ring in memory of our own: rte_ring_init on a 64-byte-aligned block this object
// owns, instead of rte_ring_create, which reserves a memzone and so needs an initialized EAL.
// rte_ring_init needs none, so the rings of queues that must work before (or without) the engine's
// EAL live here: the shard inbox, event queues, loopback ports, the pcap tap.
//
// Thread contract: construction and destruction by one thread; the ring itself is used as the
// flags given say (the owner's header documents its producers and consumers). Never blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

struct rte_ring;

namespace fastcm::runtime {

class OwnedRing {
 public:
  // A ring of `count` entries (as rte_ring_init takes it: a power of two holding count - 1, or
  // with RING_F_EXACT_SZ exactly count), ring `flags`, entries of `element_size` bytes (a multiple
  // of 4; the _elem calls' size). `name` names the ring in DPDK's messages and ours. Errors:
  // throws std::system_error (errno from DPDK, and `name`) for a count or size DPDK refuses,
  // std::bad_alloc.
  OwnedRing(const std::string& name, unsigned count, unsigned flags,
            std::size_t element_size = sizeof(void*));
  OwnedRing(OwnedRing&&) noexcept = default;
  OwnedRing& operator=(OwnedRing&&) noexcept = default;
  ~OwnedRing() = default;

  [[nodiscard]] rte_ring* get() const noexcept { return ring_.get(); }

  // Entries in the ring now, from atomic loads of both tails: rte_ring_count() reads them plainly,
  // which ThreadSanitizer reports against the HTS sides' atomic tail stores. Any thread. Off the
  // consumer's thread it may count entries dequeued and enqueued again in between, so it can pass
  // the capacity for a moment: callers that show it clamp it.
  [[nodiscard]] std::uint32_t count() const noexcept;

 private:
  struct Free {
    void operator()(rte_ring* ring) const noexcept;
  };
  std::unique_ptr<rte_ring, Free> ring_;
};

}  // namespace fastcm::runtime
