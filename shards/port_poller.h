// The receive side of one port: takes received MADs off the fabric into pooled buffers, reads
// each one's routing key and hands it to the shard that owns it: the MADs of the polling worker's
// own shard are handled there and then (run to completion), the others cross to their shard's
// inbox. It knows routing keys, not message layouts (engine/routing_key.h reads them).
//
// Thread contract: poll_once() on the port's worker (the thread of the shard that owns the port,
// or progress()'s caller), one at a time; inbox_full_drops() and forwarded() from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "engine/cid.h"
#include "engine/mad_buf.h"
#include "engine/routing_key.h"
#include "fastcm/fabric.h"

namespace fastcm::shards {

class Shard;
class ShardSet;

class PortPoller {
 public:
  static constexpr std::size_t kBurst = 32;

  PortPoller(Fabric& fabric, std::uint16_t port_index, engine::MadPool& pool, ShardSet& shards,
             engine::CidLayout layout) noexcept;
  ~PortPoller();
  PortPoller(const PortPoller&) = delete;
  PortPoller& operator=(const PortPoller&) = delete;

  // Receives one burst and routes it; returns how many MADs it received. The MADs of `local` (the
  // polling shard: its worker, or progress()'s caller running its batch) are handed to
  // local->handle_received() last, once the burst's other MADs are posted.
  std::size_t poll_once(Shard& local) noexcept;
  [[nodiscard]] std::uint16_t port_index() const noexcept { return port_index_; }

  // MADs dropped because their shard's inbox was full.
  [[nodiscard]] std::uint64_t inbox_full_drops() const noexcept {
    return inbox_full_.load(std::memory_order_relaxed);  // a statistic: no ordering needed
  }
  // MADs a shard's batch received for another shard and posted to its inbox (in workers
  // threading, a thread crossing).
  [[nodiscard]] std::uint64_t forwarded() const noexcept {
    return forwarded_.load(std::memory_order_relaxed);  // a statistic: no ordering needed
  }

 private:
  [[nodiscard]] std::uint32_t shard_for(const engine::RoutingKey& key) const noexcept;
  void refill() noexcept;

  Fabric& fabric_;
  std::uint16_t port_index_;
  engine::MadPool& pool_;
  ShardSet& shards_;
  engine::CidLayout layout_;
  // Buffers taken from the pool ahead of the next receive: a burst that finds nothing costs no
  // pool round trip (the inline driver paid 32 gets and puts per empty poll).
  std::array<engine::MadBuf*, kBurst> spares_{};
  std::size_t spares_ready_ = 0;
  std::atomic<std::uint64_t> inbox_full_{0};  // written by the polling thread only
  std::atomic<std::uint64_t> forwarded_{0};   // written by the polling thread only
};

}  // namespace fastcm::shards
