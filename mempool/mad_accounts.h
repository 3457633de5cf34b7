// The MAD accounts of an engine (fastcm/engine.h, EngineConfig::mad_buffers): per shard, the
// credits of the two halves of the handshake part (MADs endpoints keep to resend; received MADs
// kept after their handling) and of the answer reserve. A buffer charged to an account carries its
// (shard, account) tag, so whichever thread gives the last reference back returns the credit to
// the shard that took it. The receive reserve has no credits: its buffers are bounded by the
// pollers' bursts and the shards' inboxes, and the pool holds room for all of them beside the
// accounts, so nothing the protocol keeps can take a poller's buffer.
//
// Per shard, so a shard's gets touch its own counters (another thread only when it returns a MAD
// the shard charged).
// Thread contract: any thread; take and give are lock-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/endpoint_budget.h"
#include "engine/mad_buf.h"
#include "fastcm/counters.h"

namespace fastcm::mempool {

struct MadAccountLimits {
  std::uint32_t sent = 0;    // per shard
  std::uint32_t kept = 0;    // per shard
  std::uint32_t answer = 0;  // per shard
};

class MadAccounts {
 public:
  static constexpr std::uint32_t kMaxShards = 64;  // a tag holds 6 bits of shard

  // `shards` 1..kMaxShards. Throws std::bad_alloc.
  MadAccounts(std::uint32_t shards, const MadAccountLimits& per_shard);

  // Takes one credit of `shard`'s `account` (not receive); false, taking nothing, when none is left.
  [[nodiscard]] bool take(std::uint32_t shard, engine::MadAccount account) noexcept {
    return counter(shard, account).take();
  }
  // See engine::MadPool::room_for_handshake: the admission mark keeps 1/8 of the kept half (at
  // least one credit) free for the handshakes in progress. A REQ asking is being handled with a
  // kept credit of its own, counted in used(). `idle_kept`: kept credits the caller holds for no
  // MAD (AccountedMadPool's spare), not counted as taken.
  [[nodiscard]] bool room_for_handshake(std::uint32_t shard, std::uint32_t idle_kept) const noexcept {
    const ShardCredits& c = *shards_[shard];
    const std::uint32_t headroom = std::max<std::uint32_t>(1, c.kept.limit() / 8);
    return c.sent.used() < c.sent.limit() && c.kept.used() - idle_kept + headroom < c.kept.limit();
  }
  // Gives back the credit a buffer's tag names (0, the receive reserve: nothing).
  void give(std::uint8_t tag) noexcept {
    if (tag != 0) counter(tag >> 2, static_cast<engine::MadAccount>(tag & 3)).give();
  }
  // What a buffer charged to `shard`'s `account` carries (engine::MadRef::account).
  [[nodiscard]] static constexpr std::uint8_t tag(std::uint32_t shard, engine::MadAccount account) noexcept {
    return account == engine::MadAccount::receive
               ? std::uint8_t{0}
               : static_cast<std::uint8_t>(shard << 2 | static_cast<std::uint32_t>(account));
  }
  // Credits of the handshake part taken now (sent + kept), of one shard or of all: a snapshot.
  [[nodiscard]] std::uint32_t shard_in_use(std::uint32_t shard) const noexcept {
    return shards_[shard]->sent.used() + shards_[shard]->kept.used();
  }
  [[nodiscard]] std::uint32_t handshake_in_use() const noexcept;
  // One shard's sent or kept half (fastcm::Level: now, high-water mark, limit). Any thread.
  [[nodiscard]] Level level(std::uint32_t shard, engine::MadAccount account) const noexcept {
    const engine::EndpointBudget& c = const_cast<MadAccounts&>(*this).counter(shard, account);
    return Level{.now = c.used(), .high_water = c.high_water(), .limit = c.limit()};
  }

 private:
  struct alignas(64) ShardCredits {
    explicit ShardCredits(const MadAccountLimits& l) : sent(l.sent), kept(l.kept), answer(l.answer) {}
    engine::EndpointBudget sent;
    engine::EndpointBudget kept;
    engine::EndpointBudget answer;
  };
  [[nodiscard]] engine::EndpointBudget& counter(std::uint32_t shard, engine::MadAccount account) noexcept {
    ShardCredits& c = *shards_[shard];
    return account == engine::MadAccount::sent ? c.sent : account == engine::MadAccount::kept ? c.kept : c.answer;
  }

  std::vector<std::unique_ptr<ShardCredits>> shards_;
};

}  // namespace fastcm::mempool
