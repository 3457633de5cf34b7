// Where the protocol's output goes: MADs to the fabric, events for poll delivery to their
// EventQueue, and what concerns other shards. Callbacks are called by the protocol itself (they run
// on its thread).
#pragma once

#include <optional>

#include "engine/mad/mad_header.h"
#include "engine/mad_buf.h"
#include "fastcm/engine.h"
#include "fastcm/event.h"

namespace fastcm {
class EventQueue;
}

namespace fastcm::engine {

// What a sent MAD counts in its port's MessageCounters once the fabric has accepted it.
struct SendTally {
  mad::AttrId attr = mad::AttrId::class_port_info;
  bool retry = false;  // MessageCounters::retried; else sent
};

class Outbox {
 public:
  Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  virtual ~Outbox() = default;

  // Queues buf's MAD to go from port buf.packet.addr.port_index to buf.packet.addr, taking a
  // reference on buf until the fabric has copied it: the sends of a batch of input go out per port
  // in one Fabric::send_burst, by the time the batch (or the API call made outside one) ends. The
  // caller keeps its own reference, and must not write into buf while the outbox holds it (a kept
  // MAD with more than one reference is not written over). Once the fabric accepted the MAD the
  // outbox counts `tally` (Protocol::count_accepted); a MAD the port's send path refused is
  // counted nowhere, as it never went out (a retransmission timer, where one runs, sends it
  // again). Never fails.
  virtual void send(MadBuf& buf, SendTally tally) noexcept = 0;

  // Appends `event` to `queue`, taking a reference on `mad` (may be null) that poll's caller gives
  // back with Engine::release. `slot` is the endpoint's slot in its table (CepTable), queued beside
  // the event so that poll checks the endpoint's attachment without decoding event.id. Returns
  // false, taking nothing, when the queue is full. An event the queue turns out to have no room
  // for when the batch's events are queued (another producer filled it) is dropped then and
  // counted queue_full on `port_index`, the endpoint's port.
  virtual bool enqueue(EventQueue& queue, const Event& event, std::uint32_t slot, MadBuf* mad,
                       std::uint16_t port_index) noexcept = 0;

  // Whether enqueue() on `queue` would fail now. Lets a REQ meet its listen's backlog policy
  // before an endpoint is made for an event nobody could receive.
  [[nodiscard]] virtual bool queue_full(const EventQueue& queue) const noexcept = 0;

  // The endpoint `stale` (found in RemoteQpns, possibly another shard's) is connected to the
  // remote QP that `cause` (a received REQ or REP) says started a new connection: its owner judges
  // the claim and disconnects it (Protocol::on_stale(cause)). Takes a reference on `cause` while
  // the owner has not run it. Never fails: the owner runs it at once or later.
  virtual void notify_stale(Id stale, MadBuf& cause) noexcept = 0;

  // Hands the REQ on_mad is handling (`req`, its MAD) to another shard, which handles it from the
  // start instead: the shard of `owner` (the endpoint RemoteQpns records for the REQ's remote QP:
  // it holds the REQ's duplicate entry if it is a copy, and judges it stale if not), or, without
  // one (this shard could not make an endpoint for it), one of the other shards, by the REQ's hash.
  // Returns false, taking nothing, when the owner is this shard, or without an owner when there is
  // no other shard or the REQ was passed on for want of room already: the caller handles the REQ
  // itself. Otherwise the caller leaves `req` as it is (keeps no reference, emits nothing for it):
  // the reference on_mad's caller holds travels with it once on_mad returns. A REQ the other
  // shard has no inbox room for is dropped and counted inbox_full (the peer retries). Returns true
  // at most once per on_mad.
  [[nodiscard]] virtual bool pass_on(MadBuf& req, std::optional<Id> owner) noexcept = 0;

  // Runs `on_destroyed(ctx)` once no thread can still be inside a callback or poll for the endpoint
  // the application just destroyed: at once when one thread drives every shard, else after every
  // shard passed a quiescent point. Never fails; `on_destroyed` is not null.
  virtual void retire(Engine::DestroyedFn on_destroyed, void* ctx) noexcept = 0;
};

}  // namespace fastcm::engine
