#include "shards/engine_config.h"

#include <algorithm>
#include <bit>

#include "engine/cid.h"
#include "shards/epoch.h"
#include "shards/half_open_table.h"
#include "shards/listen_registry.h"
#include "shards/port_poller.h"
#include "shards/remote_qpn_registry.h"
#include "shards/send_batch.h"
#include "shards/shard.h"
#include "shards/shard_inbox.h"

namespace fastcm::shards {

namespace {

constexpr std::uint64_t kMaxShardInbox = std::uint64_t{1} << 20;
constexpr std::uint64_t kMaxMadBuffers = std::uint64_t{1} << 24;
constexpr std::uint64_t kMaxPostedCalls = std::uint64_t{1} << 20;
// Port numbers are 8 bits (PortAttr::port_num), so a fabric has at most 255 ports.
constexpr std::size_t kMaxPorts = 255;
constexpr std::uint8_t kMaxTimeoutExponent = 31;
// No listen can hold more half-open handshakes than an engine has endpoints (about 2^23 at most).
constexpr std::uint32_t kMaxHalfOpenPerListen = std::uint32_t{1} << 24;
// Source words of the half-open table (shards/half_open_table.h): four per endpoint, so two
// sources share a word with probability 1 / (4 x max_endpoints), 2^-14 at most, in demand-zero
// memory (a source seen costs a page at most).
constexpr std::uint64_t kMinHalfOpenSourceSlots = std::uint64_t{1} << 14;
constexpr std::uint64_t half_open_source_slots(std::uint64_t max_endpoints) {
  return std::bit_ceil(std::max(kMinHalfOpenSourceSlots, 4 * max_endpoints));
}

// MAD buffers beyond EngineConfig::mad_buffers (the handshake part, engine.h):
// - the answer reserve: answers wait in the shard's send batch until it is flushed, at most
//   SendBatch::kCapacity of them, plus the one being written;
// - the receive reserve: the pollers' spare bursts and every shard's inbox full of MADs, so the
//   pollers always find a buffer to receive into, whatever the protocol holds;
// - with worker threads, what per-lcore mempool caches may strand (1.5 x cache per registered
//   thread, mad_mempool.h: the shards' workers and one more). Worker caches of 256 pass buffers
//   from a worker that received them (gets) to the one whose shard handles them (puts) through the
//   pool's ring once per 256 to 384 MADs instead of once per 32 to 48. With the caller's thread
//   the pool owns its one cache, which every get reaches: nothing is stranded.
constexpr std::uint64_t kAnswersPerShard = SendBatch::kCapacity + 1;
// Each half of a shard's share keeps room for a handshake beside the admission headroom
// (mempool/mad_accounts.h).
constexpr std::uint64_t kMinMadBuffersPerShard = 8;
constexpr std::uint64_t kWorkerPoolCache = 256;
constexpr std::uint64_t kCallerPoolCache = 32;

std::uint64_t pool_cache(const EngineConfig& config) {
  return config.threading == Threading::workers ? kWorkerPoolCache : kCallerPoolCache;
}
constexpr std::uint64_t pool_capacity(std::uint64_t mad_buffers, std::uint64_t shards, std::uint64_t shard_inbox,
                                      std::uint64_t ports, bool workers) {
  const std::uint64_t stranded = workers ? (shards + 1) * (kWorkerPoolCache * 3 / 2) : 0;
  return mad_buffers + shards * kAnswersPerShard + ports * PortPoller::kBurst + shards * shard_inbox + stranded;
}
// Within the limits check_config() enforces, the pool stays below rte_mempool's (its ring holds
// fewer than 2^31 elements) and below 2^32.
static_assert(pool_capacity(kMaxMadBuffers, kMaxShards, kMaxShardInbox, kMaxPorts, true) < (std::uint64_t{1} << 31));

// Slots per shard: small tables whole in every shard (any spread of REQs fits, as in one table),
// large ones twice the even share (REQs spread over the ports, or by hash, and a shard without
// room passes its REQs on); the budget keeps the total exact.
constexpr std::uint64_t table_size(std::uint64_t endpoints, std::uint64_t shards) {
  const std::uint64_t share = (endpoints + shards - 1) / shards;
  return std::min<std::uint64_t>(endpoints, std::max<std::uint64_t>(4096, 2 * share));
}

// What the rules below imply for the sizes they do not check one by one. The slot-field rule
// refuses every max_endpoints beyond the remote-QP registry's limit, at any shard count (a table
// grows with max_endpoints, so checking the first value beyond suffices).
constexpr bool slot_rule_bounds_the_registry() {
  for (std::uint32_t shards = 1; shards <= kMaxShards; ++shards) {
    if (table_size(RemoteQpnRegistry::kMaxCapacity + std::uint64_t{1}, shards) <= engine::CidLayout::max_slots(shards)) {
      return false;
    }
  }
  return true;
}
static_assert(slot_rule_bounds_the_registry());
// The registry's limit bounds max_endpoints (above), which keeps the source words' count in 32 bits.
static_assert(half_open_source_slots(RemoteQpnRegistry::kMaxCapacity) <= std::uint64_t{1} << 31);
// The destroy-queue rule bounds the table, which with the largest shard_inbox keeps the inbox
// ring within its limit.
static_assert(Shard::inbox_capacity(kMaxShardInbox, (DeferQueue::kMaxCapacity - Shard::kControlHeadroom) / 2,
                                    kMaxPostedCalls) <= ShardInbox::kMaxCapacity);

constexpr bool known(Threading t) noexcept { return t == Threading::workers || t == Threading::caller; }
constexpr bool known(EalOwner o) noexcept { return o == EalOwner::engine || o == EalOwner::application; }

ConfigError broke(ConfigField field, std::string_view rule) noexcept { return ConfigError{field, rule}; }

}  // namespace

std::optional<ConfigError> check_config(const EngineConfig& c, std::size_t ports) noexcept {
  using F = ConfigField;
  if (c.shards < 1 || c.shards > kMaxShards) return broke(F::shards, "must be 1..64");
  if (!known(c.threading)) return broke(F::threading, "must be Threading::workers or Threading::caller");
  if (!known(c.eal)) return broke(F::eal, "must be EalOwner::engine or EalOwner::application");
  if (ports < 1 || ports > kMaxPorts) return broke(F::fabric, "must have 1..255 ports");
  if (c.shard_inbox < 1 || c.shard_inbox > kMaxShardInbox) return broke(F::shard_inbox, "must be 1..2^20");
  // The slot-field rule also keeps max_endpoints within the remote-QP registry's 2^24 (see above).
  if (c.max_endpoints < 1) return broke(F::max_endpoints, "must be at least 1");
  const std::uint64_t table = table_size(c.max_endpoints, c.shards);
  if (table > engine::CidLayout::max_slots(c.shards)) {
    return broke(F::max_endpoints, "each shard's table must fit the comm ID's slot field (2^(24 - shard bits))");
  }
  if (Shard::retire_capacity(table) > DeferQueue::kMaxCapacity) {
    return broke(F::max_endpoints, "each shard's table must fit its destroy queue (2 x table + 1024 <= 2^24)");
  }
  if (c.max_listens < 1 || c.max_listens > ListenRegistry::kMaxCapacity) {
    return broke(F::max_listens, "must be 1..2^20");
  }
  if (c.mad_buffers < PortPoller::kBurst || c.mad_buffers > kMaxMadBuffers) {
    return broke(F::mad_buffers, "must be 32..2^24");
  }
  if (c.mad_buffers < kMinMadBuffersPerShard * std::uint64_t{c.shards}) {
    return broke(F::mad_buffers, "must give each shard at least 8 (4 per half)");
  }
  // Written so that NaN fails too.
  if (!(c.auto_mra_fraction >= 0 && c.auto_mra_fraction < 1)) {
    return broke(F::auto_mra_fraction, "must be at least 0 and below 1");
  }
  if (c.mra_service_timeout > kMaxTimeoutExponent) return broke(F::mra_service_timeout, "must be 0..31");
  if (c.half_open_per_source < 1 || c.half_open_per_source > HalfOpenTable::kMaxPerSource) {
    return broke(F::half_open_per_source, "must be 1..2^24 - 1");
  }
  if (c.half_open_per_listen < 1 || c.half_open_per_listen > kMaxHalfOpenPerListen) {
    return broke(F::half_open_per_listen, "must be 1..2^24");
  }
  if (c.posted_calls > kMaxPostedCalls) return broke(F::posted_calls, "must be 0..2^20");
  // idle_spins has no rule: 0 sleeps after the first empty poll, ~0u in effect never sleeps.
  return std::nullopt;
}

EngineSizing engine_sizing(const EngineConfig& config, std::size_t ports) noexcept {
  // Each shard's share of the handshake part, split in halves (the remainder of an odd share goes
  // to the received half); their sum never exceeds mad_buffers.
  const std::uint32_t share = config.mad_buffers / config.shards;
  const std::uint64_t capacity = pool_capacity(config.mad_buffers, config.shards, config.shard_inbox, ports,
                                               config.threading == Threading::workers);
  return EngineSizing{.endpoints_per_shard = static_cast<std::uint32_t>(table_size(config.max_endpoints, config.shards)),
                      .half_open_source_slots = static_cast<std::uint32_t>(half_open_source_slots(config.max_endpoints)),
                      .sent_per_shard = share / 2,
                      .kept_per_shard = share - share / 2,
                      .answers_per_shard = static_cast<std::uint32_t>(kAnswersPerShard),
                      .pool_capacity = static_cast<std::uint32_t>(capacity),
                      .pool_cache = static_cast<std::uint32_t>(pool_cache(config))};
}

}  // namespace fastcm::shards
