#include "tests/stress/server_side.h"

#include <poll.h>

#include <array>
#include <chrono>
#include <string>

#include "tests/stress/storm_plan.h"

namespace fastcm::stress {

namespace {

// How long a callback waits for the reaper's destroy to return: long enough for a busy 2-core
// machine to schedule the reaper, short enough that a stalled shard only delays retries.
constexpr auto kReaperWait = std::chrono::milliseconds(20);

}  // namespace

ServerSide::ServerSide(Engine& engine, ProbeArena& arena, Ledger& ledger)
    : engine_(engine), arena_(arena), ledger_(ledger), reaper_(engine) {}

ServerSide::~ServerSide() { stop(); }

void ServerSide::start_polling(EventQueue& queue) {
  poller_ = std::thread([this, &queue] { poll_loop(queue); });
}

void ServerSide::stop() {
  stop_polling_.store(true, std::memory_order_release);  // pairs: poll_loop's acquire
  if (poller_.joinable()) poller_.join();
  reaper_.stop();
}

void ServerSide::on_callback(const Event& event, void* self_ptr) {
  auto& self = *static_cast<ServerSide*>(self_ptr);
  if (event.type == EventType::req_received) {
    self.on_request(event, std::nullopt);
    return;
  }
  auto* probe = static_cast<Probe*>(event.context);
  if (probe == nullptr) {
    self.ledger_.violation(std::string("server callback ") + name(event.type) +
                           " without a context");
    return;
  }
  self.on_endpoint_event(event, *probe, std::nullopt);
}

void ServerSide::poll_loop(EventQueue& queue) {
  std::array<Event, 32> events;
  for (;;) {
    // Destroys that returned before poll() begins: their endpoints' events must not come out of it.
    const std::uint64_t polled_from = ledger_.last_seq();
    const std::size_t n = engine_.poll(queue, events);
    if (n == 0) {
      if (stop_polling_.load(std::memory_order_acquire)) return;  // pairs: stop()'s release
      pollfd fd{.fd = queue.event_fd(), .events = POLLIN, .revents = 0};
      (void)::poll(&fd, 1, 5);  // wakes when events arrive; the timeout re-checks the stop flag
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Event& event = events[i];
      if (event.type == EventType::req_received) {
        on_request(event, polled_from);
      } else if (const auto it = polled_.find(event.id.raw); it != polled_.end()) {
        on_endpoint_event(event, *it->second, polled_from);
      } else {
        ledger_.violation(std::string("polled ") + name(event.type) +
                          " for an endpoint never seen");
      }
      engine_.release(event);
    }
  }
}

void ServerSide::on_request(const Event& event, std::optional<std::uint64_t> polled_from) {
  const Caller caller = polled_from ? Caller::other_thread : Caller::own_callback;
  reqs_.fetch_add(1, std::memory_order_relaxed);
  auto* listen = static_cast<ListenProbe*>(event.context);
  const auto* req = std::get_if<ReqReceived>(&event.params);
  const std::optional<std::uint32_t> conn = read_tag(event.private_data, kReqMagic, &client_qpn);
  if (listen == nullptr || req == nullptr || !conn || req->remote_qpn != client_qpn(*conn) ||
      req->service_id != listen->service_id || req->service_id != service_of(*conn)) {
    ledger_.violation("REQ delivered with the wrong listen context, parameters or private data");
    (void)engine_.destroy(event.id);
    return;
  }
  if (listen->destroyed_runs.load(std::memory_order_acquire) != 0) {
    ledger_.violation("REQ delivered for a listen whose on_destroyed ran (service " +
                      std::to_string(listen->service_id) + ")");
  }
  listen->reqs.fetch_add(1, std::memory_order_relaxed);
  ledger_.nudge();

  const ServerPlan plan = server_plan(*conn);
  Probe* probe = arena_.take(Role::server, *conn, plan);
  if (probe == nullptr) {
    (void)engine_.destroy(event.id);
    return;
  }
  probe->id.store(event.id.raw, std::memory_order_release);
  if (const Status s = engine_.set_context(event.id, probe); s != Status::ok) {
    ledger_.violation(std::string("set_context on a new REQ returned ") +
                      std::string(to_string(s)));
  }
  if (caller == Caller::other_thread) polled_.emplace(event.id.raw, probe);
  const CallbackScope scope(*probe, event, polled_from);

  if (caller == Caller::own_callback && *conn % 16 == 0) {
    // destroy_sync cannot wait for the shards from a shard's thread: it refuses, destroying
    // nothing.
    const Status sync = engine_.destroy_sync(event.id);
    ConnectionInfo info;
    const Status still = engine_.connection_info(event.id, info);
    if (sync != Status::would_deadlock || still != Status::ok) {
      ledger_.violation(std::string("destroy_sync in a callback returned ") +
                        std::string(to_string(sync)) + ", then connection_info " +
                        std::string(to_string(still)));
    }
  }

  const Tag tag = make_tag(kRepMagic, *conn, server_qpn(*conn));
  RepParams rep;
  rep.qpn = server_qpn(*conn);
  rep.starting_psn = *conn & 0xFF'FFFF;
  rep.responder_resources = 4;
  rep.initiator_depth = 4;
  rep.private_data = tag;
  // An answer must succeed from the REQ's callback. A polled REQ may be answered after the
  // endpoint moved on (a REJ or a timeout queued behind it): invalid_state then.
  const auto answered = [&](Status s, const char* what) {
    if (s != Status::ok && !(polled_from && s == Status::invalid_state)) {
      ledger_.violation(std::string(what) + " returned " + std::string(to_string(s)) + ": " +
                        probe->describe());
    }
  };
  switch (plan) {
    case accept:
    case accept_and_disconnect:
      answered(engine_.send_rep(event.id, rep), "send_rep");
      return;
    case reject: {
      RejParams rej;
      rej.private_data = tag;
      answered(engine_.send_rej(event.id, rej), "send_rej");
      probe->settle(Outcome::rejected);
      retire(*probe, caller);
      return;
    }
    case destroy_at_req:
      probe->settle(Outcome::abandoned);
      destroy_probe(engine_, *probe, caller);
      return;
    case reaper_at_req: {
      probe->settle(Outcome::abandoned);
      const bool destroyed = reap_while_waiting(*probe);
      // Once destroy returned, calls on the endpoint fail, also from its running callback.
      const Status s = engine_.send_rep(event.id, rep);
      if (destroyed ? s != Status::stale_id
                    : s != Status::ok && s != Status::stale_id &&
                          !(polled_from && s == Status::invalid_state)) {
        ledger_.violation(std::string("send_rep racing the reaper's destroy returned ") +
                          std::string(to_string(s)) + ": " + probe->describe());
      }
      return;
    }
    case reaper_later:
      probe->settle(Outcome::abandoned);
      reaper_.hand(*probe);
      return;
  }
}

void ServerSide::on_endpoint_event(const Event& event, Probe& probe,
                                   std::optional<std::uint64_t> polled_from) {
  const Caller caller = polled_from ? Caller::other_thread : Caller::own_callback;
  const CallbackScope scope(probe, event, polled_from);
  if (probe.role != Role::server) {
    ledger_.violation(std::string(name(event.type)) +
                      " for an endpoint that never connected: " + probe.describe());
    return;
  }
  const auto once = [&] {
    if (probe.count(event.type) > 1)
      ledger_.violation(std::string(name(event.type)) + " doubled: " + probe.describe());
  };
  const auto settle = [&](Outcome o) {
    const Outcome before = probe.settle(o);
    if (before != Outcome::none && before != o && before != Outcome::abandoned) {
      ledger_.violation(std::string(name(event.type)) + " after the outcome " + name(before) +
                        ": " + probe.describe());
    }
  };
  switch (event.type) {
    case EventType::rtu_received:
      once();
      settle(Outcome::established);
      if (probe.plan == accept_and_disconnect) retire(probe, caller);
      return;
    case EventType::dreq_received:  // also in rep_sent: the peer is established (our RTU was lost)
      once();
      settle(Outcome::established);
      retire(probe, caller);
      return;
    case EventType::rej_received:
      once();
      if (probe.outcome_now() != Outcome::established) settle(Outcome::rejected);
      retire(probe, caller);
      return;
    case EventType::rep_error:
      once();
      settle(Outcome::timed_out);
      retire(probe, caller);
      return;
    case EventType::timewait_exit:
      once();
      retire(probe, caller);
      return;
    case EventType::drep_received:
    case EventType::dreq_error:
      once();
      return;
    case EventType::mra_received:
      return;
    case EventType::call_failed: {
      // A posted answer's refusal: the polled REQ's endpoint had moved on (on_request's
      // invalid_state, reported instead of returned). Anything else is wrong.
      const auto& failed = std::get<CallFailed>(event.params);
      if (!polled_from || failed.status != Status::invalid_state) {
        ledger_.violation(std::string("call_failed: ") + std::string(to_string(failed.call)) + " " +
                          std::string(to_string(failed.status)) + ": " + probe.describe());
      }
      return;
    }
    default:
      ledger_.violation(std::string("unexpected server event ") + name(event.type) + ": " +
                        probe.describe());
      return;
  }
}

void ServerSide::retire(Probe& probe, Caller caller) {
  if (destroy_inline(probe.conn)) {
    destroy_probe(engine_, probe, caller);
  } else {
    reaper_.hand(probe);
  }
}

bool ServerSide::reap_while_waiting(Probe& probe) {
  reaper_.hand(probe);
  const auto deadline = std::chrono::steady_clock::now() + kReaperWait;
  while (!probe.destroy_returned.load(std::memory_order_acquire)) {  // pairs: start_destroy
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  destroyed_during_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace fastcm::stress
