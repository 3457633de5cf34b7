// The soak's invariant checker: a model of every endpoint as its application sees it, fed by both
// engines' callbacks and by the script's own calls.
//
// It flags: an event the endpoint's phase does not allow (a second rep_received, an rtu_received
// after establishment, user_established without establish(), anything after destroy returned), a
// call whose status differs from the one the model predicts, an engine state (connection_info)
// outside the model's phase, and on_destroyed running other than exactly once per destroy, after
// the endpoint's own callback returned. Each endpoint records how its connection attempt ended
// (one Outcome, set once) and what it had negotiated when it got established, for the script's
// cross-side checks.
//
// Endpoints with poll delivery see their events after the fact, in batches: the script feeds a
// whole batch to begin_event before it reacts to any of it, so the model is up to date when it
// acts, and checks the engine's state (check_state) once the queue is empty.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fastcm/engine.h"

namespace fastcm::test {

enum class Side : std::uint8_t { client, server };

inline constexpr std::uint16_t kRejStaleConnection = 10;  // IBTA Table 112

// The CM states an application can tell apart by events and calls (engine states in comments).
enum class Phase : std::uint8_t {
  fresh,       // idle, nothing sent yet (active side)
  connecting,  // req_sent, mra_req_rcvd
  req_rcvd,    // req_rcvd, mra_req_sent (the engine MRAs silently when the answer is slow)
  rep_rcvd,    // rep_rcvd, mra_rep_sent
  rep_sent,    // rep_sent, mra_rep_rcvd
  established,
  dreq_sent,
  dreq_rcvd,
  timewait,
  done,  // idle again: rejected, timed out, or out of time-wait
};

// How the connection attempt ended.
enum class Outcome : std::uint8_t {
  none,
  established,
  rejected_by_peer,
  rejected_by_us,
  timed_out,
  abandoned
};

// The calls the checker models: the engine's own names for them.
using Call = ApiCall;

[[nodiscard]] constexpr std::string_view name(Phase p) noexcept {
  constexpr std::string_view names[] = {"fresh",    "connecting",  "req_rcvd",  "rep_rcvd",
                                        "rep_sent", "established", "dreq_sent", "dreq_rcvd",
                                        "timewait", "done"};
  return names[static_cast<std::size_t>(p)];
}

class InvariantChecker;

struct Endpoint {
  InvariantChecker* checker = nullptr;
  Side side = Side::client;
  Id id;
  std::uint32_t conn = 0;  // the script's connection number
  Phase phase = Phase::fresh;
  Outcome outcome = Outcome::none;
  bool mra_received = false;  // in the current phase (the peer MRAs one message once)
  bool mra_sent = false;
  bool polled = false;        // events come through an EventQueue
  bool establishing = false;  // establish() was called: its user_established is due
  bool destroy_called = false;
  int destroyed_runs = 0;                          // on_destroyed calls
  std::optional<ConnectionInfo> established_info;  // what connection_info said at establishment
  std::vector<std::string> history;  // events and calls in order, for failure messages
};

class InvariantChecker {
 public:
  InvariantChecker(Engine& client, Engine& server) : engines_{&client, &server} {}
  InvariantChecker(const InvariantChecker&) = delete;
  InvariantChecker& operator=(const InvariantChecker&) = delete;

  // An active-side endpoint the script just created.
  Endpoint& created(Side side, Id id, std::uint32_t conn, bool polled) {
    Endpoint& ep = add(side, id, conn, Phase::fresh);
    ep.polled = polled;
    check_state(ep);
    return ep;
  }

  // The first step of every callback, or of every polled event. Returns the endpoint the event is
  // about (a req_received creates it), or null when the event broke an invariant and the script
  // must not act on it.
  Endpoint* begin_event(Side side, const Event& e, bool polled) {
    if (e.type == EventType::req_received) {
      if (side != Side::server || find(side, e.id) != nullptr) {
        violation(find(side, e.id), "req_received for an Id that already exists or on the client");
        return nullptr;
      }
      Endpoint& ep = add(side, e.id, 0, Phase::req_rcvd);
      ep.polled = polled;
      ep.history.emplace_back(to_string(e.type));
      if (!polled) {
        check_state(ep);
        in_callback_.push_back(&ep);
      }
      return &ep;
    }
    Endpoint* ep = find(side, e.id);
    if (ep == nullptr) {
      violation(nullptr, std::string(to_string(e.type)) + " for an Id never seen");
      return nullptr;
    }
    ep->history.emplace_back(to_string(e.type));
    if (ep->destroy_called) {
      violation(ep, std::string(to_string(e.type)) + " after destroy returned");
      return nullptr;
    }
    const std::optional<Phase> next = after_event(*ep, e);
    if (!next) {
      violation(ep, std::string(to_string(e.type)) + " in phase " + std::string(name(ep->phase)));
      return nullptr;
    }
    if (e.type == EventType::user_established) ep->establishing = false;
    enter(*ep, *next);
    settle_outcome(*ep, outcome_of(e.type));
    if (!ep->polled) {
      check_state(*ep);  // a polled endpoint's engine may be ahead: later events wait in the queue
      in_callback_.push_back(ep);
    }
    return ep;
  }

  // The last step of every callback, with what begin_event returned.
  void end_event(Endpoint* ep) {
    if (ep == nullptr || ep->polled) return;
    if (in_callback_.empty() || in_callback_.back() != ep) {
      violation(ep, "callbacks did not nest");
      return;
    }
    in_callback_.pop_back();
  }

  // Runs `run` (the engine call `what` on `ep`) and checks its status against the model.
  template <class Run>
  Status call(Endpoint& ep, Call what, Run&& run) {
    const std::optional<Phase> next = after_call(ep, what);
    const Status expected = ep.destroy_called ? Status::stale_id
                            : next            ? Status::ok
                                              : Status::invalid_state;
    const bool pending = ep.establishing;  // a polled endpoint's user_established still queued
    if (what == Call::establish) ep.establishing = true;
    const Status got = run();
    // A callback endpoint got its user_established inside the call; a polled one gets it later.
    ep.establishing = pending || (what == Call::establish && ep.polled && got == Status::ok);
    ep.history.push_back(std::string(to_string(what)) + ":" + std::string(to_string(got)));
    if (got != expected) {
      violation(&ep, std::string(to_string(what)) + " returned " + std::string(to_string(got)) +
                         ", the model expected " + std::string(to_string(expected)));
      return got;
    }
    if (got != Status::ok) return got;
    if (what == Call::establish) {
      // A callback endpoint moved with its user_established, inside the call. A polled one moves
      // now, with the engine; its user_established comes out of the queue later.
      if (ep.polled) {
        enter(ep, Phase::established);
        settle_outcome(ep, Outcome::established);
        check_state(ep);
      } else if (ep.phase != Phase::established) {
        violation(&ep, "establish returned ok without user_established");
      }
      return got;
    }
    if (what == Call::send_mra) ep.mra_sent = true;
    enter(ep, *next);
    settle_outcome(ep, what == Call::send_rtu   ? Outcome::established
                       : what == Call::send_rej ? Outcome::rejected_by_us
                                                : Outcome::none);
    check_state(ep);
    return got;
  }

  // Destroys `ep` through its engine and checks destroy's contract.
  Status destroy(Endpoint& ep) {
    const bool in_own_callback =
        std::find(in_callback_.begin(), in_callback_.end(), &ep) != in_callback_.end();
    const Status expected = ep.destroy_called ? Status::stale_id : Status::ok;
    const bool first = !ep.destroy_called;
    ep.destroy_called = true;
    const Status got = engine(ep.side).destroy(ep.id, &InvariantChecker::on_destroyed, &ep);
    ep.history.push_back(std::string("destroy:") + std::string(to_string(got)));
    if (got != expected) violation(&ep, "destroy returned " + std::string(to_string(got)));
    if (!first || got != Status::ok) return got;
    settle_outcome(ep, Outcome::abandoned);
    // Outside its callback (always, for a polled endpoint) on_destroyed runs before destroy
    // returns; inside, after the callback.
    if (ep.destroyed_runs != (in_own_callback ? 0 : 1)) {
      violation(&ep, "on_destroyed ran " + std::to_string(ep.destroyed_runs) +
                         " times by destroy's return");
    }
    ConnectionInfo info;
    if (engine(ep.side).connection_info(ep.id, info) != Status::stale_id) {
      violation(&ep, "connection_info still answers after destroy");
    }
    return got;
  }

  // After the run: every endpoint was destroyed exactly once, ran on_destroyed exactly once, and
  // its connection attempt ended one way.
  void check_all_released() {
    for (Endpoint& ep : endpoints_) {
      if (!ep.destroy_called) violation(&ep, "never destroyed");
      if (ep.destroyed_runs != 1)
        violation(&ep, "on_destroyed ran " + std::to_string(ep.destroyed_runs) + " times");
      if (ep.outcome == Outcome::none) violation(&ep, "no outcome");
    }
  }

  void violation(const Endpoint* ep, const std::string& what) {
    ++violation_count_;
    if (violations_.size() >= kKeptViolations) return;
    std::string text = what;
    if (ep != nullptr) {
      text += " [" + std::string(ep->side == Side::client ? "client" : "server") + " conn " +
              std::to_string(ep->conn) + " phase " + std::string(name(ep->phase)) + ", history:";
      for (const std::string& h : ep->history) text += " " + h;
      text += "]";
    }
    violations_.push_back(std::move(text));
  }

  [[nodiscard]] std::size_t violation_count() const { return violation_count_; }
  [[nodiscard]] const std::vector<std::string>& violations() const { return violations_; }
  [[nodiscard]] std::deque<Endpoint>& endpoints() { return endpoints_; }
  [[nodiscard]] Endpoint* find(Side side, Id id) {
    const auto it = by_id_.find({side, id.raw});
    return it == by_id_.end() ? nullptr : it->second;
  }
  [[nodiscard]] bool in_callback(const Endpoint& ep) const {
    return std::find(in_callback_.begin(), in_callback_.end(), &ep) != in_callback_.end();
  }

  // The engine's own state must be one the phase stands for.
  void check_state(Endpoint& ep) {
    ConnectionInfo info;
    const Status s = engine(ep.side).connection_info(ep.id, info);
    if (s != Status::ok) {
      violation(&ep, "connection_info failed: " + std::string(to_string(s)));
      return;
    }
    const std::string_view st = to_string(info.state);
    bool ok = false;
    switch (ep.phase) {
      case Phase::fresh:
      case Phase::done: ok = st == "idle"; break;
      case Phase::connecting: ok = st == "req_sent" || st == "mra_req_rcvd"; break;
      case Phase::req_rcvd: ok = st == "req_rcvd" || st == "mra_req_sent"; break;
      case Phase::rep_rcvd: ok = st == "rep_rcvd" || st == "mra_rep_sent"; break;
      case Phase::rep_sent: ok = st == "rep_sent" || st == "mra_rep_rcvd"; break;
      default: ok = st == name(ep.phase); break;
    }
    if (!ok) violation(&ep, "engine state " + std::string(st) + " outside the model's phase");
  }

  // Whether the model lets `what` succeed on `ep` now.
  [[nodiscard]] static bool allows(const Endpoint& ep, Call what) {
    return !ep.destroy_called && after_call(ep, what).has_value();
  }

 private:
  static constexpr std::size_t kKeptViolations = 20;

  Engine& engine(Side side) { return *engines_[static_cast<std::size_t>(side)]; }

  Endpoint& add(Side side, Id id, std::uint32_t conn, Phase phase) {
    Endpoint& ep = endpoints_.emplace_back();
    ep.checker = this;
    ep.side = side;
    ep.id = id;
    ep.conn = conn;
    ep.phase = phase;
    if (!by_id_.emplace(std::pair{side, id.raw}, &ep).second)
      violation(&ep, "an Id was issued twice");
    return ep;
  }

  static void on_destroyed(void* ctx) {
    auto* ep = static_cast<Endpoint*>(ctx);
    ++ep->destroyed_runs;
    if (!ep->destroy_called) ep->checker->violation(ep, "on_destroyed without destroy");
    if (ep->checker->in_callback(*ep))
      ep->checker->violation(ep, "on_destroyed while its callback runs");
  }

  void enter(Endpoint& ep, Phase next) {
    if (next != ep.phase) ep.mra_received = false;
    ep.phase = next;
  }

  // The first outcome stands; later ones (a destroy after a rejection) change nothing.
  void settle_outcome(Endpoint& ep, Outcome o) {
    if (o == Outcome::none || ep.outcome != Outcome::none) return;
    ep.outcome = o;
    if (o != Outcome::established) return;
    ConnectionInfo info;
    if (engine(ep.side).connection_info(ep.id, info) == Status::ok) ep.established_info = info;
  }

  // The phase an event leads to, or nullopt when the phase does not allow it.
  static std::optional<Phase> after_event(Endpoint& ep, const Event& e) {
    const Phase p = ep.phase;
    switch (e.type) {
      case EventType::mra_received:
        if ((p != Phase::connecting && p != Phase::rep_sent) || ep.mra_received)
          return std::nullopt;
        ep.mra_received = true;
        return p;
      case EventType::rep_received:
        return p == Phase::connecting ? std::optional(Phase::rep_rcvd) : std::nullopt;
      case EventType::req_error:
        return p == Phase::connecting ? std::optional(Phase::done) : std::nullopt;
      case EventType::rep_error:
        return p == Phase::rep_sent ? std::optional(Phase::timewait) : std::nullopt;
      case EventType::rtu_received:
        return p == Phase::rep_sent ? std::optional(Phase::established) : std::nullopt;
      case EventType::user_established:
        if (!ep.establishing) return std::nullopt;
        if (ep.polled) return p;  // establish() already moved it
        return p == Phase::rep_sent ? std::optional(Phase::established) : std::nullopt;
      case EventType::rej_received: {
        // "Stale connection" (the peer still holds our earlier connection in time-wait) rests the
        // ID in time-wait too.
        const auto* rej = std::get_if<RejReceived>(&e.params);
        const bool stale = rej != nullptr && rej->reason == kRejStaleConnection;
        if (p == Phase::connecting || p == Phase::req_rcvd || p == Phase::rep_sent) {
          return stale ? Phase::timewait : Phase::done;
        }
        // Established: our RTU never arrived and the passive side gave up on its REP.
        if (p == Phase::rep_rcvd || p == Phase::established || p == Phase::dreq_sent)
          return Phase::timewait;
        return std::nullopt;
      }
      case EventType::dreq_received:
        if (p == Phase::rep_sent || p == Phase::established || p == Phase::dreq_sent)
          return Phase::dreq_rcvd;
        return std::nullopt;
      case EventType::drep_received:
        return p == Phase::dreq_sent || p == Phase::dreq_rcvd ? std::optional(Phase::timewait)
                                                              : std::nullopt;
      case EventType::dreq_error:
        return p == Phase::dreq_sent ? std::optional(Phase::timewait) : std::nullopt;
      case EventType::timewait_exit:
        return p == Phase::timewait ? std::optional(Phase::done) : std::nullopt;
      default:
        return std::nullopt;  // req_received is handled by begin_event; LAP and SIDR are not used
    }
  }

  // How an event settles the attempt (none: it does not). A DREQ in rep_sent means the peer got
  // established (our RTU copy was lost) and is already leaving.
  static Outcome outcome_of(EventType t) {
    switch (t) {
      case EventType::rtu_received:
      case EventType::user_established:
      case EventType::dreq_received: return Outcome::established;
      case EventType::rej_received: return Outcome::rejected_by_peer;
      case EventType::req_error:
      case EventType::rep_error: return Outcome::timed_out;
      default: return Outcome::none;
    }
  }

  // The phase a successful call leads to, or nullopt when the call must fail with invalid_state.
  static std::optional<Phase> after_call(const Endpoint& ep, Call c) {
    const Phase p = ep.phase;
    switch (c) {
      case Call::send_req:
        return p == Phase::fresh ? std::optional(Phase::connecting) : std::nullopt;
      case Call::send_rep:
        return p == Phase::req_rcvd ? std::optional(Phase::rep_sent) : std::nullopt;
      case Call::send_rtu:
        return p == Phase::rep_rcvd ? std::optional(Phase::established) : std::nullopt;
      case Call::send_rej:
        if (p == Phase::connecting || p == Phase::req_rcvd || p == Phase::rep_rcvd)
          return Phase::done;
        if (p == Phase::rep_sent) return Phase::timewait;  // our REP went out: the ID rests first
        return std::nullopt;
      case Call::send_mra:
        return (p == Phase::req_rcvd || p == Phase::rep_rcvd) && !ep.mra_sent ? std::optional(p)
                                                                              : std::nullopt;
      case Call::send_dreq:
        return p == Phase::established ? std::optional(Phase::dreq_sent) : std::nullopt;
      case Call::send_drep:
        return p == Phase::dreq_rcvd ? std::optional(Phase::timewait) : std::nullopt;
      case Call::establish:
        return p == Phase::rep_sent ? std::optional(Phase::established) : std::nullopt;
      case Call::set_context:
      case Call::send_lap:
      case Call::send_apr:
      case Call::send_sidr_req:
      case Call::send_sidr_rep:
        break;  // not driven by the soak
    }
    return std::nullopt;
  }

  std::array<Engine*, 2> engines_;
  std::deque<Endpoint> endpoints_;  // stable addresses: on_destroyed's context points into it
  std::map<std::pair<Side, std::uint64_t>, Endpoint*> by_id_;
  std::vector<Endpoint*> in_callback_;  // the callbacks running now, innermost last
  std::vector<std::string> violations_;
  std::size_t violation_count_ = 0;
};

}  // namespace fastcm::test
