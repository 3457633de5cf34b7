// The MADs one shard sends during a batch of input, handed to the fabric per port in one
// send_burst each instead of one call per MAD: a storm's burst of 32 REQs answered with 32 REPs
// costs the loopback fabric one ring enqueue and at most one wake-up of the receiver, not 32.
//
// Each queued MAD holds a reference (engine::Outbox::send's contract) until flush() gave it to the
// fabric, which copies it. At most kCapacity wait: add() flushes a full batch first, so answers
// (MADs of the answer reserve, released once sent) never wait beyond kCapacity at a time, and the
// answer reserve is sized for that (shards/engine_config.cpp).
//
// Thread contract: the shard's thread only (the worker, or the caller driving the engine); no
// atomics beyond the MADs' reference counts. Never blocks, never allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "engine/mad_buf.h"
#include "engine/outbox.h"
#include "fastcm/fabric.h"

namespace fastcm::shards {

class SendBatch {
 public:
  static constexpr std::size_t kCapacity = 32;

  // Called for each MAD the fabric accepted, with its port (the shard's: Protocol::count_accepted).
  using AcceptedFn = void (*)(void* context, std::uint16_t port_index, engine::SendTally tally) noexcept;

  SendBatch(Fabric& fabric, engine::MadPool& pool, AcceptedFn on_accepted, void* context) noexcept
      : fabric_(fabric), pool_(pool), on_accepted_(on_accepted), context_(context) {}
  // Sends what is still queued: the engine's last batch decided to send it.
  ~SendBatch() { flush(); }
  SendBatch(const SendBatch&) = delete;
  SendBatch& operator=(const SendBatch&) = delete;

  // Queues `buf` (taking a reference), flushing first when kCapacity MADs wait.
  void add(engine::MadBuf& buf, engine::SendTally tally) noexcept;
  // Hands every queued MAD to the fabric, one send_burst per port in first-queued order (the order
  // of each port's MADs kept), counts the accepted ones and releases every reference. A MAD the
  // port refused is released uncounted (see engine::Outbox::send).
  void flush() noexcept;
  [[nodiscard]] bool empty() const noexcept { return queued_ == 0; }

 private:
  struct Queued {
    engine::MadBuf* buf;
    engine::SendTally tally;
  };

  Fabric& fabric_;
  engine::MadPool& pool_;
  AcceptedFn on_accepted_;
  void* context_;
  std::array<Queued, kCapacity> queue_{};
  std::size_t queued_ = 0;
};

}  // namespace fastcm::shards
