// The engine-wide RemoteQpns (engine/remote_qpns.h): which endpoint is connected to a remote QP,
// shared by all shards. Claimed once per connection (accept or REP), released when the endpoint
// is freed, looked up on REQ and REP; never per retransmission, but on the MAD path all the same.
//
// Implementation: a fixed open-addressing table allocated once at construction (capacity / 3 chunks
// of 5 slots, so at most 60% full while the engine's EndpointBudget keeps the entries to
// `capacity`; the table keeps no count of its own, which every claim and release of every shard
// would update), linear probing over chunks; each chunk counts the entries that probed past it (its
// overflow count), so a lookup stops at the first chunk without the key and with no overflow, and
// an erase needs neither tombstones nor moves. A chunk's control word holds a 6-bit tag per slot
// (0 = free, else from the key's hash) and a lock bit, so one load and a few ALU operations tell
// a lookup which slots can hold its key (usually none) and a claim which are free. Every
// operation hashes once (one widening multiply) and walks the key's probe sequence once.
//   find     lock-free, writes nothing: reads the heads its tags point at; a per-slot head
//            [version | qpn] (a seqlock) validates the entry it reads.
//   claim / release
//            take the lock of the key's home chunk ("home lock"), so two claims of one key
//            cannot both insert, and walk under it. Taking a free slot needs that chunk's lock
//            (plain stores, no compare-and-swap per slot); the unlocking store publishes the new
//            tags. Held for one walk, no allocation, no syscall; a claim that overflows past its
//            home only tries the later chunks' locks, and a release of an entry stored past its
//            home frees the home lock before taking that chunk's, so no thread waits for a lock
//            while holding one.
//
// Why this and not a library container (measured by bench/bench_remote_qpn_registry.cpp):
// tbb::concurrent_hash_map allocates a node per insert (with std::allocator, tbb_allocator or
// scalable_allocator alike), takes a bucket read-write lock even in find (a write to a shared
// cache line on every lookup from every shard), allocates again as it grows, and needs a separate
// counter to be bounded. tbb::concurrent_unordered_map cannot serve at all: its only erase is
// unsafe_erase, which must not run concurrently with anything, and "erase only if still ours"
// has no atomic form in it. A mutex around std::unordered_map serializes every shard's lookups
// and also allocates per insert. The MAD path must neither allocate nor lock: here find, which runs on every REQ, takes no lock, and claim and release, once per
// connection, hold a home lock only for one walk of a preallocated table. ThreadSanitizer
// reported nothing for concurrent_hash_map (no suppression needed), so TBB lost on cost alone:
//
// Release, g++ 12, table sized for 65536 with 32768 resident, medians of 5 (measured with 4 entries
// per chunk at capacity, 16384 chunks; the sizing is 3 now):
//   fastcm_bench_remote_qpn_registry --benchmark_repetitions=5
//     --benchmark_report_aggregates_only=true --benchmark_min_time=0.3
// ns per item as CPU (summed over threads) / wall; items are claim+release pairs or lookups.
//                    threads   this      TBB chm      TBB chm       std::mutex +
//                                        tbb_alloc    scalable      unordered_map
//   claim+release       1     31 / 32   140 / 143    135 / 135      70 / 71
//                       2     32 / 16   293 / 152    310 / 157     277 / 177
//                       4     32 / 16   460 / 232    319 / 160     211 / 139
//   find (miss)         1      8 / 8     22 / 23      22 / 24       22 / 23
//                       4      8 / 4     23 / 12      24 / 17       79 / 46
//   find (hit)          1     17 / 17    34 / 34      34 / 34       27 / 27
//                       4     17 / 8     84 / 39     101 / 49       99 / 51
// Claim+release pairs per second with 1 / 2 / 4 threads: this 30.9M / 60.8M / 63.4M; TBB
// (tbb_allocator) 7.0M / 6.6M / 4.3M; TBB (scalable) 7.4M / 6.4M / 6.2M; mutex 14.1M / 5.7M /
// 7.2M. The 2 cores were shared with another process (load average 2.5 to 3), so wall times
// are noisy and the CPU times steadier. Interleaved runs against the previous version of this
// table (per-slot compare-and-swap, an exact count updated by every claim and release, two
// splitmix rounds): claim+release CPU 31 against 48-49 ns with one thread, and 63M against 21M
// pairs/s with two (the count's cache line no longer bounces between them); find miss 8 against
// 13 ns, find hit 19-21 against 22-23 ns.
// Instructions (callgrind, the same scenario, 4096 of each): claim 92 (was 199), release 116
// (was 172), find miss ~50 (was ~140), find hit ~111 (was ~109, both walk out of line). In the
// engine (bench/per_mad_bench.cpp's callgrind recipe, BM_EngineMad/shards:1/side:2/wire:0), the
// table's share of a connection's timed life (two claims and a lookup) fell from ~520 to ~229
// instructions.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "engine/demand_zero_array.h"
#include "engine/remote_qpns.h"
#include "fastcm/id.h"

namespace fastcm::shards {

namespace detail {
inline constexpr std::uint32_t kSlotsPerChunk = 5;
struct RemoteQpnChunk;  // remote_qpn_registry.cpp
struct alignas(64) RemoteQpnChunkStorage {
  std::byte bytes[128];  // sizeof(RemoteQpnChunk), checked there
};
}  // namespace detail

class RemoteQpnRegistry final : public engine::RemoteQpns {
 public:
  static constexpr std::uint32_t kMaxCapacity = std::uint32_t{1} << 24;

  // Sized for `capacity` entries (1..kMaxCapacity): the engine's endpoint count, as each endpoint
  // holds at most one (EndpointBudget keeps them to that count, so the table needs no count of
  // its own). It holds slots() entries, a quarter more, so that walks stay short up to
  // `capacity`. Allocates about 43 bytes per entry here and never again. The hash is
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
  // is full; a new one is refused (nullopt, nothing recorded, full_claims() counts it) when all
  // slots() are taken, or in the rare case that other threads' claims and releases kept every
  // slot taken (or its chunk locked) as this claim walked past it. Waits only for another claim
  // or release of a key with the same home chunk, or a release of an entry stored in it.
  [[nodiscard]] std::optional<Id> claim(engine::RemoteQpnKey key, Id owner) noexcept override;

  // As RemoteQpns: any thread, concurrently. Same waiting as claim.
  void release(engine::RemoteQpnKey key, Id owner) noexcept override;

  // As RemoteQpns: the key's home chunk (both its cache lines), for writing, since a claim of the
  // key usually follows its find. Any thread.
  void prefetch(engine::RemoteQpnKey key) const noexcept override;

  // Any thread.
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  // Any thread. The entries the table can hold: 5 per 4 of capacity, rounded up to whole chunks.
  [[nodiscard]] std::uint32_t slots() const noexcept {
    return chunk_count_ * detail::kSlotsPerChunk;
  }
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

  // Constructs a chunk in each element of `storage` (at least one); returns the first.
  [[nodiscard]] static detail::RemoteQpnChunk* construct_chunks(
      engine::DemandZeroArray<detail::RemoteQpnChunkStorage>& storage) noexcept;
  [[nodiscard]] Home home_of(engine::RemoteQpnKey key) const noexcept;
  [[nodiscard]] std::uint32_t next(std::uint32_t chunk) const noexcept {
    return chunk + 1 == chunk_count_ ? 0 : chunk + 1;
  }
  // Walks from the home chunk until the key's slot, or a chunk without it and with no overflow.
  [[nodiscard]] Walk walk(engine::RemoteQpnKey key, Home home) const noexcept;
  // The same, inlined into the caller.
  [[nodiscard]] Walk walk_inline(engine::RemoteQpnKey key, Home home) const noexcept;
  // True when the walk would stop at the home chunk, whose tags are `tags`, without reading a
  // slot: none carries the key's tag and no entry overflowed past it.
  [[nodiscard]] bool nothing_at_home(Home home, std::uint32_t tags) const noexcept;
  // claim() when the home lock was held (`tags` is kLocked) or the home chunk's tags do not
  // settle it at a glance (the home lock is held with `tags`); frees the home lock.
  [[nodiscard]] std::optional<Id> claim_slowly(engine::RemoteQpnKey key, Id owner, Home home,
                                               std::uint32_t tags) noexcept;
  // Records `key`, known absent, for `owner` (or refuses it, see claim()), and frees the home
  // lock, held with `tags`.
  void record(engine::RemoteQpnKey key, Id owner, Home home, std::uint32_t tags) noexcept;
  // record() when the home chunk is full: the first later chunk with a free slot and an unheld
  // lock takes the entry; refused when there is none.
  void record_past_home(engine::RemoteQpnKey key, Id owner, Home home,
                        std::uint32_t tags) noexcept;

  std::uint32_t capacity_;
  std::uint32_t chunk_count_;
  std::uint64_t guid_seed_;
  std::uint64_t qpn_seed_;
  // Raw storage for the chunks, constructed in it at once. Every lookup lands on a random chunk:
  // on 4 KiB pages the prefetch of a REQ's home chunk was a TLB miss (nine tenths of its samples
  // sat on the prefetch itself), and huge pages made the 1M storm about 3 % cheaper per connection.
  engine::DemandZeroArray<detail::RemoteQpnChunkStorage> storage_;
  detail::RemoteQpnChunk* chunks_;
  // Written only when a claim is refused, so no other operation shares its cache line.
  alignas(64) std::atomic<std::uint64_t> full_claims_{0};  // relaxed throughout: a count
};

}  // namespace fastcm::shards
