// Instrumentation of the stress suite: one Probe per endpoint (the context the engine hands back
// with every event) and one ListenProbe per listen, whose atomics record what the engine did to
// them from any thread, and a Ledger that collects invariant violations and completions.
//
// The invariants of engine.h checked here, each only where it is conclusive from outside:
// - callbacks of one endpoint never overlap (a flag exchanged at entry);
// - no callback starts after on_destroyed ran, nor after destroy returned on the thread now
//   running the callback (destroy from inside a callback of the endpoint's own shard), nor after
//   a call made after destroy returned was executed by the endpoint's shard (a "fence": the shard
//   runs one item at a time, so a callback starting after that call ran started after destroy
//   returned; without the fence, a callback the shard began just before the detach may still be
//   entering, which the contract allows);
// - poll() returns no event of an endpoint whose destroy returned before poll() began (events
//   it returned earlier may still be handled after a destroy from another thread: the contract
//   cannot order those, so polled events are not counted as running callbacks);
// - on_destroyed runs exactly once per destroy, with no callback of its endpoint running;
// - no event type that ends a phase arrives twice (no event doubled).
//
// Thread contract: every member is atomic or written before the endpoint is published to the
// engine (create_id or set_context happen-after it); Ledger is safe from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fastcm/engine.h"

namespace fastcm::stress {

inline constexpr std::size_t kEventTypes =
    static_cast<std::size_t>(EventType::call_failed) + 1;

enum class Role : std::uint8_t { client, server, idle };

// How a connection attempt ended for one side (the first outcome stands).
enum class Outcome : std::uint8_t { none, established, rejected, timed_out, abandoned };

[[nodiscard]] const char* name(Role r) noexcept;
[[nodiscard]] const char* name(Outcome o) noexcept;
[[nodiscard]] const char* name(EventType t) noexcept;

// A value unique to the calling thread, for "was destroy called on this very thread".
[[nodiscard]] std::uintptr_t thread_token() noexcept;

// Violations (kept up to a bound, all counted), completions, and a sequence that orders destroy
// returns and fences against the start of poll() calls.
class Ledger {
 public:
  void violation(std::string what);
  [[nodiscard]] std::size_t violation_count() const noexcept {
    return violations_.load(std::memory_order_relaxed);  // a count; the texts are under the lock
  }
  [[nodiscard]] std::string violation_report() const;

  // An endpoint's probe is done (on_destroyed ran, or destroy_sync returned): counted, and
  // wait_until woken.
  void complete();
  [[nodiscard]] std::uint64_t completed() const noexcept {
    return completed_.load(std::memory_order_acquire);  // pairs: complete()'s release increment
  }
  // Something a waiter may be waiting for changed (an outcome, a REQ at a listen): wakes
  // wait_until without counting a completion.
  void nudge();
  // Waits until `done()` holds, re-checked on every complete() or nudge() and every 10 ms; false
  // at the deadline.
  template <class Pred>
  bool wait_until(std::chrono::steady_clock::time_point deadline, Pred done) {
    std::unique_lock lock(wake_lock_);
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      wake_.wait_for(lock, std::chrono::milliseconds(10));
    }
    return true;
  }

  // The next sequence number (1, 2, ...), and the last one handed out. Acq_rel/acquire: a thread
  // that reads a number sees what the thread that took it did before.
  std::uint64_t next_seq() noexcept { return seq_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  [[nodiscard]] std::uint64_t last_seq() const noexcept {
    return seq_.load(std::memory_order_acquire);
  }

 private:
  static constexpr std::size_t kKept = 40;
  mutable std::mutex lock_;  // guards texts_
  std::vector<std::string> texts_;
  std::atomic<std::size_t> violations_{0};
  std::mutex wake_lock_;  // pairs complete()'s notify with wait_until's check
  std::condition_variable wake_;
  // Release increment, acquire load in completed(): a waiter that sees the count sees what the
  // completing thread recorded before it.
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> seq_{0};
};

struct Probe {
  // Set before the endpoint is published to the engine, then read-only.
  Ledger* ledger = nullptr;
  Role role = Role::idle;
  std::uint32_t conn = 0;  // the client's connection number (servers: from the REQ)
  std::uint8_t plan = 0;   // what the side does with the endpoint (client_driver / server_policy)

  std::atomic<std::uint64_t> id{0};  // Id::raw, stored by whoever learned the Id first
  std::atomic<std::uint32_t> running{0};
  std::atomic<std::uint32_t> started{0};
  std::atomic<std::uint32_t> finished{0};
  std::atomic<bool> destroy_claimed{false};   // exactly one thread calls destroy
  std::atomic<bool> destroy_returned{false};  // release after destroy() returned ok
  std::atomic<std::uintptr_t> destroy_thread{0};
  std::atomic<std::uint64_t> returned_seq{0};  // Ledger sequence once destroy returned, else 0
  std::atomic<std::uint64_t> fenced_seq{0};    // Ledger sequence once the fence ran, else 0
  std::atomic<std::uint32_t> destroyed_runs{0};
  std::atomic<bool> synced{false};  // destroy_sync: no on_destroyed follows
  std::atomic<std::uint8_t> outcome{0};
  std::atomic<std::uint16_t> rej_reason{0};
  std::array<std::atomic<std::uint16_t>, kEventTypes> events{};

  [[nodiscard]] Id handle() const noexcept { return Id{id.load(std::memory_order_acquire)}; }
  [[nodiscard]] Outcome outcome_now() const noexcept {
    return static_cast<Outcome>(outcome.load(std::memory_order_acquire));
  }
  // Settles the outcome once: Outcome::none when this call settled it, else the outcome that
  // stands (read by the failed exchange itself, so a settle racing this one on another thread, an
  // abandoning destroy, is seen; a value read before the call could miss it).
  Outcome settle(Outcome o) noexcept {
    std::uint8_t standing = 0;
    outcome.compare_exchange_strong(standing, static_cast<std::uint8_t>(o),
                                    std::memory_order_acq_rel);
    return static_cast<Outcome>(standing);
  }
  [[nodiscard]] std::uint16_t count(EventType t) const noexcept {
    return events[static_cast<std::size_t>(t)].load(std::memory_order_relaxed);
  }
  // Done for the end condition: its on_destroyed ran (or destroy_sync returned).
  [[nodiscard]] bool done() const noexcept {
    return destroyed_runs.load(std::memory_order_acquire) > 0 ||
           synced.load(std::memory_order_acquire);
  }
  [[nodiscard]] std::string describe() const;
};

// A fixed arena of probes (stable addresses; never freed while an engine may hand them back).
class ProbeArena {
 public:
  ProbeArena(Ledger& ledger, std::size_t capacity)
      : ledger_(ledger), probes_(std::make_unique<Probe[]>(capacity)), capacity_(capacity) {}

  // A fresh probe, or null (recorded as a violation: the arena was sized too small).
  Probe* take(Role role, std::uint32_t conn, std::uint8_t plan);
  [[nodiscard]] std::size_t taken() const noexcept {
    return std::min(next_.load(std::memory_order_acquire), capacity_);  // pairs: take()'s increment
  }
  [[nodiscard]] Probe& at(std::size_t i) noexcept { return probes_[i]; }

 private:
  Ledger& ledger_;
  std::unique_ptr<Probe[]> probes_;
  std::size_t capacity_;
  std::atomic<std::size_t> next_{0};
};

struct ListenProbe {
  Ledger* ledger = nullptr;
  std::uint64_t service_id = 0;
  std::atomic<std::uint32_t> reqs{0};
  std::atomic<std::uint32_t> destroyed_runs{0};
};

// Brackets one callback (or one polled event) of `probe`: the entry and exit checks above, and the
// event counted. `polled_from`: for an event poll() returned, the Ledger sequence read before that
// poll() began; nullopt for a callback.
class CallbackScope {
 public:
  CallbackScope(Probe& probe, const Event& event,
                std::optional<std::uint64_t> polled_from = std::nullopt);
  ~CallbackScope();
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

 private:
  Probe& probe_;
  bool polled_;
};

// on_destroyed of an endpoint (ctx: its Probe) and of a listen (ctx: its ListenProbe).
void on_probe_destroyed(void* ctx);
void on_listen_destroyed(void* ctx);

// Where destroy is called from, which decides what can be checked right after it.
enum class Caller : std::uint8_t {
  own_callback,  // inside a callback of this endpoint (its shard's thread): calls run inline
  other_thread,  // a thread that is no shard of this engine: calls are shard commands
};

// Claims `probe` and destroys its endpoint, checking destroy's status (ok); false when another
// thread had claimed it (nothing done).
bool start_destroy(Engine& engine, Probe& probe);
// After start_destroy returned true: checks that the endpoint is gone (connection_info says
// stale_id; from another thread that call, run by the endpoint's shard, is the fence) and that a
// second destroy says stale_id.
void finish_destroy(Engine& engine, Probe& probe, Caller caller);
// Both, as one step; false when another thread had claimed `probe`.
bool destroy_probe(Engine& engine, Probe& probe, Caller caller);

}  // namespace fastcm::stress
