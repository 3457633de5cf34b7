#include "tests/stress/client_side.h"

#include <algorithm>
#include <string>

#include "tests/stress/storm_plan.h"

namespace fastcm::stress {

namespace {

// As ServerSide's: how long a rep_received callback waits for the reaper's destroy to return.
constexpr auto kReaperWait = std::chrono::milliseconds(20);
// An abandon_later endpoint whose callbacks never start is destroyed after this many looks.
constexpr std::uint32_t kAbandonLooks = 3;
// A driver thread with nothing to do waits this long for a callback to change something.
constexpr auto kIdleWait = std::chrono::milliseconds(2);

}  // namespace

ClientSide::ClientSide(StressCluster& cluster, ProbeArena& arena, Ledger& ledger)
    : cluster_(cluster),
      engine_(cluster.client()),
      arena_(arena),
      ledger_(ledger),
      reaper_(cluster.client()) {}

ClientSide::~ClientSide() { reaper_.stop(); }

bool ClientSide::run(std::uint32_t threads, std::uint32_t per_thread, std::uint32_t window,
                     std::chrono::steady_clock::time_point deadline) {
  std::vector<std::thread> drivers;
  for (std::uint32_t t = 0; t < threads; ++t) {
    drivers.emplace_back(
        [this, t, per_thread, window, deadline] { drive(t, per_thread, window, deadline); });
  }
  for (std::thread& d : drivers) d.join();
  return !timed_out_.load(std::memory_order_relaxed);  // the drivers are joined: no race left
}

Probe* ClientSide::open(std::uint32_t conn) {
  Probe* probe = arena_.take(Role::client, conn, client_plan(conn));
  if (probe == nullptr) return nullptr;
  Id id;
  if (const Status s = engine_.create_id(
          Delivery{.handler = &ClientSide::on_callback, .handler_context = this}, probe, id);
      s != Status::ok) {
    ledger_.violation(std::string("create_id returned ") + std::string(to_string(s)) +
                      " for conn " + std::to_string(conn));
    probe->synced.store(true, std::memory_order_release);  // never an endpoint: nothing to wait for
    ledger_.complete();
    return nullptr;
  }
  probe->id.store(id.raw, std::memory_order_release);

  const Tag tag = make_tag(kReqMagic, conn, client_qpn(conn));
  ReqParams req;
  req.service_id = service_of(conn);
  req.primary = cluster_.path(client_port_of(conn), server_port_of(conn));
  req.qpn = client_qpn(conn);
  req.starting_psn = conn & 0xFF'FFFF;
  req.responder_resources = 4;
  req.initiator_depth = 4;
  req.remote_cm_response_timeout = kCmResponseTimeout;
  req.local_cm_response_timeout = kCmResponseTimeout;
  req.max_cm_retries = kMaxCmRetries;
  req.private_data = tag;
  if (const Status s = engine_.send_req(id, req); s != Status::ok) {
    ledger_.violation(std::string("send_req returned ") + std::string(to_string(s)) + ": " +
                      probe->describe());
    destroy_probe(engine_, *probe, Caller::other_thread);
    return nullptr;
  }
  tally_.reqs_sent.fetch_add(1, std::memory_order_relaxed);
  if (probe->plan == abandon_now) {
    probe->settle(Outcome::abandoned);
    destroy_probe(engine_, *probe, Caller::other_thread);
  }
  return probe;
}

void ClientSide::drive(std::uint32_t thread_index, std::uint32_t per_thread, std::uint32_t window,
                       std::chrono::steady_clock::time_point deadline) {
  struct InFlight {
    Probe* probe;
    std::uint32_t looks;
  };
  std::vector<InFlight> in_flight;
  std::uint32_t opened = 0;
  const std::uint32_t first_conn = thread_index * per_thread;
  // Whether the thread has something to do with `f` now.
  const auto actionable = [](const InFlight& f) {
    const Probe& p = *f.probe;
    if (p.destroy_claimed.load(std::memory_order_acquire)) return true;
    switch (p.plan) {
      case complete_inline:
        return false;  // its ending callback destroys it
      case abandon_later:
        return true;
      default:
        return p.outcome_now() != Outcome::none;
    }
  };
  for (;;) {
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out_.store(true, std::memory_order_relaxed);
      return;
    }
    while (in_flight.size() < window && opened < per_thread) {
      if (Probe* p = open(first_conn + opened)) in_flight.push_back({p, 0});
      ++opened;
    }
    if (in_flight.empty() && opened == per_thread) return;
    std::erase_if(in_flight, [&](InFlight& f) {
      Probe& p = *f.probe;
      if (p.destroy_claimed.load(std::memory_order_acquire))
        return true;  // its claimer finishes it
      switch (p.plan) {
        case complete_inline:
          return false;
        case abandon_later:
          if (p.started.load(std::memory_order_acquire) == 0 && ++f.looks < kAbandonLooks)
            return false;
          p.settle(Outcome::abandoned);
          break;
        default:
          if (p.outcome_now() == Outcome::none) return false;
          break;
      }
      destroy_probe(engine_, p, Caller::other_thread);  // established: sends the DREQ
      return true;
    });
    if (in_flight.size() == window || opened == per_thread) {
      (void)ledger_.wait_until(
          std::min(deadline, std::chrono::steady_clock::now() + kIdleWait), [&] {
            return std::any_of(in_flight.begin(), in_flight.end(), [&](const InFlight& f) {
              return actionable(f) && f.probe->plan != abandon_later;
            });
          });
    }
  }
}

void ClientSide::on_callback(const Event& event, void* self_ptr) {
  auto& self = *static_cast<ClientSide*>(self_ptr);
  auto* probe = static_cast<Probe*>(event.context);
  if (probe == nullptr) {
    self.ledger_.violation(std::string("client callback ") + name(event.type) +
                           " without a context");
    return;
  }
  const CallbackScope scope(*probe, event);
  if (probe->role != Role::client) {
    self.ledger_.violation(std::string(name(event.type)) +
                           " for an endpoint that never connected: " + probe->describe());
    return;
  }
  self.on_event(event, *probe);
  self.ledger_.nudge();
}

void ClientSide::count_outcome(Outcome o) {
  switch (o) {
    case Outcome::established:
      tally_.established.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::rejected:
      tally_.rejected.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::timed_out:
      tally_.timed_out.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      break;
  }
}

void ClientSide::on_event(const Event& event, Probe& probe) {
  if (probe.count(event.type) > 1 && event.type != EventType::mra_received) {
    ledger_.violation(std::string(name(event.type)) + " doubled: " + probe.describe());
  }
  // The first outcome stands; a second terminal event is a violation unless the first was an
  // abandonment (destroy racing the event) or the REJ of a passive side that gave up waiting for
  // an RTU that got lost after we were established.
  const auto settle = [&](Outcome o) {
    if (const Outcome before = probe.settle(o); before == Outcome::none) {
      count_outcome(o);
    } else if (before != Outcome::abandoned &&
               !(o == Outcome::rejected && before == Outcome::established)) {
      ledger_.violation(std::string(name(event.type)) + " after the outcome " + name(before) +
                        ": " + probe.describe());
    }
  };
  switch (event.type) {
    case EventType::rep_received:
      on_rep(event, probe);
      return;
    case EventType::rej_received:
      if (const auto* rej = std::get_if<RejReceived>(&event.params)) {
        probe.rej_reason.store(rej->reason, std::memory_order_relaxed);
      }
      settle(Outcome::rejected);
      break;
    case EventType::req_error:
      settle(Outcome::timed_out);
      break;
    case EventType::dreq_received:
      if (const Outcome o = probe.outcome_now();
          o != Outcome::established && o != Outcome::abandoned) {
        ledger_.violation(std::string("dreq_received after the outcome ") + name(o) + ": " +
                          probe.describe());
      }
      break;
    case EventType::mra_received:
    case EventType::drep_received:
    case EventType::dreq_error:
    case EventType::timewait_exit:
      return;
    default:
      ledger_.violation(std::string("unexpected client event ") + name(event.type) + ": " +
                        probe.describe());
      return;
  }
  if (probe.plan == complete_inline) destroy_probe(engine_, probe, Caller::own_callback);
}

void ClientSide::on_rep(const Event& event, Probe& probe) {
  const auto* rep = std::get_if<RepReceived>(&event.params);
  const std::optional<std::uint32_t> conn = read_tag(event.private_data, kRepMagic, &server_qpn);
  if (rep == nullptr || conn != probe.conn || rep->remote_qpn != server_qpn(probe.conn)) {
    ledger_.violation("rep_received with another connection's REP: " + probe.describe());
  }
  bool destroyed = false;
  if (probe.plan == abandon_in_callback) {
    probe.settle(Outcome::abandoned);
    reaper_.hand(probe);
    const auto until = std::chrono::steady_clock::now() + kReaperWait;
    while (!(destroyed =
                 probe.destroy_returned.load(std::memory_order_acquire))) {  // pairs: start_destroy
      if (std::chrono::steady_clock::now() >= until) break;
      std::this_thread::yield();
    }
    if (destroyed) tally_.destroyed_during_callback.fetch_add(1, std::memory_order_relaxed);
  }
  // Once destroy returned, calls on the endpoint fail, also from its running callback.
  const Status s = engine_.send_rtu(event.id, {});
  const bool claimed = probe.destroy_claimed.load(std::memory_order_acquire);
  if (destroyed ? s != Status::stale_id : s != Status::ok && !(s == Status::stale_id && claimed)) {
    ledger_.violation(std::string("send_rtu returned ") + std::string(to_string(s)) + ": " +
                      probe.describe());
  }
  if (s != Status::ok) return;
  if (const Outcome before = probe.settle(Outcome::established); before == Outcome::none) {
    count_outcome(Outcome::established);
  } else if (before != Outcome::abandoned) {
    ledger_.violation(std::string("rep_received after the outcome ") + name(before) + ": " +
                      probe.describe());
  }
  if (probe.plan == complete_inline) destroy_probe(engine_, probe, Caller::own_callback);
}

}  // namespace fastcm::stress
