// Where the protocol's output goes: MADs to the fabric, events for poll delivery to their
// EventQueue, and what concerns other shards. Callbacks are called by the protocol itself (they run
// on its thread).
#pragma once

#include "engine/mad_buf.h"
#include "fastcm/engine.h"
#include "fastcm/event.h"

namespace fastcm {
class EventQueue;
}

namespace fastcm::engine {

class Outbox {
 public:
  Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  virtual ~Outbox() = default;

  // Sends buf's MAD from port buf.packet.addr.port_index to buf.packet.addr. The fabric copies
  // it: the caller keeps its reference. Returns false when the port's send path refused it (the
  // caller counts it; a retransmission timer, where one runs, will try again).
  virtual bool send(const MadBuf& buf) noexcept = 0;

  // Appends `event` to `queue`, taking a reference on `mad` (may be null) that poll's caller gives
  // back with Engine::release. Returns false, taking nothing, when the queue is full.
  virtual bool enqueue(EventQueue& queue, const Event& event, MadBuf* mad) noexcept = 0;

  // Whether enqueue() on `queue` would fail now. Lets a REQ meet its listen's backlog policy
  // before an endpoint is made for an event nobody could receive.
  [[nodiscard]] virtual bool queue_full(const EventQueue& queue) const noexcept = 0;

  // The endpoint `stale` (found in RemoteQpns, possibly another shard's) is connected to the
  // remote QP that `cause` (a received REQ or REP) says started a new connection: its owner judges
  // the claim and disconnects it (Protocol::on_stale(cause)). Takes a reference on `cause` while
  // the owner has not run it. Never fails: the owner runs it at once or later.
  virtual void notify_stale(Id stale, MadBuf& cause) noexcept = 0;

  // Runs `on_destroyed(ctx)` once no thread can still be inside a callback or poll for the endpoint
  // the application just destroyed: at once when one thread drives every shard, else after every
  // shard passed a quiescent point. Never fails; `on_destroyed` is not null.
  virtual void retire(Engine::DestroyedFn on_destroyed, void* ctx) noexcept = 0;
};

}  // namespace fastcm::engine
