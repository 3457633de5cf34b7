// fastcm::Engine: the Communication Manager over one Fabric (the ports of one HCA, or several).
//
// Thread contract (this version runs the protocol inline): every call, and progress(), must be
// made from one thread at a time — the thread that drives the engine. Callbacks run inside
// progress() or inside the API call that caused them, on that thread, and API calls made from a
// callback execute inline and return their status synchronously. The sharded engine (DESIGN.md)
// keeps these signatures and widens the contract to any thread.
//
// Ownership: the Engine borrows the Fabric and the Clock; both must outlive it. Ids are values
// (see fastcm/id.h). Events borrow received MADs (see fastcm/event.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "fastcm/clock.h"
#include "fastcm/connection_info.h"
#include "fastcm/counters.h"
#include "fastcm/event.h"
#include "fastcm/event_queue.h"
#include "fastcm/fabric.h"
#include "fastcm/id.h"
#include "fastcm/params.h"
#include "fastcm/qp_attr.h"
#include "fastcm/status.h"

namespace fastcm {

// Where an endpoint's events go: a callback, or an EventQueue drained by poll(). Exactly one.
struct Delivery {
  EventHandler handler = nullptr;
  void* handler_context = nullptr;
  EventQueue* queue = nullptr;
};

struct ListenParams {
  std::uint64_t service_id = 0;
  std::uint64_t service_mask = ~std::uint64_t{0};  // bits that must match
  std::uint8_t port = 0;                  // local port number, 0 = every port
  std::uint32_t backlog = 1024;           // REQs received and not yet answered, at most
  BacklogPolicy backlog_policy = BacklogPolicy::reject;
  Delivery delivery;
  void* context = nullptr;                // Event::context of REQ/SIDR_REQ events for this listen
};

struct EngineConfig {
  std::uint32_t max_endpoints = 1u << 16;    // connection endpoints, time-wait included
  std::uint32_t max_listens = 256;
  std::uint32_t mad_buffers = 1u << 14;      // pooled MADs: sent awaiting retry, and received
  // Automatic MRA: when the application has not answered a REQ (or a REP) within this fraction of
  // the peer's CM response timeout, the engine sends an MRA for it. 0 disables.
  double auto_mra_fraction = 0.5;
  std::uint8_t mra_service_timeout = 24;     // exponent sent in automatic and backlog MRAs
};

class Engine {
 public:
  // Creates an engine over `fabric`'s ports. Returns null when the configuration is out of range.
  static std::unique_ptr<Engine> create(Fabric& fabric, const Clock& clock, const EngineConfig& config);
  virtual ~Engine() = default;

  // Processes received MADs and expired timers; returns how many MADs and timers it handled.
  virtual std::size_t progress() = 0;
  // The clock time of the earliest pending protocol timer, or nullopt when none is armed: an idle
  // driver may sleep until then (or until the fabric's rx event fd wakes it).
  [[nodiscard]] virtual std::optional<std::uint64_t> next_timer_ns() const = 0;

  // ---- listens -------------------------------------------------------------------------------
  // Listens for REQs and SIDR_REQs whose service ID matches under the mask. Errors:
  // invalid_argument (bad port, no delivery), service_in_use, no_resources.
  virtual Status listen(const ListenParams& params, Id& out) = 0;

  // ---- endpoints -----------------------------------------------------------------------------
  // A new idle endpoint for the active side (send_req / send_sidr_req). Errors: no_resources,
  // invalid_argument (no delivery).
  virtual Status create_id(const Delivery& delivery, void* context, Id& out) = 0;
  virtual Status set_context(Id id, void* context) = 0;

  virtual Status send_req(Id id, const ReqParams& params) = 0;
  virtual Status send_rep(Id id, const RepParams& params) = 0;
  virtual Status send_rtu(Id id, std::span<const std::uint8_t> private_data) = 0;
  virtual Status send_rej(Id id, const RejParams& params) = 0;
  virtual Status send_mra(Id id, const MraParams& params) = 0;
  virtual Status send_dreq(Id id, std::span<const std::uint8_t> private_data) = 0;
  virtual Status send_drep(Id id, std::span<const std::uint8_t> private_data) = 0;
  virtual Status send_lap(Id id, const LapParams& params) = 0;
  virtual Status send_apr(Id id, const AprParams& params) = 0;
  virtual Status send_sidr_req(Id id, const SidrReqParams& params) = 0;
  virtual Status send_sidr_rep(Id id, const SidrRepParams& params) = 0;

  // Passive side: data arrived on the QP before the RTU; the endpoint becomes established.
  virtual Status establish(Id id) = 0;

  // QP attributes for moving the endpoint's QP to `state`, capped to the CA's limits.
  virtual Status init_qp_attr(Id id, QpState state, QpAttr& out) const = 0;

  // The last private data received on the endpoint (full wire length), valid until the next
  // event for it or its destruction. Empty when nothing was received.
  virtual Status last_private_data(Id id, std::span<const std::uint8_t>& out) const = 0;

  // The parameters negotiated so far (what was sent and received), readable at any time.
  virtual Status connection_info(Id id, ConnectionInfo& out) const = 0;

  // Destroys the endpoint or listen: the protocol side follows the spec (REJ before
  // establishment, DREQ when established, then time-wait before the ID is reused). Returns at once;
  // no callback for `id` starts afterwards, nor does poll return an event for it;
  // `on_destroyed(ctx)` runs exactly once, after any callback in flight has returned.
  // Errors: stale_id.
  using DestroyedFn = void (*)(void* ctx);
  virtual Status destroy(Id id, DestroyedFn on_destroyed = nullptr, void* ctx = nullptr) = 0;

  // ---- events and MADs -----------------------------------------------------------------------
  // A bounded queue for poll delivery. Owned by the engine; lives until the engine is destroyed.
  virtual EventQueue* create_event_queue(std::uint32_t capacity) = 0;
  // Takes up to events.size() events; each must be given back with release(event). Never blocks.
  // Events of an endpoint destroyed after they were queued are not returned (as no callback
  // starts after destroy); their MADs are released.
  virtual std::size_t poll(EventQueue& queue, std::span<Event> events) = 0;
  // Keeps the MAD of a callback's event alive after the callback returns.
  virtual void retain(const Event& event) = 0;
  // Gives back a polled or retained event's MAD.
  virtual void release(const Event& event) = 0;

  // ---- observability -------------------------------------------------------------------------
  // A snapshot of the per-port counters (port numbers are 1-based; index 0 is unused).
  virtual void counters(std::span<PortCounters> out) const = 0;
  // Pooled MADs taken right now (at most EngineConfig::mad_buffers): sent MADs kept for
  // retransmission, each endpoint's last received MAD, events queued for poll or retained. 0 once
  // no endpoint is live and no event holds a MAD, so tests and tools can check for leaks. A
  // snapshot that never fails; thread contract as for every call (the driving thread).
  [[nodiscard]] virtual std::uint32_t mad_buffers_in_use() const = 0;
};

}  // namespace fastcm
