// --flood-rate: how soon the server answers a fresh connect once the flood has stopped. From the
// flood's end the probe starts a connection attempt every 5 ms from the client's first port (whose
// server port the flood hit), each on an endpoint of its own with the storm's REQ (its QPN from
// probe_qpn), until the first REP comes back; each endpoint is destroyed at its first answer or
// timeout (a REP is answered by that destroy's REJ, so the server's side goes too).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "bench/fastcm_bench/rig.h"
#include "fastcm/engine.h"

namespace fastcm::bench {

struct Recovery {
  bool answered = false;      // a REP came within the probe's 30 s
  double after_s = 0;         // from the flood's end to the first REP
  std::uint64_t attempts = 0; // connection attempts started
};

class RecoveryProbe {
 public:
  // `req`: the REQ to send (its QPN is replaced); it must stay valid while the probe runs.
  // Preallocates the attempts' records. Main thread, before the engines are destroyed.
  RecoveryProbe(Rig& rig, const ReqParams& req);
  ~RecoveryProbe() = default;
  RecoveryProbe(const RecoveryProbe&) = delete;
  RecoveryProbe& operator=(const RecoveryProbe&) = delete;

  // Probes from `flood_end` (the flood's sending phase is over) until the first REP or 30 s.
  // Blocks. Any one thread, once.
  Recovery run(std::chrono::steady_clock::time_point flood_end);

  // Destroys the attempts' endpoints still open (a give-up leaves some waiting). Main thread,
  // after run() returned.
  void tear_down();

 private:
  static void on_event(const Event& event, void* self);

  Rig& rig_;
  ReqParams req_;
  // Steady-clock ns of the first REP; 0: none yet. Relaxed: it publishes only itself.
  std::atomic<std::uint64_t> first_rep_ns_{0};
  std::unique_ptr<std::uint64_t[]> ids_;  // Id::raw of every attempt (run()'s thread only)
  std::uint64_t attempts_ = 0;
};

}  // namespace fastcm::bench
