// The storm's client: threads that each open a quota of connections (a bounded window in flight),
// every REQ on the port pair and service its number picks, and that end each endpoint per
// ClientPlan: destroyed by the thread once the attempt ended, inside the callback that ended it,
// right after the REQ, while its callbacks run, or by the reaper during its rep_received callback.
//
// Thread contract: the constructor, run() and stop_reaper() from the test's thread; the callbacks
// run on the client engine's shard threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "fastcm/engine.h"
#include "tests/stress/probe.h"
#include "tests/stress/reaper.h"
#include "tests/stress/stress_env.h"

namespace fastcm::stress {

struct ClientTally {
  std::atomic<std::uint64_t> reqs_sent{0};
  std::atomic<std::uint64_t> established{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> timed_out{0};
  std::atomic<std::uint64_t> destroyed_during_callback{0};
};

class ClientSide {
 public:
  ClientSide(StressCluster& cluster, ProbeArena& arena, Ledger& ledger);
  ~ClientSide();
  ClientSide(const ClientSide&) = delete;
  ClientSide& operator=(const ClientSide&) = delete;

  // Runs `threads` threads of `per_thread` connections each, `window` in flight per thread, and
  // returns when they are done (every endpoint destroyed or handed over) or `deadline` passed.
  // False at the deadline.
  bool run(std::uint32_t threads, std::uint32_t per_thread, std::uint32_t window,
           std::chrono::steady_clock::time_point deadline);
  void stop_reaper() { reaper_.stop(); }

  [[nodiscard]] const ClientTally& tally() const noexcept { return tally_; }

 private:
  static void on_callback(const Event& event, void* self);
  void on_event(const Event& event, Probe& probe);
  void on_rep(const Event& event, Probe& probe);
  void drive(std::uint32_t thread_index, std::uint32_t per_thread, std::uint32_t window,
             std::chrono::steady_clock::time_point deadline);
  // Creates the endpoint of connection `conn` and sends its REQ; null when that failed.
  Probe* open(std::uint32_t conn);
  void count_outcome(Outcome o);

  StressCluster& cluster_;
  Engine& engine_;
  ProbeArena& arena_;
  Ledger& ledger_;
  Reaper reaper_;
  ClientTally tally_;
  std::atomic<bool> timed_out_{false};  // a driver thread hit the deadline
};

}  // namespace fastcm::stress
