// The engine-wide RemoteQpns (engine/remote_qpns.h): which endpoint is connected to a remote QP,
// shared by all shards. Claimed once per connection (accept or REP), released when the endpoint
// is freed, looked up on REQ and REP; never per retransmission, but on the MAD path all the same.
//
// Implementation: a fixed open-addressing table allocated once at construction (capacity / 4
// chunks of 5 slots, so at most 80% full), linear probing over chunks; each chunk counts the
// entries that probed past it (its overflow count), so a lookup stops at the first chunk without
// the key and with no overflow, and an erase needs neither tombstones nor moves. A chunk's
// control word holds a 6-bit tag per slot (0 = free, else from the key's hash) and a lock bit,
// so one load and a few ALU operations tell a lookup which slots can hold its key (usually
// none) and a claim which are free. Every operation hashes once (one widening multiply) and
// walks the key's probe sequence once.
//   find     lock-free, writes nothing: reads the heads its tags point at; a per-slot head
//            [version | qpn] (a seqlock) validates the entry it reads.
//   claim / release
//            take the lock of the key's home chunk ("home lock"), so two claims of one key
//            cannot both insert, and walk under it. Taking a free slot needs that chunk's lock
//            (plain stores, no compare-and-swap per slot); the unlocking store publishes the new
//            tags. Held for one walk, no allocation, no syscall; a claim that overflows past its
//            home only tries the later chunks' locks, so no thread waits while holding a lock.
//
// Why this and not a library container (measured by bench/bench_remote_qpn_registry.cpp):
// tbb::concurrent_hash_map allocates a node per insert (with std::allocator, tbb_allocator or
// scalable_allocator alike), takes a bucket read-write lock even in find (a write to a shared
// cache line on every lookup from every shard), allocates again as it grows, and needs a separate
// counter to be bounded. tbb::concurrent_unordered_map cannot serve at all: its only erase is
// unsafe_erase, which must not run concurrently with anything, and "erase only if still ours"
// has no atomic form in it. A mutex around std::unordered_map serializes every shard's lookups
// and also allocates per insert. DESIGN.md keeps malloc off the MAD path and locks to rare
// paths: here find, which runs on every REQ, takes no lock, and claim and release, once per
// connection, hold a home lock only for one walk of a preallocated table. ThreadSanitizer
// reported nothing for concurrent_hash_map (no suppression needed), so TBB lost on cost alone:
//
// Release, g++ 12, table sized for 65536 with 32768 resident, medians of 5:
//   fastcm_bench_remote_qpn_registry --benchmark_repetitions=5
//     --benchmark_report_aggregates_only=true --benchmark_min_time=0.3
// ns per item as CPU (summed over threads) / wall; items are claim+release pairs or lookups.
//                    threads   this      TBB chm      TBB chm       std::mutex +
//                                        tbb_alloc    scalable      unordered_map
//   claim+release       1     43 / 48   123 / 187    132 / 209      58 / 116
//                       2     45 / 43   158 / 213    148 / 242      76 / 147
//                       4     54 / 55   159 / 265    157 / 270     117 / 136
//   find (miss)         1     13 / 19    20 / 30      23 / 38       19 / 34
//                       4     10 / 15    23 / 43      22 / 43       23 / 23
//   find (hit)          1     21 / 22    33 / 44      39 / 80       21 / 28
//                       4     35 / 50    55 / 124     87 / 111      22 / 30
// Claim+release pairs per second with 1 / 2 / 4 threads: this 20.8M / 23.1M / 18.1M; TBB
// (tbb_allocator) 5.4M / 4.7M / 3.8M; TBB (scalable) 4.8M / 4.1M / 3.7M; mutex 8.7M / 6.8M /
// 7.4M. The 2 cores were shared with other builds (load average 1.5 rising to 5 during the run),
// so wall times are noisy and the CPU times steadier; a second, busier run ranked them the same
// (claim+release CPU 50 / 56 / 59 ns here against 146 / 179 / 187 for TBB with tbb_allocator).
// Claims and releases do not scale with threads because each also updates size_, the one shared
// counter behind the exact capacity bound (without it two threads measured twice the rate); it
// stays, as the bound must be exact and ~20M pairs/s is far above any connection rate.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "engine/remote_qpns.h"
#include "fastcm/id.h"

namespace fastcm::shards {

namespace detail {
inline constexpr std::uint32_t kSlotsPerChunk = 5;
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
  // Not concurrently with any other call.
  ~RemoteQpnRegistry() override;

  // As RemoteQpns: any thread, concurrently with everything. Lock-free; never writes shared
  // memory. A claim or release running at the same time may or may not be seen.
  [[nodiscard]] std::optional<Id> find(engine::RemoteQpnKey key) const noexcept override;

  // As RemoteQpns: any thread, concurrently. An existing entry is answered even when the table
  // is full; a new one is refused (nullopt, nothing recorded, full_claims() counts it) when
  // `capacity` entries are recorded, or in the rare case that other threads' claims and releases
  // kept every slot taken (or its chunk locked) as this claim walked past it. Waits only for
  // another claim or release of a key with the same home chunk, or a claim overflowing into it.
  [[nodiscard]] std::optional<Id> claim(engine::RemoteQpnKey key, Id owner) noexcept override;

  // As RemoteQpns: any thread, concurrently. Same waiting as claim.
  void release(engine::RemoteQpnKey key, Id owner) noexcept override;

  // Any thread. The entries recorded, counting claims that are recording one right now. Relaxed:
  // a count, it orders nothing.
  [[nodiscard]] std::uint32_t size() const noexcept {
    return size_.load(std::memory_order_relaxed);
  }
  // Any thread.
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  // Any thread. Claims refused since construction (see claim): the stale check was skipped for
  // those connections. Relaxed: a count, it orders nothing.
  [[nodiscard]] std::uint64_t full_claims() const noexcept {
    return full_claims_.load(std::memory_order_relaxed);
  }

 private:
  // Where a key's walk starts, and the tag its slot carries (odd, 1..63).
  struct Home {
    std::uint32_t chunk = 0;
    std::uint32_t tag = 0;
  };
  // What one walk of a key's probe sequence found: the key's slot, its head and owner.
  struct Walk {
    bool found = false;
    std::uint32_t chunk = 0;
    std::uint32_t slot = 0;
    std::uint64_t head = 0;
    Id owner;
  };

  [[nodiscard]] Home home_of(engine::RemoteQpnKey key) const noexcept;
  [[nodiscard]] std::uint32_t next(std::uint32_t chunk) const noexcept {
    return chunk + 1 == chunk_count_ ? 0 : chunk + 1;
  }
  // Walks from the home chunk until the key's slot, or a chunk without it and with no overflow.
  [[nodiscard]] Walk walk(engine::RemoteQpnKey key, Home home) const noexcept;
  // True when the walk would stop at the home chunk, whose tags are `tags`, without reading a
  // slot: none carries the key's tag and no entry overflowed past it.
  [[nodiscard]] bool nothing_at_home(Home home, std::uint32_t tags) const noexcept;
  [[nodiscard]] bool reserve() noexcept;
  // claim() when the home lock was held (`tags` is kLocked) or the home chunk's tags do not
  // settle it at a glance (the home lock is held with `tags`); frees the home lock.
  [[nodiscard]] std::optional<Id> claim_slowly(engine::RemoteQpnKey key, Id owner, Home home,
                                               std::uint32_t tags) noexcept;
  // Records `key`, known absent, for `owner` (or refuses it, see claim()) and frees the home
  // lock, held with `tags`.
  void record(engine::RemoteQpnKey key, Id owner, Home home, std::uint32_t tags) noexcept;
  // record() when the home chunk is full: the first later chunk with a free slot and an unheld
  // lock takes the entry.
  void record_past_home(engine::RemoteQpnKey key, Id owner, Home home,
                        std::uint32_t tags) noexcept;

  std::uint32_t capacity_;
  std::uint32_t chunk_count_;
  std::uint64_t guid_seed_;
  std::uint64_t qpn_seed_;
  std::unique_ptr<detail::RemoteQpnChunk[]> chunks_;
  // Reservations: a claim reserves (compare-and-swap, acquire) before taking a slot, so at most
  // capacity_ slots are ever taken; release gives it back (release) after freeing the slot.
  // Partners: the reserving CAS's acquire reads the releasing fetch_sub, so a claim that reuses
  // that reservation also sees the freed slot.
  alignas(64) std::atomic<std::uint32_t> size_{0};
  std::atomic<std::uint64_t> full_claims_{0};  // relaxed throughout: a count
};

}  // namespace fastcm::shards
