#include "shards/remote_qpn_registry.h"

#include <array>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

namespace fastcm::shards {
namespace detail {

inline constexpr std::uint32_t kSlotsPerChunk = 5;

// One table entry. Its fields are atomics only so that find() may read them while a claim
// rewrites them; `ctl` says whether what was read is one entry.
struct RemoteQpnSlot {
  // [version:30 | state:2]. kFree -> kWriting: the claim that takes the slot (compare-and-swap).
  // kWriting -> kOccupied and kOccupied -> kFree: stores that also advance the version, so a
  // reader that loads the same word before and after reading the fields has read one entry (a
  // seqlock; the version would have to wrap, 2^29 connections through this slot during one
  // read, to fool it).
  std::atomic<std::uint32_t> ctl{0};
  std::atomic<std::uint32_t> qpn{0};
  std::atomic<std::uint64_t> guid{0};
  std::atomic<std::uint64_t> owner{0};
};

// Two cache lines: the home lock and overflow count, then five slots.
struct alignas(64) RemoteQpnChunk {
  // The home lock of every key whose home is this chunk: 0 free, 1 held. Taken with an acquire
  // exchange; its partner is the release store that frees it.
  std::atomic<std::uint32_t> home_lock{0};
  // Entries stored past this chunk whose home is this chunk or before it: a lookup that does not
  // find its key here continues only while this is non-zero. Claims add one (before publishing
  // their entry further on), releases subtract one (after freeing it). Relaxed: a lookup that
  // must see an entry (its claim happened before the lookup) also sees the claim's additions,
  // by coherence; any other lookup runs concurrently with the claim and may miss it.
  std::atomic<std::uint32_t> overflow{0};
  std::array<RemoteQpnSlot, kSlotsPerChunk> slots;
};
static_assert(sizeof(RemoteQpnChunk) == 128);

}  // namespace detail

namespace {

using detail::RemoteQpnChunk;
using detail::RemoteQpnSlot;

// Sizing: 4 entries per 5-slot chunk when full, so probe walks stay short at capacity.
constexpr std::uint32_t kEntriesPerChunk = 4;

enum : std::uint32_t { kFree = 0, kWriting = 1, kOccupied = 2 };
constexpr std::uint32_t kStateMask = 3;
constexpr std::uint32_t kVersionStep = 4;

constexpr std::uint32_t advanced(std::uint32_t ctl, std::uint32_t state) noexcept {
  return ((ctl & ~kStateMask) + kVersionStep) | state;
}

// The splitmix64 finalizer: a bijection whose output bits each depend on every input bit.
constexpr std::uint64_t mix(std::uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint32_t checked_capacity(std::uint32_t capacity) {
  if (capacity == 0 || capacity > RemoteQpnRegistry::kMaxCapacity) {
    throw std::invalid_argument("RemoteQpnRegistry capacity must be 1.." +
                                std::to_string(RemoteQpnRegistry::kMaxCapacity));
  }
  return capacity;
}

std::uint64_t random_seed() {
  std::random_device device;
  return std::uint64_t{device()} << 32 | device();
}

// A slot's fields, read while it held one entry.
struct Entry {
  std::uint32_t qpn;
  std::uint64_t guid;
  std::uint64_t owner;
};

std::optional<Entry> read_slot(const RemoteQpnSlot& slot) noexcept {
  // Acquire, partner: the release store that published the entry (kWriting -> kOccupied).
  const std::uint32_t before = slot.ctl.load(std::memory_order_acquire);
  if ((before & kStateMask) != kOccupied) return std::nullopt;
  // Acquire, partner: claim()'s release stores of the fields. Reading a field that a later claim
  // wrote makes that claim's kWriting visible to the second load of ctl, which then differs.
  // (Not relaxed loads and fences: GCC's ThreadSanitizer does not support atomic_thread_fence.)
  const Entry entry{slot.qpn.load(std::memory_order_acquire),
                    slot.guid.load(std::memory_order_acquire),
                    slot.owner.load(std::memory_order_acquire)};
  if (slot.ctl.load(std::memory_order_relaxed) != before) return std::nullopt;  // changed: gone
  return entry;
}

// Spin lock on a chunk's home_lock for the duration of one claim or release. Contended only by
// keys sharing a home chunk; yields rather than spins because the holder may be preempted on a
// shared core.
class HomeLock {
 public:
  explicit HomeLock(std::atomic<std::uint32_t>& word) noexcept : word_(word) {
    // Acquire, partner: the release store in the previous holder's destructor.
    while (word_.exchange(1, std::memory_order_acquire) != 0) {
      while (word_.load(std::memory_order_relaxed) != 0) std::this_thread::yield();
    }
  }
  // Release, partner: the next holder's acquiring exchange.
  ~HomeLock() { word_.store(0, std::memory_order_release); }
  HomeLock(const HomeLock&) = delete;
  HomeLock& operator=(const HomeLock&) = delete;

 private:
  std::atomic<std::uint32_t>& word_;
};

}  // namespace

RemoteQpnRegistry::RemoteQpnRegistry(std::uint32_t capacity)
    : capacity_(checked_capacity(capacity)),
      chunk_count_((capacity_ + kEntriesPerChunk - 1) / kEntriesPerChunk),
      seed_(random_seed()),
      chunks_(std::make_unique<RemoteQpnChunk[]>(chunk_count_)) {}

RemoteQpnRegistry::~RemoteQpnRegistry() = default;

std::uint32_t RemoteQpnRegistry::home_of(engine::RemoteQpnKey key) const noexcept {
  // Seeded inside the outer mix, so which keys share a chunk differs per registry.
  const std::uint64_t hash = mix(mix(key.ca_guid ^ seed_) ^ key.qpn);
  return static_cast<std::uint32_t>((hash >> 32) * chunk_count_ >> 32);
}

std::optional<RemoteQpnRegistry::Found> RemoteQpnRegistry::locate(
    engine::RemoteQpnKey key, std::uint32_t home) const noexcept {
  std::uint32_t at = home;
  for (std::uint32_t walked = 0; walked != chunk_count_; ++walked, at = next(at)) {
    const RemoteQpnChunk& chunk = chunks_[at];
    for (std::uint32_t i = 0; i != detail::kSlotsPerChunk; ++i) {
      const std::optional<Entry> entry = read_slot(chunk.slots[i]);
      if (entry && entry->qpn == key.qpn && entry->guid == key.ca_guid) {
        return Found{at, i, Id{entry->owner}};
      }
    }
    if (chunk.overflow.load(std::memory_order_relaxed) == 0) break;
  }
  return std::nullopt;
}

bool RemoteQpnRegistry::reserve() noexcept {
  std::uint32_t n = size_.load(std::memory_order_relaxed);
  do {
    if (n >= capacity_) return false;
  } while (!size_.compare_exchange_weak(n, n + 1, std::memory_order_acquire,
                                        std::memory_order_relaxed));
  return true;
}

std::optional<Id> RemoteQpnRegistry::find(engine::RemoteQpnKey key) const noexcept {
  const std::optional<Found> found = locate(key, home_of(key));
  return found ? std::optional<Id>(found->owner) : std::nullopt;
}

std::optional<Id> RemoteQpnRegistry::claim(engine::RemoteQpnKey key, Id owner) noexcept {
  const std::uint32_t home = home_of(key);
  const HomeLock lock(chunks_[home].home_lock);
  // Under the home lock no one else records or erases `key`, so this answer stays true until the
  // insert below.
  if (const std::optional<Found> found = locate(key, home)) {
    return found->owner == owner ? std::nullopt : std::optional<Id>(found->owner);
  }
  if (!reserve()) {
    full_claims_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  std::uint32_t at = home;
  for (std::uint32_t walked = 0; walked != chunk_count_; ++walked, at = next(at)) {
    RemoteQpnChunk& chunk = chunks_[at];
    for (RemoteQpnSlot& slot : chunk.slots) {
      std::uint32_t ctl = slot.ctl.load(std::memory_order_relaxed);
      if ((ctl & kStateMask) != kFree) continue;
      // Acquire, partner: the release store in release() that freed the slot. Fails when a claim
      // of a key with another home took it first.
      if (!slot.ctl.compare_exchange_strong(ctl, ctl | kWriting, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
        continue;
      }
      // Release, partner: read_slot()'s acquire loads of the fields (a reader that sees one of
      // these values also sees kWriting).
      slot.qpn.store(key.qpn, std::memory_order_release);
      slot.guid.store(key.ca_guid, std::memory_order_release);
      slot.owner.store(owner.raw, std::memory_order_release);
      // Release, partner: read_slot()'s first (acquire) load of ctl.
      slot.ctl.store(advanced(ctl, kOccupied), std::memory_order_release);
      return std::nullopt;
    }
    chunk.overflow.fetch_add(1, std::memory_order_relaxed);
  }
  // Every slot was taken when this claim passed it, which only churn by other threads can cause
  // (reservations leave a fifth of the slots free): give back what was taken and skip the check.
  for (std::uint32_t walked = 0; walked != chunk_count_; ++walked, at = next(at)) {
    chunks_[at].overflow.fetch_sub(1, std::memory_order_relaxed);
  }
  size_.fetch_sub(1, std::memory_order_release);
  full_claims_.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

void RemoteQpnRegistry::release(engine::RemoteQpnKey key, Id owner) noexcept {
  const std::uint32_t home = home_of(key);
  const HomeLock lock(chunks_[home].home_lock);
  const std::optional<Found> found = locate(key, home);
  if (!found || found->owner != owner) return;
  RemoteQpnSlot& slot = chunks_[found->chunk].slots[found->slot];
  // kOccupied and unchanging: only claims and releases of `key` touch this slot, and they hold
  // this home lock.
  const std::uint32_t ctl = slot.ctl.load(std::memory_order_relaxed);
  // Release, partners: the acquiring compare-and-swap of the claim that takes the slot next, and
  // read_slot()'s first (acquire) load of ctl, which then sees kFree.
  slot.ctl.store(advanced(ctl, kFree), std::memory_order_release);
  for (std::uint32_t at = home; at != found->chunk; at = next(at)) {
    chunks_[at].overflow.fetch_sub(1, std::memory_order_relaxed);
  }
  // Release, partner: reserve()'s acquiring compare-and-swap.
  size_.fetch_sub(1, std::memory_order_release);
}

}  // namespace fastcm::shards
