// Pooled MAD buffers with a reference count, and the pool interface the protocol takes them from.
//
// A received MAD is referenced by the protocol while it handles it, by an event while a callback
// runs or while it waits in an EventQueue, and by the application after retain(); a sent MAD is
// referenced by its endpoint while it may be retransmitted or resent to a duplicate. The last
// release gives the buffer back to its pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fastcm/fabric.h"

namespace fastcm {

// Public name (fastcm/event.h) of a pooled MAD.
struct MadRef {
  MadPacket packet;
  // Relaxed increments (a holder already has a reference); the final decrement is acq_rel so the
  // thread that returns the buffer sees every earlier holder's reads completed (shared_ptr style).
  std::atomic<std::uint32_t> refs{0};
  // What the buffer is charged to (the pool's business, see engine::MadAccount): written by its
  // pool while one thread holds it, read by the pool when the last reference returns it.
  std::uint8_t account = 0;
};

// In a cache-line-aligned buffer (pool elements are), the count shares the last line of the MAD
// (private data, written by every encode and read by every decode) rather than a line of its own.
static_assert(offsetof(MadRef, refs) / 64 == (offsetof(MadPacket, mad) + kMadSize - 1) / 64);

}  // namespace fastcm

namespace fastcm::engine {

using MadBuf = fastcm::MadRef;

// The parts of the engine's MAD buffers (fastcm/engine.h, EngineConfig::mad_buffers).
enum class MadAccount : std::uint8_t {
  receive,  // the pollers' buffers and received MADs on their way: bounded by their queues
  sent,     // a MAD an endpoint sent and keeps to send again
  kept,     // a received MAD kept after its handling (by an endpoint, an event, the application)
  answer,   // a MAD released once sent (REJ, DREP, ... to a MAD of no endpoint)
};

class MadPool {
 public:
  MadPool() = default;
  MadPool(const MadPool&) = delete;
  MadPool& operator=(const MadPool&) = delete;
  virtual ~MadPool() = default;

  // A buffer with one reference charged to `account`, or null when that account or the pool is
  // exhausted (a counted condition the caller handles by policy). Contents are unspecified.
  [[nodiscard]] virtual MadBuf* get(MadAccount account) noexcept = 0;
  [[nodiscard]] MadBuf* get() noexcept { return get(MadAccount::receive); }
  // Whether a new handshake fits now (a snapshot where other threads share the credits): a sent
  // credit for its first MAD, and the kept half below its admission mark, so that the MADs of the
  // handshakes in progress, and the REQs refused "no resources", still find a kept credit to be
  // handled with.
  [[nodiscard]] virtual bool room_for_handshake() const noexcept = 0;
  // The number of buffers handed out and not yet returned.
  [[nodiscard]] virtual std::uint32_t in_use() const noexcept = 0;

 protected:
  friend void release(MadPool& pool, MadBuf* buf) noexcept;
  virtual void put(MadBuf* buf) noexcept = 0;
};

inline void retain(MadBuf& buf) noexcept { buf.refs.fetch_add(1, std::memory_order_relaxed); }

// Drops one reference; the last one returns the buffer to `pool`. Null is ignored.
inline void release(MadPool& pool, MadBuf* buf) noexcept {
  if (buf != nullptr && buf->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) pool.put(buf);
}

}  // namespace fastcm::engine
