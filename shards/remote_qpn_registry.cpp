#include "shards/remote_qpn_registry.h"

#include <array>
#include <bit>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "runtime/checked_capacity.h"

namespace fastcm::shards {
namespace detail {

// Five slots and what guards them, in two cache lines laid out so that a lookup that misses
// reads only the first (the control word, the overflow count and the heads); the GUIDs and
// owners follow. The slot words are atomics only so that find() may read them while a claim
// rewrites them; the head says whether what was read is one entry.
struct alignas(64) RemoteQpnChunk {
  // [locked:1 | 0:1 | tag of slot 4:6 | ... | tag of slot 0:6]. A slot's tag is 0 while it is
  // free, else odd, from its key's hash: a filter, so that a lookup reads only the heads whose
  // tag is its key's. The lock is held for one claim or release of a key whose home this chunk
  // is (so two claims of one key cannot both insert), and by a claim or release changing a tag
  // here: the tags change only under the lock, and a slot with tag 0 is free for the holder to
  // take. See lock_chunk() for the lock's ordering.
  std::atomic<std::uint32_t> ctl{0};
  // Entries stored past this chunk whose home is this chunk or before it: a lookup that does not
  // find its key here continues only while this is non-zero. Claims add one (before publishing
  // their entry further on), releases subtract one (after freeing it). Relaxed: a lookup that
  // must see an entry (its claim happened before the lookup) also sees the claim's additions,
  // by coherence; any other lookup runs concurrently with the claim and may miss it.
  std::atomic<std::uint32_t> overflow{0};
  // Per slot [version:32 | qpn:32]. The version counts the slot's changes and is odd while the
  // slot holds an entry; the QPN is the entry's (0 when free). Each change is one store, by the
  // only thread that may make it (fill_slot() under the chunk lock; release() under the key's
  // home lock), computed from the head it read.
  std::array<std::atomic<std::uint64_t>, kSlotsPerChunk> head{};
  std::array<std::atomic<std::uint64_t>, kSlotsPerChunk> guid{};
  std::array<std::atomic<std::uint64_t>, kSlotsPerChunk> owner{};
};
static_assert(sizeof(RemoteQpnChunk) == sizeof(RemoteQpnChunkStorage));
static_assert(alignof(RemoteQpnChunk) == alignof(RemoteQpnChunkStorage));

}  // namespace detail

namespace {

using detail::kSlotsPerChunk;
using detail::RemoteQpnChunk;
using detail::RemoteQpnChunkStorage;

// Sizing: 3 entries per 5-slot chunk at capacity (60% full), so probe walks stay short up to it.
// At 4 (80%), a 1M storm's claims spilled past their home chunk often enough that the registry
// took 7.8% of the storm's CPU samples, against 5.8% at 3; the table grows from 32 to 43 bytes per
// endpoint, touched at construction.
constexpr std::uint32_t kEntriesPerChunk = 3;

constexpr std::uint64_t kQpnBits = 0xFFFF'FFFF;
constexpr std::uint64_t kHolds = kQpnBits + 1;  // the version's low bit: the slot holds an entry

// The head after one more change, naming `qpn`.
constexpr std::uint64_t changed(std::uint64_t head, Qpn qpn) noexcept {
  return ((head | kQpnBits) + 1) | qpn;
}

// The control word's tag fields, compared all at once (SWAR).
constexpr std::uint32_t kTagBits = 6;
constexpr std::uint32_t kTagField = (std::uint32_t{1} << kTagBits) - 1;
constexpr std::uint32_t kTagLows = 0x0104'1041;           // the low bit of every field
constexpr std::uint32_t kTagLowFives = kTagLows * 0x1F;    // the low five bits of every field
constexpr std::uint32_t kTagHighs = kTagLows << (kTagBits - 1);  // the high bit of every field
constexpr std::uint32_t kLocked = std::uint32_t{1} << 31;
static_assert(kTagBits * kSlotsPerChunk < 31 &&
              kTagLows == (1U | 1U << 6 | 1U << 12 | 1U << 18 | 1U << 24));

// The high bit of each tag field of `ctl` equal to that field of `pattern`. Exact (a field's
// five low bits plus 0x1F cannot carry into the next field), and blind to the lock bit.
constexpr std::uint32_t equal_tags(std::uint32_t ctl, std::uint32_t pattern) noexcept {
  const std::uint32_t diff = ctl ^ pattern;
  return ~(((diff & kTagLowFives) + kTagLowFives) | diff) & kTagHighs;
}
// The lowest slot marked in a non-zero result of equal_tags. (A mark is bit 6 * slot + 5, and
// (6 * slot + 5) * 43 >> 8 == slot for slots 0..4: two instructions where / 6 takes four.)
constexpr std::uint32_t first_slot(std::uint32_t marks) noexcept {
  return static_cast<std::uint32_t>(std::countr_zero(marks)) * 43 >> 8;
}
static_assert(first_slot(kTagHighs) == 0 && first_slot(kTagHighs & ~0x820U) == 2 &&
              first_slot(equal_tags(5U << 24 | 9U << 6, 5U * kTagLows)) == 4 &&
              equal_tags(kLocked | 3U << 12, 0) == (kTagHighs & ~(kTagHighs & 0x3FU << 12)));

__extension__ typedef unsigned __int128 Product;  // 64 x 64 -> 128-bit multiply

std::uint64_t random_seed() {
  std::random_device device;
  return std::uint64_t{device()} << 32 | device();
}

// Takes the chunk's lock if it is free now, reading its tags into `tags`; false when it was
// held.
bool try_lock_chunk(RemoteQpnChunk& chunk, std::uint32_t& tags) noexcept {
  tags = chunk.ctl.load(std::memory_order_relaxed);
  // Acquire, partner: unlock_chunk()'s release store by the previous holder.
  return (tags & kLocked) == 0 &&
         chunk.ctl.compare_exchange_strong(tags, tags | kLocked, std::memory_order_acquire,
                                           std::memory_order_relaxed);
}

// The chunk's lock, waited for: returns its tags, which stay as they are until unlock_chunk()
// (only the holder changes them). Contended only by keys sharing a home chunk and by claims and
// releases of entries stored in this chunk, each holding it for one walk; yields rather than
// spins because the holder may be preempted on a shared core.
std::uint32_t lock_chunk(RemoteQpnChunk& chunk) noexcept {
  std::uint32_t tags = 0;
  while (!try_lock_chunk(chunk, tags)) std::this_thread::yield();
  return tags;
}

// Frees the chunk's lock, publishing `tags`.
void unlock_chunk(RemoteQpnChunk& chunk, std::uint32_t tags) noexcept {
  // Release, partners: the next holder's acquiring compare-and-swap, and the relaxed loads of
  // the tags by walk() and find(), which need only coherence (see walk()).
  chunk.ctl.store(tags, std::memory_order_release);
}

std::uint32_t tag_field(std::uint32_t slot) noexcept { return kTagField << kTagBits * slot; }

// Records `key` for `owner` in free slot `i` of `chunk`, whose lock the caller holds with `tags`.
// Returns the tags with the slot's set to `tag`.
std::uint32_t fill_slot(RemoteQpnChunk& chunk, std::uint32_t i, engine::RemoteQpnKey key,
                        Id owner, std::uint32_t tag, std::uint32_t tags) noexcept {
  // Relaxed: ordered by the lock. The tag became 0 under it after the head was freed, and after
  // the releasing thread's last reads of the entry.
  const std::uint64_t head = chunk.head[i].load(std::memory_order_relaxed);
  // Release, partner: walk()'s acquire loads of the fields. A reader that gets one of these
  // values also sees the load above, so its second load of the head (later in the head's order)
  // differs from its first and it drops what it read.
  chunk.guid[i].store(key.ca_guid, std::memory_order_release);
  chunk.owner[i].store(owner.raw, std::memory_order_release);
  // Release, partner: walk()'s first (acquire) load of the head: who sees the entry sees its
  // fields.
  chunk.head[i].store(changed(head, key.qpn), std::memory_order_release);
  return tags | tag << kTagBits * i;
}

}  // namespace

RemoteQpnRegistry::RemoteQpnRegistry(std::uint32_t capacity)
    : capacity_(runtime::checked_capacity("RemoteQpnRegistry", capacity, kMaxCapacity)),
      chunk_count_((capacity_ + kEntriesPerChunk - 1) / kEntriesPerChunk),
      guid_seed_(random_seed()),
      // The high bit keeps the multiplier's QPN half from ever being zero.
      qpn_seed_(random_seed() | std::uint64_t{1} << 63),
      storage_(chunk_count_, engine::DemandZeroArray<RemoteQpnChunkStorage>::Pages::huge),
      chunks_(construct_chunks(storage_)) {}

RemoteQpnRegistry::~RemoteQpnRegistry() = default;  // chunks are trivially destructible

RemoteQpnChunk* RemoteQpnRegistry::construct_chunks(engine::DemandZeroArray<RemoteQpnChunkStorage>& storage) noexcept {
  static_assert(std::is_trivially_destructible_v<RemoteQpnChunk>);
  // Value-initialized: every word 0, and every page touched now rather than by the first lookups.
  for (std::size_t i = 0; i < storage.size(); ++i) new (&storage[i]) RemoteQpnChunk();
  return std::launder(reinterpret_cast<RemoteQpnChunk*>(&storage[0]));
}

RemoteQpnRegistry::Home RemoteQpnRegistry::home_of(engine::RemoteQpnKey key) const noexcept {
  // One widening multiply of the two seeded halves, folded: the result depends on every key bit
  // and on the secret seeds non-linearly, so peers cannot pick keys that share a chunk. Alone it
  // is a multiplicative hash of the QPN with a random multiplier, which piles sequential QPNs
  // (the usual case) onto a few chunks for about one seed in ten (multipliers near a fraction
  // with a small denominator); a xor-shift and a multiply by a fixed odd constant spread them
  // as a random function would (measured over 12,000 seeds). The high half picks the chunk, the
  // low bits the tag (odd: never 0, the free slot's).
  const Product product = Product{key.ca_guid ^ guid_seed_} * (key.qpn ^ qpn_seed_);
  std::uint64_t hash =
      static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
  hash = (hash ^ hash >> 32) * 0x9E37'79B9'7F4A'7C15;
  return Home{.chunk = static_cast<std::uint32_t>((hash >> 32) * chunk_count_ >> 32),
              .tag = static_cast<std::uint32_t>(hash & kTagField) | 1};
}

// Inlined into release(), which always walks; find() and claim_slowly() call walk(), so that
// their common case (nothing_at_home()) stays straight-line code needing few registers.
[[gnu::always_inline]] inline RemoteQpnRegistry::Walk RemoteQpnRegistry::walk_inline(
    engine::RemoteQpnKey key, Home home) const noexcept {
  const std::uint32_t pattern = home.tag * kTagLows;
  std::uint32_t at = home.chunk;
  do {
    const RemoteQpnChunk& chunk = chunks_[at];
    // Relaxed: the tags only choose which heads to read. A walk that must see an entry (its
    // claim happened before the walk) sees its tag by coherence; the heads decide.
    for (std::uint32_t marks = equal_tags(chunk.ctl.load(std::memory_order_relaxed), pattern);
         marks != 0; marks &= marks - 1) {
      const std::uint32_t i = first_slot(marks);
      // Acquire, partner: fill_slot()'s release store of the head publishing the entry.
      const std::uint64_t head = chunk.head[i].load(std::memory_order_acquire);
      if ((head & (kHolds | kQpnBits)) != (kHolds | key.qpn)) continue;
      // Acquire, partner: fill_slot()'s release stores of the fields (see there).
      if (chunk.guid[i].load(std::memory_order_acquire) != key.ca_guid) continue;
      const std::uint64_t owner = chunk.owner[i].load(std::memory_order_acquire);
      // Relaxed: an unchanged head means the fields read were the entry's (see fill_slot()); a
      // changed one, that the entry was released meanwhile: the caller ran concurrently with
      // that release and may miss the entry.
      if (chunk.head[i].load(std::memory_order_relaxed) != head) continue;
      return Walk{.found = true, .chunk = at, .slot = i, .head = head, .owner = Id{owner}};
    }
    if (chunk.overflow.load(std::memory_order_relaxed) == 0) break;
    at = next(at);
  } while (at != home.chunk);
  return Walk{};
}

[[gnu::noinline]] RemoteQpnRegistry::Walk RemoteQpnRegistry::walk(engine::RemoteQpnKey key,
                                                                  Home home) const noexcept {
  return walk_inline(key, home);
}

bool RemoteQpnRegistry::nothing_at_home(Home home, std::uint32_t tags) const noexcept {
  return equal_tags(tags, home.tag * kTagLows) == 0 &&
         chunks_[home.chunk].overflow.load(std::memory_order_relaxed) == 0;  // see walk()
}

void RemoteQpnRegistry::prefetch(engine::RemoteQpnKey key) const noexcept {
  static_assert(sizeof(RemoteQpnChunk) == 128, "a chunk is two cache lines");
  const auto* chunk = reinterpret_cast<const std::byte*>(&chunks_[home_of(key).chunk]);
  __builtin_prefetch(chunk, 1);
  __builtin_prefetch(chunk + 64, 1);
}

std::optional<Id> RemoteQpnRegistry::find(engine::RemoteQpnKey key) const noexcept {
  const Home home = home_of(key);
  // Relaxed, as in walk().
  if (nothing_at_home(home, chunks_[home.chunk].ctl.load(std::memory_order_relaxed))) {
    return std::nullopt;
  }
  const Walk w = walk(key, home);
  return w.found ? std::optional<Id>(w.owner) : std::nullopt;
}

std::optional<Id> RemoteQpnRegistry::claim(engine::RemoteQpnKey key, Id owner) noexcept {
  const Home home = home_of(key);
  std::uint32_t tags = 0;
  const bool locked = try_lock_chunk(chunks_[home.chunk], tags);
  // The common case, without a call (so it needs few registers): the home lock was free, and
  // the key is absent with room at home. Under the home lock no one else records or erases
  // `key`, so "absent" stays true until record() inserts it.
  if (locked && nothing_at_home(home, tags) && equal_tags(tags, 0) != 0) {
    record(key, owner, home, tags);
    return std::nullopt;
  }
  return claim_slowly(key, owner, home, locked ? tags : kLocked);
}

[[gnu::noinline]] std::optional<Id> RemoteQpnRegistry::claim_slowly(engine::RemoteQpnKey key,
                                                                    Id owner, Home home,
                                                                    std::uint32_t tags) noexcept {
  RemoteQpnChunk& chunk = chunks_[home.chunk];
  if (tags == kLocked) tags = lock_chunk(chunk);
  const Walk w = walk(key, home);
  if (!w.found) {
    record(key, owner, home, tags);
    return std::nullopt;
  }
  unlock_chunk(chunk, tags);
  return w.owner == owner ? std::nullopt : std::optional<Id>(w.owner);
}

inline void RemoteQpnRegistry::record(engine::RemoteQpnKey key, Id owner, Home home,
                                      std::uint32_t tags) noexcept {
  RemoteQpnChunk& chunk = chunks_[home.chunk];
  if (const std::uint32_t free = equal_tags(tags, 0); free != 0) {
    unlock_chunk(chunk, fill_slot(chunk, first_slot(free), key, owner, home.tag, tags));
    return;
  }
  record_past_home(key, owner, home, tags);
}

void RemoteQpnRegistry::record_past_home(engine::RemoteQpnKey key, Id owner, Home home,
                                         std::uint32_t tags) noexcept {
  std::uint32_t at = home.chunk;
  for (std::uint32_t walked = 1; walked != chunk_count_; ++walked) {
    chunks_[at].overflow.fetch_add(1, std::memory_order_relaxed);  // passed over: see overflow
    at = next(at);
    // Only if its lock is free: waiting for it while holding the home lock could deadlock with
    // claims walking around the table, so a held lock counts as a full chunk.
    RemoteQpnChunk& chunk = chunks_[at];
    std::uint32_t there = 0;
    if (!try_lock_chunk(chunk, there)) continue;
    const std::uint32_t free = equal_tags(there, 0);
    if (free == 0) {
      unlock_chunk(chunk, there);
      continue;
    }
    unlock_chunk(chunk, fill_slot(chunk, first_slot(free), key, owner, home.tag, there));
    unlock_chunk(chunks_[home.chunk], tags);
    return;
  }
  // Every other chunk was full or locked when this claim passed it: the table is full, or (below
  // capacity, two fifths of the slots being free) other threads held the locks of the chunks with
  // room. Give back the counts.
  for (std::uint32_t passed = home.chunk; passed != at; passed = next(passed)) {
    chunks_[passed].overflow.fetch_sub(1, std::memory_order_relaxed);
  }
  unlock_chunk(chunks_[home.chunk], tags);
  full_claims_.fetch_add(1, std::memory_order_relaxed);
}

void RemoteQpnRegistry::release(engine::RemoteQpnKey key, Id owner) noexcept {
  const Home home = home_of(key);
  RemoteQpnChunk& chunk = chunks_[home.chunk];
  const std::uint32_t tags = lock_chunk(chunk);
  const Walk w = walk_inline(key, home);
  if (!w.found || w.owner != owner) {
    unlock_chunk(chunk, tags);
    return;
  }
  // The head read is current: an occupied slot changes only by a release of its key, and those
  // hold this home lock. Relaxed: a walk that sees the slot free reads nothing more, and the
  // claim that takes it next is ordered by the chunk lock (the tag is cleared below).
  chunks_[w.chunk].head[w.slot].store(changed(w.head, 0), std::memory_order_relaxed);
  if (w.chunk == home.chunk) {
    unlock_chunk(chunk, tags & ~tag_field(w.slot));
  } else {
    for (std::uint32_t at = home.chunk; at != w.chunk; at = next(at)) {
      chunks_[at].overflow.fetch_sub(1, std::memory_order_relaxed);
    }
    unlock_chunk(chunk, tags);
    // Only now, as holding two locks could deadlock. Until the tag is cleared the slot is free
    // but not offered: walks skip it by its head, claims by its tag.
    RemoteQpnChunk& there = chunks_[w.chunk];
    unlock_chunk(there, lock_chunk(there) & ~tag_field(w.slot));
  }
}

}  // namespace fastcm::shards
