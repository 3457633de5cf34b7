// The receive side of one port: takes received MADs off the fabric into pooled buffers, reads
// each one's routing key and hands it to the owning shard's inbox (routing by comm ID
// or, for a REQ, by its routing key). It knows routing keys, not message layouts (engine/routing_key.h reads them).
//
// Thread contract: poll_once() and run() on the port's poller thread (or progress()'s caller),
// one at a time; inbox_full_drops() and stop() from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "engine/cid.h"
#include "engine/mad_buf.h"
#include "engine/routing_key.h"
#include "fastcm/fabric.h"

namespace fastcm::shards {

class ShardSet;

class PortPoller {
 public:
  static constexpr std::size_t kBurst = 32;

  // Throws std::system_error when its stop eventfd cannot be created.
  PortPoller(Fabric& fabric, std::uint16_t port_index, engine::MadPool& pool, ShardSet& shards,
             engine::CidLayout layout);
  ~PortPoller();
  PortPoller(const PortPoller&) = delete;
  PortPoller& operator=(const PortPoller&) = delete;

  // Receives one burst and routes it; returns how many MADs it received.
  std::size_t poll_once() noexcept;
  // The poller thread's loop until stop(): bursts, spinning `idle_spins` empty polls (yielding),
  // then sleeping on the fabric's rx event until MADs arrive (on a port without an rx event fd:
  // for a millisecond, then polling again).
  void run(unsigned idle_spins) noexcept;
  void stop() noexcept;

  // MADs dropped because their shard's inbox was full.
  [[nodiscard]] std::uint64_t inbox_full_drops() const noexcept {
    return inbox_full_.load(std::memory_order_relaxed);  // a statistic: no ordering needed
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
  std::atomic<std::uint64_t> inbox_full_{0};    // written by the poller only
  std::atomic<bool> stop_requested_{false};     // release by stop(), acquire by run()
  int stop_fd_ = -1;
};

}  // namespace fastcm::shards
