// A shard's spare endpoints: idle endpoints the shard creates ahead of need (Protocol::create_spare)
// so that Engine::create_id from an application thread takes one without waiting for the shard
// (EngineConfig::posted_calls > 0, fastcm/engine.h). The shard keeps between kLow and kTarget of
// them in a ring; create_id takes one, hands it to the application (Protocol::adopt_spare) and
// returns.
//
// Bounds: kTarget per shard, from the engine's endpoint budget like any endpoint (they count
// toward max_endpoints; a full budget leaves the ring short, and create_id then asks the shard,
// which answers no_resources only once no spare is left either).
//
// Thread contract: top_up on the shard's thread only (the ring's one producer); take and count
// from any thread. The ring is HTS on both sides: its release/acquire pair on the tails (partners:
// top_up's enqueue, take's dequeue) publishes the shard's setup of each spare to the taker.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/protocol.h"
#include "fastcm/id.h"
#include "runtime/owned_ring.h"

namespace fastcm::shards {

class SpareEndpoints {
 public:
  static constexpr std::uint32_t kTarget = 256;
  static constexpr std::uint32_t kLow = kTarget * 3 / 4;  // top_up refills below this

  // Throws std::system_error / std::bad_alloc.
  explicit SpareEndpoints(std::uint32_t shard);

  // Refills the ring to kTarget once it is below kLow, or until the endpoint budget is spent.
  // Returns how many it created.
  std::size_t top_up(engine::Protocol& protocol) noexcept;
  // A spare endpoint's Id, now the caller's alone; nullopt when none is left. Never blocks.
  [[nodiscard]] std::optional<Id> take() noexcept;
  // Spares in the ring (a snapshot).
  [[nodiscard]] std::uint32_t count() const noexcept { return ring_.count(); }

 private:
  runtime::OwnedRing ring_;
};

}  // namespace fastcm::shards
