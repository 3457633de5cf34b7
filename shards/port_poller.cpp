#include "shards/port_poller.h"

#include "shards/shard.h"

namespace fastcm::shards {

PortPoller::PortPoller(Fabric& fabric, std::uint16_t port_index, engine::MadPool& pool, ShardSet& shards,
                       engine::CidLayout layout) noexcept
    : fabric_(fabric), port_index_(port_index), pool_(pool), shards_(shards), layout_(layout) {}

PortPoller::~PortPoller() {
  for (std::size_t i = 0; i < spares_ready_; ++i) engine::release(pool_, spares_[i]);
}

void PortPoller::refill() noexcept {
  while (spares_ready_ < kBurst) {
    engine::MadBuf* buf = pool_.get();
    if (buf == nullptr) break;  // pool exhausted: receive fewer; the fabric queue holds the rest
    spares_[spares_ready_++] = buf;
  }
}

std::uint32_t PortPoller::shard_for(const engine::RoutingKey& key) const noexcept {
  const std::uint32_t shards = shards_.shard_count();
  switch (key.kind) {
    case engine::RoutingKey::Kind::local_comm_id: {
      // A CID naming no shard of ours still needs an answer (REJ / DREP): any shard gives it.
      const std::uint32_t shard = layout_.shard_of(key.comm_id);
      return shard < shards ? shard : shard % shards;
    }
    case engine::RoutingKey::Kind::remote_qp:
      // Where every shard's worker polls a port, the worker that received a REQ makes its endpoint,
      // whose later MADs then arrive where it lives; duplicate and stale checks stay exact across
      // shards (Protocol::on_req passes a REQ whose remote QP another shard's endpoint holds to
      // that shard). With more shards than ports, REQs spread by hash instead, so that the shards
      // whose workers poll no port take their share of the passive side.
      if (shards <= fabric_.ports().size()) break;
      [[fallthrough]];
    case engine::RoutingKey::Kind::sidr_request: return ShardSet::hashed(key.origin, key.id, shards);
    case engine::RoutingKey::Kind::any_shard: return 0;  // the chain starts at shard 0 (shard.h)
    case engine::RoutingKey::Kind::unrouted: break;
  }
  return shards_.port_shard(port_index_);
}

std::size_t PortPoller::poll_once(Shard& local) noexcept {
  refill();
  if (spares_ready_ == 0) return 0;
  std::array<MadPacket*, kBurst> packets;
  for (std::size_t i = 0; i < spares_ready_; ++i) packets[i] = &spares_[i]->packet;
  const std::size_t n = fabric_.recv_burst(port_index_, std::span<MadPacket* const>(packets.data(), spares_ready_));
  if (n == 0) return 0;

  // Group the burst by shard (order kept within each), then one inbox burst per shard.
  const std::uint32_t shards = shards_.shard_count();
  std::array<std::array<engine::MadBuf*, kBurst>, kMaxShards> by_shard;
  std::array<std::uint8_t, kMaxShards> counts{};
  for (std::size_t i = 0; i < n; ++i) {
    engine::MadBuf* buf = spares_[i];
    buf->packet.addr.port_index = port_index_;
    const engine::RoutingKey key = engine::routing_key(mad::ConstMadSpan(buf->packet.mad), buf->packet.addr);
    const std::uint32_t shard = shard_for(key);
    if (key.kind == engine::RoutingKey::Kind::any_shard) {
      engine::MadBuf* one[] = {buf};
      if (shards_.shard(shard).post_mads(one, InboxItem::Kind::mad_chain) == 0) {
        inbox_full_.fetch_add(1, std::memory_order_relaxed);
        engine::release(pool_, buf);
      }
      continue;
    }
    by_shard[shard][counts[shard]++] = buf;
  }
  const std::uint32_t here = local.index();
  for (std::uint32_t s = 0; s < shards; ++s) {
    if (counts[s] == 0 || s == here) continue;
    const std::span<engine::MadBuf* const> burst(by_shard[s].data(), counts[s]);
    const std::size_t posted = shards_.shard(s).post_mads(burst, InboxItem::Kind::mad);
    for (std::size_t i = posted; i < burst.size(); ++i) engine::release(pool_, burst[i]);
    if (posted < burst.size()) inbox_full_.fetch_add(burst.size() - posted, std::memory_order_relaxed);
    forwarded_.fetch_add(posted, std::memory_order_relaxed);
  }
  // The filled buffers now belong to the shards; the unfilled ones move to the front, and the
  // spares are made whole before any shard handles this burst (from the receive reserve, which the
  // shards' charged takes never reach: mempool/mad_accounts.h).
  for (std::size_t i = n; i < spares_ready_; ++i) spares_[i - n] = spares_[i];
  spares_ready_ -= n;
  refill();
  if (counts[here] != 0) local.handle_received({by_shard[here].data(), counts[here]});
  return n;
}

}  // namespace fastcm::shards
