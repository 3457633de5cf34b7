// The engine-wide RemoteQpns (engine/remote_qpns.h): which endpoint is connected to a remote QP,
// shared by all shards. Claimed once per connection (accept or REP), released when the endpoint
// is freed, looked up on REQ and REP; never per retransmission, but on the MAD path all the same.
//
// Implementation: a fixed open-addressing table allocated once at construction (capacity / 4
// chunks of 5 slots, so at most 80% full), linear probing over chunks; each chunk counts the
// entries that probed past it (its overflow count), so a lookup stops at the first chunk without
// the key and with no overflow, and an erase needs neither tombstones nor moves.
//   find     lock-free: a per-slot version word (a seqlock) validates each slot it reads.
//   claim / release
//            take the spin lock of the key's home chunk ("home lock"), so two claims of one key
//            cannot both insert; keys with different home chunks run in parallel and take free
//            slots with a compare-and-swap. Held for one probe walk, no allocation, no syscall.
//
// Why not TBB (measured, bench/bench_remote_qpn_registry.cpp, Release, g++ 12, 2 shared cores):
// tbb::concurrent_hash_map allocates a node per insert (malloc, or tbb_allocator /
// scalable_allocator) and takes a bucket read-write lock even in find, which writes the bucket's
// cache line on every lookup from every shard; growing it allocates and rehashes; bounding it
// needs a separate counter. tbb::concurrent_unordered_map cannot serve at all: its erase is
// unsafe_erase (not concurrent with anything), and "erase only if still ours" has no atomic form.
// ThreadSanitizer reported nothing for concurrent_hash_map (no suppression needed), so the choice
// is made on cost and on DESIGN.md's "no malloc on the MAD path":
//   FIGURES_PLACEHOLDER
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "engine/remote_qpns.h"
#include "fastcm/id.h"

namespace fastcm::shards {

namespace detail {
struct RemoteQpnChunk;  // remote_qpn_registry.cpp
}  // namespace detail

class RemoteQpnRegistry final : public engine::RemoteQpns {
 public:
  static constexpr std::uint32_t kMaxCapacity = std::uint32_t{1} << 24;

  // Room for `capacity` entries (1..kMaxCapacity): the engine's endpoint count, as each endpoint
  // holds at most one. Allocates about 32 bytes per entry here and never again. The hash is
  // seeded per registry so peers cannot choose QPNs that pile onto one chunk. Throws
  // std::invalid_argument for a capacity out of range, std::bad_alloc, and std::system_error
  // when no random seed can be read.
  explicit RemoteQpnRegistry(std::uint32_t capacity);
  ~RemoteQpnRegistry() override;

  // As RemoteQpns: any thread, concurrently with everything. Lock-free; never writes shared
  // memory. A claim or release running at the same time may or may not be seen.
  [[nodiscard]] std::optional<Id> find(engine::RemoteQpnKey key) const noexcept override;

  // As RemoteQpns: any thread, concurrently. An existing entry is answered even when the table
  // is full; a new one is refused (nullopt, nothing recorded, full_claims() counts it) when
  // `capacity` entries are recorded. Waits only for another claim or release of a key with the
  // same home chunk.
  [[nodiscard]] std::optional<Id> claim(engine::RemoteQpnKey key, Id owner) noexcept override;

  // As RemoteQpns: any thread, concurrently. Same waiting as claim.
  void release(engine::RemoteQpnKey key, Id owner) noexcept override;

  // Any thread. The entries recorded, counting claims that are recording one right now.
  [[nodiscard]] std::uint32_t size() const noexcept {
    return size_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  // Any thread. Claims refused because the table was full since construction: the stale check
  // was skipped for those connections. Only counts, so relaxed.
  [[nodiscard]] std::uint64_t full_claims() const noexcept {
    return full_claims_.load(std::memory_order_relaxed);
  }

 private:
  struct Found {
    std::uint32_t chunk = 0;
    std::uint32_t slot = 0;
    Id owner;
  };

  [[nodiscard]] std::uint32_t home_of(engine::RemoteQpnKey key) const noexcept;
  [[nodiscard]] std::uint32_t next(std::uint32_t chunk) const noexcept {
    return chunk + 1 == chunk_count_ ? 0 : chunk + 1;
  }
  // The slot holding `key`, walking from its home chunk.
  [[nodiscard]] std::optional<Found> locate(engine::RemoteQpnKey key,
                                            std::uint32_t home) const noexcept;
  [[nodiscard]] bool reserve() noexcept;

  std::uint32_t capacity_;
  std::uint32_t chunk_count_;
  std::uint64_t seed_;
  std::unique_ptr<detail::RemoteQpnChunk[]> chunks_;
  // Reservations: a claim reserves (compare-and-swap, acquire) before taking a slot, so at most
  // capacity_ slots are ever taken; release gives it back (release) after freeing the slot.
  // Partners: the reserving CAS's acquire reads the releasing fetch_sub, so a claim that reuses
  // that reservation also sees the freed slot.
  alignas(64) std::atomic<std::uint32_t> size_{0};
  std::atomic<std::uint64_t> full_claims_{0};
};

}  // namespace fastcm::shards
