#include "tests/stress/probe.h"

#include <string_view>

namespace fastcm::stress {

const char* name(Role r) noexcept {
  switch (r) {
    case Role::client:
      return "client";
    case Role::server:
      return "server";
    case Role::idle:
      return "idle";
  }
  return "?";
}

const char* name(Outcome o) noexcept {
  switch (o) {
    case Outcome::none:
      return "none";
    case Outcome::established:
      return "established";
    case Outcome::rejected:
      return "rejected";
    case Outcome::timed_out:
      return "timed_out";
    case Outcome::abandoned:
      return "abandoned";
  }
  return "?";
}

const char* name(EventType t) noexcept {
  static constexpr const char* kNames[kEventTypes] = {
      "req_received",      "req_error",      "rep_received",     "rep_error",     "rtu_received",
      "user_established",  "rej_received",   "mra_received",     "dreq_received", "dreq_error",
      "drep_received",     "timewait_exit",  "lap_received",     "lap_error",     "apr_received",
      "sidr_req_received", "sidr_req_error", "sidr_rep_received", "call_failed"};
  const auto i = static_cast<std::size_t>(t);
  return i < kEventTypes ? kNames[i] : "?";
}

std::uintptr_t thread_token() noexcept {
  thread_local const char marker = 0;
  return reinterpret_cast<std::uintptr_t>(&marker);
}

// ---- Ledger ------------------------------------------------------------------------------------

void Ledger::violation(std::string what) {
  violations_.fetch_add(1, std::memory_order_relaxed);
  const std::scoped_lock guard(lock_);
  if (texts_.size() < kKept) texts_.push_back(std::move(what));
}

std::string Ledger::violation_report() const {
  const std::scoped_lock guard(lock_);
  std::string out;
  for (const std::string& t : texts_) out += "  " + t + "\n";
  return out;
}

void Ledger::complete() {
  completed_.fetch_add(1, std::memory_order_release);  // pairs: completed()'s acquire
  nudge();
}

void Ledger::nudge() {
  // Taking the lock orders the change against a waiter between its check and its wait.
  { const std::scoped_lock guard(wake_lock_); }
  wake_.notify_all();
}

// ---- Probe -------------------------------------------------------------------------------------

std::string Probe::describe() const {
  std::string out =
      std::string(name(role)) + " conn " + std::to_string(conn) + " plan " + std::to_string(plan) +
      " id " + std::to_string(id.load(std::memory_order_relaxed)) + " outcome " +
      name(outcome_now()) + " started " + std::to_string(started.load(std::memory_order_relaxed)) +
      " finished " + std::to_string(finished.load(std::memory_order_relaxed)) + " claimed " +
      std::to_string(destroy_claimed.load(std::memory_order_relaxed)) + " returned " +
      std::to_string(destroy_returned.load(std::memory_order_relaxed)) + " on_destroyed " +
      std::to_string(destroyed_runs.load(std::memory_order_relaxed)) + " events:";
  for (std::size_t t = 0; t < kEventTypes; ++t) {
    const auto n = events[t].load(std::memory_order_relaxed);
    if (n > 0) out += std::string(" ") + name(static_cast<EventType>(t)) + "x" + std::to_string(n);
  }
  return out;
}

Probe* ProbeArena::take(Role role, std::uint32_t conn, std::uint8_t plan) {
  // The fields are written after the increment: taken()'s readers (the end-of-run checks) read
  // the arena only once every thread taking probes has finished (joined, or its callbacks done).
  const std::size_t i = next_.fetch_add(1, std::memory_order_acq_rel);
  if (i >= capacity_) {
    ledger_.violation("probe arena exhausted (" + std::to_string(capacity_) + ")");
    return nullptr;
  }
  Probe& p = probes_[i];
  p.ledger = &ledger_;
  p.role = role;
  p.conn = conn;
  p.plan = plan;
  return &p;
}

// ---- callbacks
// -----------------------------------------------------------------------------------

CallbackScope::CallbackScope(Probe& probe, const Event& event,
                             std::optional<std::uint64_t> polled_from)
    : probe_(probe), polled_(polled_from.has_value()) {
  Ledger& ledger = *probe.ledger;
  const auto what = [&](std::string_view why) {
    ledger.violation(std::string(name(event.type)) + (polled_ ? " (polled) " : " ") +
                     std::string(why) + ": " + probe.describe());
  };
  probe.events[static_cast<std::size_t>(event.type)].fetch_add(1, std::memory_order_relaxed);
  const Id got{probe.id.load(std::memory_order_acquire)};
  if (!got.empty() && got != event.id)
    what("carries another endpoint's Id " + std::to_string(event.id.raw));
  if (polled_) {
    const std::uint64_t returned = probe.returned_seq.load(std::memory_order_acquire);
    if (returned != 0 && returned <= *polled_from)
      what("returned by a poll() that began after destroy returned");
    return;
  }
  if (probe.running.exchange(1, std::memory_order_acq_rel) != 0)
    what("overlaps another callback of its endpoint");
  probe.started.fetch_add(1, std::memory_order_acq_rel);
  if (probe.destroyed_runs.load(std::memory_order_acquire) != 0)
    what("started after on_destroyed ran");
  if (probe.fenced_seq.load(std::memory_order_acquire) != 0) {
    what("started after destroy returned and its shard ran a later call");
  }
  if (probe.destroy_returned.load(std::memory_order_acquire) &&
      probe.destroy_thread.load(std::memory_order_acquire) == thread_token()) {
    what("started after destroy returned on this thread");
  }
}

CallbackScope::~CallbackScope() {
  if (polled_) return;
  probe_.finished.fetch_add(1, std::memory_order_acq_rel);
  // Release: pairs with on_probe_destroyed's acquire load, which must find the callback over.
  probe_.running.store(0, std::memory_order_release);
}

void on_probe_destroyed(void* ctx) {
  auto& probe = *static_cast<Probe*>(ctx);
  Ledger& ledger = *probe.ledger;
  if (probe.destroyed_runs.fetch_add(1, std::memory_order_acq_rel) != 0) {
    ledger.violation("on_destroyed ran twice: " + probe.describe());
    return;
  }
  if (!probe.destroy_claimed.load(std::memory_order_acquire)) {
    ledger.violation("on_destroyed without destroy: " + probe.describe());
  }
  if (probe.running.load(std::memory_order_acquire) != 0 ||
      probe.started.load(std::memory_order_acquire) !=
          probe.finished.load(std::memory_order_acquire)) {
    ledger.violation("on_destroyed while a callback of its endpoint runs: " + probe.describe());
  }
  ledger.complete();
}

void on_listen_destroyed(void* ctx) {
  auto& listen = *static_cast<ListenProbe*>(ctx);
  if (listen.destroyed_runs.fetch_add(1, std::memory_order_acq_rel) != 0) {
    listen.ledger->violation("a listen's on_destroyed ran twice (service " +
                             std::to_string(listen.service_id) + ")");
    return;
  }
  listen.ledger->nudge();
}

bool start_destroy(Engine& engine, Probe& probe) {
  if (probe.destroy_claimed.exchange(true, std::memory_order_acq_rel)) return false;
  const Status s = engine.destroy(probe.handle(), &on_probe_destroyed, &probe);
  if (s != Status::ok) {
    probe.ledger->violation(std::string("destroy returned ") + std::string(to_string(s)) + ": " +
                            probe.describe());
    return false;
  }
  probe.destroy_thread.store(thread_token(), std::memory_order_relaxed);
  probe.destroy_returned.store(true, std::memory_order_release);  // pairs: CallbackScope's acquire
  probe.returned_seq.store(probe.ledger->next_seq(),
                           std::memory_order_release);  // pairs: CallbackScope
  return true;
}

void finish_destroy(Engine& engine, Probe& probe, Caller caller) {
  Ledger& ledger = *probe.ledger;
  const Id id = probe.handle();
  // Executed by the endpoint's shard (inline from its own callback): the endpoint is gone.
  ConnectionInfo info;
  const Status after = engine.connection_info(id, info);
  if (after != Status::stale_id) {
    ledger.violation(std::string("connection_info after destroy returned ") +
                     std::string(to_string(after)) + ": " + probe.describe());
  }
  if (caller == Caller::other_thread) {
    probe.fenced_seq.store(ledger.next_seq(), std::memory_order_release);  // pairs: CallbackScope
  }
  const Status again = engine.destroy(id, &on_probe_destroyed, &probe);
  if (again != Status::stale_id) {
    ledger.violation(std::string("a second destroy returned ") + std::string(to_string(again)) +
                     ": " + probe.describe());
  }
}

bool destroy_probe(Engine& engine, Probe& probe, Caller caller) {
  if (!start_destroy(engine, probe)) return false;
  finish_destroy(engine, probe, caller);
  return true;
}

}  // namespace fastcm::stress
