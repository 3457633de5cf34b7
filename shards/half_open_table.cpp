#include "shards/half_open_table.h"

#include <algorithm>
#include <array>
#include <bit>
#include <stdexcept>

namespace fastcm::shards {

namespace {

constexpr std::uint32_t kCountMask = HalfOpenTable::kMaxPerSource;
constexpr unsigned kStandingShift = 24;
constexpr std::uint32_t kMaxStanding = 0xFF;

constexpr std::uint32_t count_of(std::uint32_t word) noexcept { return word & kCountMask; }
constexpr std::uint32_t standing_of(std::uint32_t word) noexcept { return word >> kStandingShift; }

constexpr std::uint64_t listen_word(std::uint32_t generation, std::uint32_t count) noexcept {
  return std::uint64_t{generation} << 32 | count;
}
constexpr std::uint32_t generation_of(std::uint64_t word) noexcept { return static_cast<std::uint32_t>(word >> 32); }
constexpr std::uint32_t listen_count_of(std::uint64_t word) noexcept { return static_cast<std::uint32_t>(word); }

}  // namespace

HalfOpenTable::HalfOpenTable(const Limits& limits, const engine::SipKey& key)
    : limits_(limits),
      hasher_(key),
      sources_(limits.source_slots),
      listens_(std::make_unique<std::atomic<std::uint64_t>[]>(limits.listens)) {
  if (limits.per_source == 0 || limits.per_source > kMaxPerSource || limits.per_listen == 0 ||
      limits.listens == 0 || !std::has_single_bit(limits.source_slots)) {
    throw std::invalid_argument("HalfOpenTable: a limit out of range");
  }
}

std::uint32_t HalfOpenTable::slot_of(const MadAddress& from) const noexcept {
  // The port's index in the tail (a LID and a GID name a source on one subnet, seen on one port).
  std::uint64_t hash = 0;
  if (from.grh.present) {
    const Gid& gid = from.grh.remote_gid;
    const std::array<std::uint64_t, 2> words{gid.subnet_prefix(), gid.interface_id()};
    hash = hasher_.hash<1, 3>(words, from.port_index, 2);
  } else {
    hash = hasher_.hash<1, 3>(std::uint64_t{from.remote_lid} << 16 | from.port_index, 4);
  }
  return static_cast<std::uint32_t>(hash) & (limits_.source_slots - 1);
}

engine::HalfOpenBudget::Admission HalfOpenTable::admit(const MadAddress& from, engine::BacklogRef listen) noexcept {
  const std::uint32_t slot = slot_of(from);
  std::atomic_ref<std::uint32_t> word = source_word(slot);
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  do {
    if (count_of(seen) >= limits_.per_source) return Admission{.refused = Refusal::source, .source = slot};
  } while (!word.compare_exchange_weak(seen, seen + 1, std::memory_order_relaxed));
  if (!take_listen(listen)) {
    word.fetch_sub(1, std::memory_order_relaxed);  // the count we took: at least 1, no borrow
    return Admission{.refused = Refusal::listen, .source = slot};
  }
  return Admission{.source = slot, .unanswering = standing_of(seen) >= kUnansweringAfter};
}

void HalfOpenTable::settle(std::uint32_t source, engine::BacklogRef listen, Settled how) noexcept {
  give_listen(listen);
  if (source >= limits_.source_slots) return;
  std::atomic_ref<std::uint32_t> word = source_word(source);
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  std::uint32_t next = 0;
  do {
    if (count_of(seen) == 0) return;  // not counted: settle() without its admit()
    std::uint32_t standing = standing_of(seen);
    if (how == Settled::answered) standing = 0;
    if (how == Settled::unanswered) standing = std::min(standing + 1, kMaxStanding);
    next = standing << kStandingShift | (count_of(seen) - 1);
  } while (!word.compare_exchange_weak(seen, next, std::memory_order_relaxed));
}

bool HalfOpenTable::take_listen(engine::BacklogRef listen) noexcept {
  const std::uint32_t slot = listen.comm_id();
  if (slot >= limits_.listens) return false;
  std::atomic<std::uint64_t>& word = listens_[slot];
  std::uint64_t seen = word.load(std::memory_order_relaxed);
  std::uint64_t next = 0;
  do {
    // Another generation: the slot's earlier listen, whose handshakes died with it.
    const std::uint32_t count = generation_of(seen) == listen.generation() ? listen_count_of(seen) : 0;
    if (count >= limits_.per_listen) return false;
    next = listen_word(listen.generation(), count + 1);
  } while (!word.compare_exchange_weak(seen, next, std::memory_order_relaxed));
  return true;
}

void HalfOpenTable::give_listen(engine::BacklogRef listen) noexcept {
  const std::uint32_t slot = listen.comm_id();
  if (slot >= limits_.listens) return;
  std::atomic<std::uint64_t>& word = listens_[slot];
  std::uint64_t seen = word.load(std::memory_order_relaxed);
  do {
    if (generation_of(seen) != listen.generation() || listen_count_of(seen) == 0) return;
  } while (!word.compare_exchange_weak(seen, seen - 1, std::memory_order_relaxed));
}

std::uint32_t HalfOpenTable::source_handshakes(const MadAddress& from) const noexcept {
  return count_of(source_word(slot_of(from)).load(std::memory_order_relaxed));
}

std::uint32_t HalfOpenTable::source_unanswered(const MadAddress& from) const noexcept {
  return standing_of(source_word(slot_of(from)).load(std::memory_order_relaxed));
}

}  // namespace fastcm::shards
