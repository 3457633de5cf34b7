// The CM protocol of one shard: its endpoints, their states and timers, and one handler per
// received message (IBTA Vol. 1 chapter 12). No threads: whoever owns the Protocol calls it from
// one thread — its shard's worker, or the caller driving Engine::progress().
//
// Every handler has the same shape: look the endpoint up, check that the message is from its peer
// (from_peer: the connection's whole identity), check its state (answering duplicates and dropping
// what the state ignores, counted by reason), make the transition, cancel or re-arm the timer,
// send, and emit the event last — the event's callback may call back into the Protocol
// (send_rep from a REQ callback, destroy from anywhere), so nothing touches the endpoint after it.
//
// The handlers live in files by protocol concern: connect_handlers.cpp (REQ, MRA, REJ, REP, RTU),
// disconnect_handlers.cpp (DREQ, DREP, time-wait), lap_handlers.cpp (LAP, APR),
// sidr_handlers.cpp (SIDR_REQ, SIDR_REP), class_port_info.cpp; protocol.cpp holds the dispatch
// and what they share (sending, retries, timers, events, freeing).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "engine/cep.h"
#include "engine/cep_index.h"
#include "engine/cep_table.h"
#include "engine/cid.h"
#include "engine/endpoint_budget.h"
#include "engine/half_open_budget.h"
#include "engine/listens.h"
#include "engine/mad/cm_messages.h"
#include "engine/mad/codec.h"
#include "engine/mad/mad_header.h"
#include "engine/mad_buf.h"
#include "engine/outbox.h"
#include "engine/remote_qpns.h"
#include "engine/sidr_req_index.h"
#include "engine/timer_wheel.h"
#include "fastcm/clock.h"
#include "fastcm/counters.h"
#include "fastcm/engine.h"
#include "fastcm/fabric.h"

namespace fastcm::engine {

struct ProtocolEnv {
  std::span<const PortAttr> ports;
  const Clock& clock;
  MadPool& pool;
  Outbox& outbox;
  Listens& listens;
  RemoteQpns& remote_qpns;
  EndpointBudget& budget;
  HalfOpenBudget& half_open;
  EngineConfig config;
  std::uint32_t shard = 0;
  CidLayout layout{1, SipKey{}};
  std::uint32_t max_endpoints = 0;  // this shard's table (the budget bounds all shards together)
};

class Protocol {
 public:
  explicit Protocol(const ProtocolEnv& env);
  ~Protocol();
  Protocol(const Protocol&) = delete;
  Protocol& operator=(const Protocol&) = delete;

  // ---- input ---------------------------------------------------------------------------------
  // A MAD received on buf.packet.addr.port_index. Untrusted. The caller keeps its reference: what
  // the protocol keeps past the call (an endpoint's copy to answer duplicates, an event's MAD), it
  // retains, so a count above the caller's own afterwards means the MAD is kept.
  void on_mad(MadBuf& buf) noexcept;
  // Starts loading the memory on_mad(buf) will wait for, so a shard handling a burst overlaps the
  // misses of the MADs ahead: for a REQ the duplicate-index bucket and the sender's QP entry in
  // RemoteQpns (random lines of tables sized for every endpoint), for a MAD naming one of our
  // endpoints that endpoint as its lookup hint names it, and for a REP also its sender's QP
  // entry. Reads only buf's routing fields and the shard's hints; changes nothing.
  void prefetch(const MadBuf& buf) const noexcept;
  // The second step of prefetch(buf), a few MADs later, when the lines it loaded have arrived:
  // for a REQ, the first endpoint of its duplicate-index chain. Same terms as prefetch().
  void prefetch_second(const MadBuf& buf) const noexcept;
  // Starts a batch of input (MADs, commands, callbacks' calls) that ends at the next on_timers():
  // the timers it arms count from the time on_timers() reads (TimerWheel "Deferred arms"), so a
  // batch reads the clock once, and its timers fire no earlier than they would armed one by one.
  void begin_batch() noexcept { batch_open_ = true; }
  // Ends the batch begun by begin_batch(), if any, and fires every timer due at the clock's
  // current time; returns how many fired.
  std::size_t on_timers() noexcept;
  [[nodiscard]] std::optional<std::uint64_t> next_timer_ns() const noexcept { return wheel_.next_deadline(); }

  // ---- commands (see fastcm/engine.h for their contracts) -------------------------------------
  Status create_id(const Delivery& delivery, void* context, Id& out) noexcept;
  // A spare endpoint (shards/spare_endpoints.h): an idle endpoint created ahead of any create_id,
  // attached, whose delivery discards everything until adopt_spare() gives it the application's.
  // Nothing can happen to it before then: no peer knows its comm ID.
  // `slot`: its slot in the table, which adopt_spare takes instead of decoding the Id.
  Status create_spare(Id& out, std::uint32_t& slot) noexcept;
  // Hands the spare at `slot` (create_spare's) to the application. The one exception to the
  // thread contract: called by the thread that took the spare from the spare endpoints, on another
  // thread than the shard's, before it tells anyone the Id. The shard never touches a spare's
  // delivery and context meanwhile, and whatever makes the Id reach the shard again (the shard
  // inbox's ring, or the application's own hand-over to a callback running there) orders these
  // writes before the shard's reads.
  void adopt_spare(std::uint32_t slot, const Delivery& delivery, void* context) noexcept;
  Status set_context(Id id, void* context) noexcept;
  Status send_req(Id id, const ReqParams& p) noexcept;
  Status send_rep(Id id, const RepParams& p) noexcept;
  Status send_rtu(Id id, std::span<const std::uint8_t> private_data) noexcept;
  Status send_rej(Id id, const RejParams& p) noexcept;
  Status send_mra(Id id, const MraParams& p) noexcept;
  Status send_dreq(Id id, std::span<const std::uint8_t> private_data) noexcept;
  Status send_drep(Id id, std::span<const std::uint8_t> private_data) noexcept;
  Status send_lap(Id id, const LapParams& p) noexcept;
  Status send_apr(Id id, const AprParams& p) noexcept;
  Status send_sidr_req(Id id, const SidrReqParams& p) noexcept;
  Status send_sidr_rep(Id id, const SidrRepParams& p) noexcept;
  Status establish(Id id) noexcept;
  // Destroy on the shard's own thread (also from a callback): detaches and abandons the endpoint.
  Status destroy(Id id, Engine::DestroyedFn on_destroyed, void* ctx) noexcept;
  // The shard's part of a destroy another thread started by winning CepTable::try_detach_remote(id)
  // (`slot` its answer, `generation` the Id's): abandons the endpoint if it is still live, then
  // retires on_destroyed.
  void destroy_detached(std::uint32_t slot, std::uint32_t generation, Engine::DestroyedFn on_destroyed,
                        void* ctx) noexcept;
  // A received REQ or REP (`cause`, Outbox::notify_stale) claims the remote QP of an endpoint of
  // this shard for a new connection: the endpoint RemoteQpns records for that QP is disconnected
  // if it is still established and `cause` came from its peer's address (address_mismatch; a
  // blind spoof of the claim is dropped and counted). Reads `cause` only.
  void on_stale(const MadBuf& cause) noexcept;
  // Whether `buf`, a REJ naming no endpoint by our comm ID (a REJ "timeout" from an active side
  // that never learnt it), rejects a REQ this shard holds. The router offers such REJs to each
  // shard in turn.
  [[nodiscard]] bool holds_rejected_req(const MadBuf& buf) noexcept;
  Status init_qp_attr(Id id, QpState state, QpAttr& out) const noexcept;
  Status last_private_data(Id id, std::span<const std::uint8_t>& out) const noexcept;
  Status connection_info(Id id, ConnectionInfo& out) const noexcept;

  // ---- posted calls (fastcm/engine.h, "Posted calls") ------------------------------------------
  // Runs `command(*this)`, one of the commands above on endpoint `id`, as of the moment another
  // thread posted it: an endpoint that thread's destroy has detached since (try_detach_remote, its
  // destroy not yet handled here) is still found, so the call happens before the destroy as its
  // caller ordered them (events the call causes are not delivered: emit() checks the attachment).
  // A refusal of an endpoint still attached is delivered as EventType::call_failed; stale_id
  // is not (the endpoint is gone: nothing is delivered after a destroy).
  template <typename Command>
  void run_posted(Id id, ApiCall call, Command&& command) noexcept {
    posted_id_ = id;
    const Status status = command(*this);
    posted_id_ = Id{};
    if (status != Status::ok && status != Status::stale_id) report_call_failed(id, call, status);
  }

  // ---- observability -------------------------------------------------------------------------
  [[nodiscard]] const PortCounters& counters(std::size_t port_index) const noexcept {
    return counters_[port_index];
  }
  [[nodiscard]] std::span<const PortCounters> all_counters() const noexcept {
    return {counters_.get(), env_.ports.size()};
  }
  // Counts a MAD the fabric accepted from port `port_index` (Outbox::send).
  void count_accepted(std::uint16_t port_index, SendTally tally) noexcept;
  // Whether a callback for `id` is running on this thread right now (destroy_sync cannot wait for
  // its own caller).
  [[nodiscard]] bool in_callback_of(Id id) const noexcept {
    for (const CallbackFrame* f = running_callbacks_; f != nullptr; f = f->outer) {
      if (f->id == id) return true;
    }
    return false;
  }
  // The endpoint table: its attachment words may be used from any thread (cep_table.h).
  [[nodiscard]] CepTable& table() noexcept { return table_; }
  [[nodiscard]] const CepTable& table() const noexcept { return table_; }

 private:
  // ---- handlers, one per message ---------------------------------------------------------------
  void on_req(MadBuf& buf, const mad::MadHeader& hdr, const mad::Req& req);
  void on_mra(MadBuf& buf, const mad::MadHeader& hdr, const mad::Mra& mra);
  void on_rej(MadBuf& buf, const mad::MadHeader& hdr, const mad::Rej& rej);
  void on_rep(MadBuf& buf, const mad::MadHeader& hdr, const mad::Rep& rep);
  void on_rtu(MadBuf& buf, const mad::MadHeader& hdr, const mad::Rtu& rtu);
  void on_dreq(MadBuf& buf, const mad::MadHeader& hdr, const mad::Dreq& dreq);
  void on_drep(MadBuf& buf, const mad::MadHeader& hdr, const mad::Drep& drep);
  void on_lap(MadBuf& buf, const mad::MadHeader& hdr, const mad::Lap& lap);
  void on_apr(MadBuf& buf, const mad::MadHeader& hdr, const mad::Apr& apr);
  void on_sidr_req(MadBuf& buf, const mad::MadHeader& hdr, const mad::SidrReq& req);
  void on_sidr_rep(MadBuf& buf, const mad::MadHeader& hdr, const mad::SidrRep& rep);
  void on_class_port_info(MadBuf& buf, const mad::MadHeader& hdr, const mad::ClassPortInfo& cpi);

  // ---- timers ------------------------------------------------------------------------------------
  void on_timer(Cep& cep) noexcept;
  void on_retransmit_timeout(Cep& cep) noexcept;
  void on_auto_mra_timeout(Cep& cep) noexcept;
  void arm_timer(Cep& cep, CepTimer kind, std::uint64_t after_ns) noexcept;
  void cancel_timer(Cep& cep) noexcept;

  // ---- shared steps ------------------------------------------------------------------------------
  // A fresh pooled MAD charged to `account` and addressed like `to`, or null (counted) when that
  // account is exhausted.
  MadBuf* new_mad(const MadAddress& to, MadAccount account) noexcept;
  // Encodes `msg` as a Send to `cep.peer` with the endpoint's transaction ID, sends it and keeps it
  // as `cep.sent` (for retransmission and duplicates). The MAD it replaces is written over when
  // the endpoint is its only holder, so a handshake's next step needs no second buffer (an RTU
  // replacing the REQ finds room even when REQs fill the sent half). False when out of MADs.
  template <mad::CmMessage M>
  bool send_and_keep(Cep& cep, const M& msg) noexcept;
  // Encodes and sends `msg` to `to` without keeping it (answers to MADs of no endpoint): as a
  // Send with transaction ID `tid`, or under `hdr` (a GetResp with its MAD status).
  template <mad::CmMessage M>
  void send_reply(const MadAddress& to, std::uint64_t tid, const M& msg) noexcept;
  template <mad::CmMessage M>
  void send_reply(const MadAddress& to, const mad::MadHeader& hdr, const M& msg) noexcept;
  // send_reply's work, the MAD counted as a retransmission when `retry`.
  template <mad::CmMessage M>
  void send_unkept(const MadAddress& to, const mad::MadHeader& hdr, const M& msg, bool retry) noexcept;
  // Whether `buf` repeats `kept` byte for byte (a retransmission; the TID's upper half may differ,
  // see mad::tid_cm_part). False when `kept` is null.
  [[nodiscard]] static bool repeats(const MadBuf* kept, const MadBuf& buf) noexcept;
  void resend(Cep& cep) noexcept;              // cep.sent again (duplicate or retry)
  // Our RTU again, for a duplicate REP in established: re-encoded when not kept (settle_established
  // let it go, or a LAP or APR replaced it as the last MAD sent).
  void resend_rtu(Cep& cep) noexcept;
  // On entering established: lets go of the MADs the endpoint no longer needs. The passive side
  // never sends its REP again (a duplicate REQ is ignored now); the active side's RTU is
  // re-encoded byte for byte unless it carries private data; the received MAD is kept only while
  // its private data is not all zeros (last_private_data returns the zeros otherwise).
  void settle_established(Cep& cep) noexcept;
  // The attribute of cep.sent, if any.
  [[nodiscard]] static std::optional<mad::AttrId> sent_attr(const Cep& cep) noexcept;
  void drop(std::uint16_t port_index, DropReason why) noexcept;
  MessageCounters& message_counters(std::uint16_t port_index, mad::AttrId attr) noexcept;

  // Delivers an event about `cep` if the application still holds it; `mad` is the received MAD
  // the event borrows (may be null). Always the last step of a handler.
  void emit(Cep& cep, Event& event, MadBuf* mad) noexcept;
  void report_call_failed(Id id, ApiCall call, Status status) noexcept;
  void keep_received(Cep& cep, MadBuf& buf) noexcept;

  // Answers a REQ `listen` cannot take (`why`: backlog_full, source_budget or listen_budget) as the
  // listen's BacklogPolicy says: REJ "no resources", drop, or MRA; counts `why`.
  void apply_backlog_policy(const MadBuf& buf, const mad::MadHeader& hdr, const mad::Req& req,
                            const Listen& listen, DropReason why) noexcept;
  // SIDR_REP `p` to the endpoint's SIDR_REQ and free the endpoint; false (nothing changed) when
  // out of MADs. Parameters are already validated.
  bool answer_sidr_req(Cep& cep, const SidrRepParams& p) noexcept;
  // MRA the message the endpoint's state is waiting to answer (REQ, REP or LAP).
  Status mra_for(Cep& cep, const MraParams& p) noexcept;
  // REJ what the endpoint is negotiating; it goes idle, or to time-wait once our REP was out.
  void reject(Cep& cep, mad::RejReason reason, std::span<const std::uint8_t> ari,
              std::span<const std::uint8_t> private_data) noexcept;
  // DREP a received DREQ and enter time-wait.
  void answer_dreq(Cep& cep, std::span<const std::uint8_t> private_data) noexcept;
  // Starts a DREQ on an established endpoint (from the application or a stale REQ).
  bool disconnect(Cep& cep, std::span<const std::uint8_t> private_data) noexcept;
  // REJ a REQ (or REP) of no endpoint of ours, answering its sender directly.
  void reject_unknown(const MadBuf& buf, std::uint64_t tid, std::uint32_t their_comm_id,
                      std::uint32_t our_comm_id, mad::MessageKind rejected, mad::RejReason reason,
                      std::span<const std::uint8_t> ari) noexcept;
  void enter_timewait(Cep& cep) noexcept;
  // The protocol side of destroy: REJ before establishment, DREQ when established, DREP to a
  // pending DREQ; the endpoint is freed now or when its time-wait ends.
  void abandon(Cep& cep) noexcept;
  // A fresh endpoint within the engine's budget, or null (table or budget exhausted, or no room
  // for a new handshake in the shard's MADs, MadPool::room_for_handshake: a REQ is then rejected
  // "no resources").
  Cep* allocate_endpoint(bool spare = false) noexcept;  // spare: see create_spare
  // Returns the endpoint to the free list: releases its MADs, timer, index entries and backlog
  // count. Runs when time-wait ends, or at once for endpoints that never left idle.
  void free_endpoint(Cep& cep) noexcept;
  void leave_backlog(Cep& cep) noexcept;
  // Ends the endpoint's half-open handshake in the budget, if it counts one (else nothing).
  void settle_half_open(Cep& cep, HalfOpenBudget::Settled how) noexcept;
  // Records the endpoint's remote QP in RemoteQpns (see remote_qpns.h); the Id recorded for it
  // before when that is another endpoint's (the new connection is stale), else nullopt.
  std::optional<Id> claim_remote_qpn(Cep& cep) noexcept;
  void release_remote_qpn(Cep& cep) noexcept;
  // Outbox::pass_on for the REQ being handled, whose receipt the shard it goes to counts instead.
  bool pass_req(MadBuf& req, std::optional<Id> owner) noexcept;
  // Hands a new endpoint to the application with `delivery` and `context`.
  void attach(Cep& cep, const Delivery& delivery, void* context) noexcept;
  // The endpoint a REJ rejects: named by our comm ID, or by the REQ's key for a REJ "timeout".
  Cep* rejected_endpoint(const mad::Rej& rej) noexcept;
  // The live endpoint that a received message's "remote comm ID" names, counting unknown IDs.
  Cep* find_local(std::uint16_t port_index, std::uint32_t our_comm_id) noexcept;

  // What a received message says of the connection it belongs to, besides our comm ID.
  struct PeerClaim {
    static constexpr Qpn kNotCarried = ~Qpn{0};
    std::uint32_t comm_id = 0;       // the sender's: the message's Local Communication ID
    Qpn our_qpn = kNotCarried;       // DREQ, LAP: the QP of ours the message is about
    Qpn their_qpn = kNotCarried;     // REP: the sender's QP...
    Guid their_ca_guid = 0;          // ...and CA
  };
  // Whether `buf`, which names `cep` by our comm ID, comes from the endpoint's peer; counts the
  // reason when not (and then the message must change nothing). One place for every handler.
  bool from_peer(const Cep& cep, const MadBuf& buf, const PeerClaim& claim) noexcept;
  // Why a message received at `from` and claiming `claim` is not from `cep`'s peer, or nullopt when
  // it is: it must arrive on the connection's port, from the LID (and GID, when it carries a GRH)
  // of the peer's end of the primary or alternate path under the connection's P_Key, name our QP
  // where it names one, and, once the endpoint knows them (Cep::peer_known), carry the peer's comm
  // ID and QP. Endpoints in no connection (idle, a SIDR_REQ received) have no peer: their state
  // check drops; a SIDR_REQ sent has the address it went to.
  // Compares fields of the endpoint only (no lookup): in the common case its first two cache lines
  // (IDs and state, which every handler reads; port and primary path) and the P_Key index beside
  // its kept MADs' pointers, which accepting handlers touch anyway.
  [[nodiscard]] std::optional<DropReason> peer_mismatch(const Cep& cep, const MadAddress& from,
                                                        const PeerClaim& claim) const noexcept;
  // peer_mismatch's address part, for messages that name no comm ID of `cep` (a stale REQ or REP
  // claiming its remote QP): the port, the source LID/GID and the P_Key.
  [[nodiscard]] std::optional<DropReason> address_mismatch(const Cep& cep, const MadAddress& from) const noexcept;
  // Live and still attached to the application (or, for the posted call running, detaching).
  Cep* find_user(Id id) noexcept;
  const Cep* find_user(Id id) const noexcept;
  // CepTable::own_slot_of(id), without even its hint lookup when `id` is the endpoint whose
  // callback runs: the usual target of a call made from a callback.
  [[nodiscard]] std::optional<std::uint32_t> slot_of(Id id) const noexcept;

  [[nodiscard]] static Event event_of(EventType type) noexcept {
    Event e;
    e.type = type;
    return e;
  }
  [[nodiscard]] std::uint64_t now() const noexcept { return env_.clock.now_ns(); }
  [[nodiscard]] const PortAttr& port(std::uint16_t index) const noexcept { return env_.ports[index]; }

  ProtocolEnv env_;
  CepTable table_;
  DuplicateReqIndex dup_reqs_;
  SidrReqIndex sidr_reqs_;
  TimerWheel wheel_;
  bool batch_open_ = false;  // between begin_batch() and on_timers(): arm_timer defers
  Id posted_id_;             // the endpoint of the posted call running (run_posted), else none
  std::unique_ptr<PortCounters[]> counters_;
  std::uint64_t next_tid_ = 1;

  // The callbacks running right now, innermost first (a callback may cause another endpoint's
  // event). destroy() of an endpoint whose callback is running records on_destroyed in its frame,
  // and emit() retires it (Outbox::retire) once the callback has returned; any other destroy
  // retires it at once.
  struct CallbackFrame {
    Id id;
    std::uint32_t slot = 0;  // id's
    Engine::DestroyedFn on_destroyed = nullptr;
    void* destroyed_context = nullptr;
    bool destroyed = false;
    CallbackFrame* outer = nullptr;
  };
  CallbackFrame* running_callbacks_ = nullptr;
};

template <mad::CmMessage M>
inline bool Protocol::send_and_keep(Cep& cep, const M& msg) noexcept {
  // Relaxed: only this shard's thread takes references on a sent MAD (the fabric copies it).
  const bool overwrite = cep.sent != nullptr && cep.sent->refs.load(std::memory_order_relaxed) == 1;
  MadBuf* buf = overwrite ? cep.sent : new_mad(cep.peer, MadAccount::sent);
  if (buf == nullptr) return false;
  buf->packet.addr = cep.peer;
  const mad::MadHeader hdr = mad::cm_header(mad::Method::send, mad::WireLayout<M>::kAttr, cep.transaction_id);
  if (!mad::encode(hdr, msg, mad::MadSpan(buf->packet.mad)).ok()) {
    // Commands validate their parameters first; an encode failure here is a bug, not input.
    release(env_.pool, buf);
    if (overwrite) cep.sent = nullptr;
    return false;
  }
  if (!overwrite) release(env_.pool, cep.sent);
  cep.sent = buf;
  env_.outbox.send(*buf, SendTally{.attr = mad::WireLayout<M>::kAttr});
  return true;
}

template <mad::CmMessage M>
inline void Protocol::send_reply(const MadAddress& to, std::uint64_t tid, const M& msg) noexcept {
  send_reply(to, mad::cm_header(mad::Method::send, mad::WireLayout<M>::kAttr, tid), msg);
}

template <mad::CmMessage M>
inline void Protocol::send_reply(const MadAddress& to, const mad::MadHeader& hdr, const M& msg) noexcept {
  send_unkept(to, hdr, msg, false);
}

template <mad::CmMessage M>
inline void Protocol::send_unkept(const MadAddress& to, const mad::MadHeader& hdr, const M& msg, bool retry) noexcept {
  MadBuf* buf = new_mad(to, MadAccount::answer);
  if (buf == nullptr) return;
  if (mad::encode(hdr, msg, mad::MadSpan(buf->packet.mad)).ok()) {
    env_.outbox.send(*buf, SendTally{.attr = mad::WireLayout<M>::kAttr, .retry = retry});
  }
  release(env_.pool, buf);
}

inline bool Protocol::repeats(const MadBuf* kept, const MadBuf& buf) noexcept {
  if (kept == nullptr) return false;
  const auto& a = kept->packet.mad;
  const auto& b = buf.packet.mad;
  // Bytes 8-11 are the TID's upper half, which the sender's MAD layer may rewrite.
  return std::equal(a.begin(), a.begin() + 8, b.begin()) && std::equal(a.begin() + 12, a.end(), b.begin() + 12);
}

}  // namespace fastcm::engine
