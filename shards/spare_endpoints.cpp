#include "shards/spare_endpoints.h"

#include <rte_ring.h>

#include <string>

namespace fastcm::shards {

static_assert(sizeof(Id) == sizeof(std::uint64_t), "the ring's elements are raw Ids");

SpareEndpoints::SpareEndpoints(std::uint32_t shard)
    : ring_("spares" + std::to_string(shard), kTarget, RING_F_EXACT_SZ | RING_F_MP_HTS_ENQ | RING_F_MC_HTS_DEQ,
            sizeof(Id)) {}

std::size_t SpareEndpoints::top_up(engine::Protocol& protocol) noexcept {
  std::uint32_t have = count();
  if (have >= kLow) return 0;
  std::size_t made = 0;
  for (; have < kTarget; ++have) {
    Id id;
    if (protocol.create_spare(id) != Status::ok) break;  // the endpoint budget is spent
    // The shard is the only producer and the ring holds kTarget: there is room.
    (void)rte_ring_enqueue_elem(ring_.get(), &id.raw, sizeof(Id));
    ++made;
  }
  return made;
}

std::optional<Id> SpareEndpoints::take() noexcept {
  Id id;
  if (rte_ring_dequeue_elem(ring_.get(), &id.raw, sizeof(Id)) != 0) return std::nullopt;
  return id;
}

}  // namespace fastcm::shards
