#include "shards/listen_registry.h"

#include <atomic>
#include <bit>
#include <cassert>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/checked_capacity.h"

namespace fastcm::shards {

// Immutable once published: shards read it while the writer builds the next one.
struct ListenRegistry::Snapshot {
  ListenRegistry* owner;
  std::vector<engine::Listen> by_precedence;  // the live listens, in match() precedence order
};

namespace {

using engine::kListenGenerationTag;
using engine::Listen;

// A slot's first generation (tag clear: no listen yet). Its first listen gets kListenGenerationTag
// | 1; each remove moves the slot to the next generation, tag cleared until the next add.
constexpr std::uint32_t kFirstGeneration = 1;

constexpr std::uint64_t backlog_word_of(std::uint32_t generation, std::uint32_t count) noexcept {
  return std::uint64_t{generation} << 32 | count;
}
constexpr std::uint32_t generation_of(std::uint64_t word) noexcept {
  return static_cast<std::uint32_t>(word >> 32);
}
constexpr std::uint32_t count_of(std::uint64_t word) noexcept {
  return static_cast<std::uint32_t>(word);
}

// match() order: more mask bits first, then port-specific before every-port, then lower slot.
bool precedes(const Listen& a, const Listen& b) noexcept {
  const int bits_a = std::popcount(a.params.service_mask);
  const int bits_b = std::popcount(b.params.service_mask);
  if (bits_a != bits_b) return bits_a > bits_b;
  const bool port_a = a.params.port != 0;
  const bool port_b = b.params.port != 0;
  if (port_a != port_b) return port_a;
  return a.id.comm_id() < b.id.comm_id();
}

bool same_service(const ListenParams& a, const ListenParams& b) noexcept {
  return a.port == b.port && a.service_mask == b.service_mask &&
         ((a.service_id ^ b.service_id) & a.service_mask) == 0;
}

}  // namespace

ListenRegistry::ListenRegistry(std::uint32_t capacity, Epoch& epoch)
    : capacity_(runtime::checked_capacity("ListenRegistry", capacity, kMaxCapacity)),
      backlog_(std::make_unique<std::atomic<std::uint64_t>[]>(capacity)),
      retired_(epoch, kRetireCapacity, "listen_retire") {
  for (std::uint32_t slot = 0; slot < capacity; ++slot) {
    backlog_[slot].store(backlog_word_of(kFirstGeneration, 0), std::memory_order_relaxed);
  }
  // Release: partner of match()'s acquire load (shards started after this see it anyway).
  current_.store(new Snapshot{this, {}}, std::memory_order_release);
  published_.store(1, std::memory_order_relaxed);
}

ListenRegistry::~ListenRegistry() { free_snapshot(current_.load(std::memory_order_relaxed)); }

Status ListenRegistry::add(const ListenParams& params, Id& out) noexcept {
  if (!params.delivery.valid() || params.backlog == 0) return Status::invalid_argument;

  const std::lock_guard lock(mutex_);
  // Relaxed: current_ is only stored under mutex_, which this thread holds.
  const Snapshot& now = *current_.load(std::memory_order_relaxed);
  for (const Listen& listen : now.by_precedence) {
    if (alive(listen) && same_service(listen.params, params)) return Status::service_in_use;
  }
  // Relaxed: a slot's generation is only written under mutex_; shards change only its count.
  auto slot_taken = [this](std::uint32_t slot) {
    return (generation_of(backlog_[slot].load(std::memory_order_relaxed)) &
            kListenGenerationTag) != 0;
  };
  std::uint32_t slot = 0;
  while (slot < capacity_ && slot_taken(slot)) ++slot;
  if (slot == capacity_ || !retired_.has_room()) return Status::no_resources;

  const std::uint32_t generation =
      generation_of(backlog_[slot].load(std::memory_order_relaxed)) | kListenGenerationTag;
  const Listen added{params, Id::make(slot, generation)};
  Snapshot* next = next_snapshot(&added);
  if (next == nullptr) return Status::no_resources;
  // Live before any shard can match it (publish()'s release store orders this store first).
  backlog_[slot].store(backlog_word_of(generation, 0), std::memory_order_relaxed);
  publish(next);
  out = added.id;
  return Status::ok;
}

Status ListenRegistry::remove(Id id) noexcept {
  std::atomic<std::uint64_t>* word = backlog_word(id);
  if (word == nullptr) return Status::stale_id;

  const std::lock_guard lock(mutex_);
  // Relaxed: generations are only written under mutex_, which this thread holds.
  if (generation_of(word->load(std::memory_order_relaxed)) != id.generation()) {
    return Status::stale_id;
  }
  // Dead first: from here match() skips the listen and take_backlog() fails for it, in every
  // snapshot shards may still read, and release_backlog() is ignored. The count goes with it.
  // Relaxed: the shards' compare-and-swaps always see the latest value of the word; a match()
  // racing with this store at worst finds the listen and then fails take_backlog().
  const std::uint32_t dead = (id.generation() + 1) & ~kListenGenerationTag;
  word->store(backlog_word_of(dead, 0), std::memory_order_relaxed);
  // A snapshot without it only saves readers the check: when a stalled shard keeps the retire
  // queue full, the removal stands anyway and the next publish drops the listen.
  if (retired_.has_room()) {
    if (Snapshot* next = next_snapshot(nullptr)) publish(next);
  }
  return Status::ok;
}

bool ListenRegistry::alive(const Listen& listen) const noexcept {
  // Relaxed: see remove(); the word's generation is the listen's only while it is live.
  return generation_of(backlog_[listen.id.comm_id()].load(std::memory_order_relaxed)) == listen.id.generation();
}

ListenRegistry::Snapshot* ListenRegistry::next_snapshot(const Listen* added) noexcept {
  // Relaxed: current_ is only stored under mutex_, which the caller holds.
  const Snapshot& now = *current_.load(std::memory_order_relaxed);
  try {
    std::vector<Listen> listens;
    listens.reserve(now.by_precedence.size() + (added != nullptr ? 1 : 0));
    for (const Listen& listen : now.by_precedence) {
      if (added != nullptr && precedes(*added, listen)) {
        listens.push_back(*added);
        added = nullptr;
      }
      if (alive(listen)) listens.push_back(listen);
    }
    if (added != nullptr) listens.push_back(*added);
    return new Snapshot{this, std::move(listens)};
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void ListenRegistry::publish(Snapshot* next) noexcept {
  Snapshot* old = current_.load(std::memory_order_relaxed);
  // Release: partner of match()'s acquire load; publishes the snapshot's contents and the backlog
  // word add() stored before it.
  current_.store(next, std::memory_order_release);
  published_.fetch_add(1, std::memory_order_relaxed);
  // The caller checked has_room() under mutex_ and this queue has no other writer, so this
  // cannot be refused.
  [[maybe_unused]] const bool retired = retired_.defer(free_snapshot, old);
  assert(retired);
  retired_.reclaim();
}

std::size_t ListenRegistry::reclaim() noexcept {
  const std::lock_guard lock(mutex_);
  return retired_.reclaim();
}

void ListenRegistry::free_snapshot(void* snapshot) noexcept {
  auto* s = static_cast<Snapshot*>(snapshot);
  s->owner->freed_.fetch_add(1, std::memory_order_relaxed);
  delete s;
}

const Listen* ListenRegistry::match(std::uint64_t service_id, std::uint8_t port_num) noexcept {
  // Acquire: partner of publish()'s release store.
  const Snapshot* snapshot = current_.load(std::memory_order_acquire);
  for (const Listen& listen : snapshot->by_precedence) {
    if ((listen.params.port == 0 || listen.params.port == port_num) &&
        ((service_id ^ listen.params.service_id) & listen.params.service_mask) == 0 && alive(listen)) {
      return &listen;  // the first in precedence order is the best
    }
  }
  return nullptr;
}

// The backlog words carry nothing but themselves, so relaxed order suffices for the shards:
// each compare-and-swap acts on the word's latest value, which keeps generation and count
// consistent.

bool ListenRegistry::take_backlog(const Listen& listen) noexcept {
  std::atomic<std::uint64_t>& word = backlog_[listen.id.comm_id()];
  std::uint64_t seen = word.load(std::memory_order_relaxed);
  do {
    if (generation_of(seen) != listen.id.generation() || count_of(seen) >= listen.params.backlog) {
      return false;
    }
  } while (!word.compare_exchange_weak(seen, seen + 1, std::memory_order_relaxed));
  return true;
}

void ListenRegistry::release_backlog(engine::BacklogRef ref) noexcept {
  std::atomic<std::uint64_t>* word = backlog_word(ref);
  if (word == nullptr) return;
  std::uint64_t seen = word->load(std::memory_order_relaxed);
  do {
    if (generation_of(seen) != ref.generation() || count_of(seen) == 0) return;
  } while (!word->compare_exchange_weak(seen, seen - 1, std::memory_order_relaxed));
}

bool ListenRegistry::live(Id id) const noexcept {
  const std::atomic<std::uint64_t>* word = backlog_word(id);
  return word != nullptr &&
         generation_of(word->load(std::memory_order_relaxed)) == id.generation();
}

std::atomic<std::uint64_t>* ListenRegistry::backlog_word(Id id) const noexcept {
  if (!engine::is_listen_id(id) || id.comm_id() >= capacity_) return nullptr;
  return &backlog_[id.comm_id()];
}

}  // namespace fastcm::shards
