// --flood-rate: one hostile source. A thread sends the listen REQs from the loopback's third HCA
// (one port, so one source LID) at the asked rate for the asked time, straight through that
// port's Fabric::send_burst (no engine on this side, so nothing but the thread's speed limits the
// rate). Each REQ is encoded by the codec with a fresh comm ID, QPN (flood_qpn) and transaction
// ID, asks for CM response timeouts of 2^20 (4.3 s) both ways and 15 retries, the most a REQ can
// ask the server to keep its half-open handshake; the answers (REPs, REJs, MRAs) are received and
// counted, never answered, so no handshake completes. After the sending phase the thread keeps
// receiving (and discarding) what the server sends the port until the Flood is destroyed, so the
// port's queue never fills and the rig can drain.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <semaphore>
#include <thread>

#include "bench/fastcm_bench/options.h"
#include "bench/fastcm_bench/rig.h"

namespace fastcm::bench {

struct FloodRun {
  double seconds = 0;         // from the first REQ sent to the end of the sending phase
  double cpu_s = 0;           // the flood thread's CPU time over the same span
  std::uint64_t sent = 0;     // REQs the fabric accepted
  std::uint64_t refused = 0;  // REQs send_burst did not accept (not sent again)
  // High-water of the server's Engine::mad_buffers_in_use(), sampled every millisecond or so.
  std::uint32_t server_mads_high = 0;
  std::chrono::steady_clock::time_point ended;  // the sending phase's end
  [[nodiscard]] double offered_per_sec() const noexcept {
    return seconds > 0 ? static_cast<double>(sent) / seconds : 0;
  }
};

// What the server sent the flooding port, counted by its receive loop.
struct FloodAnswers {
  std::uint64_t reps = 0;
  std::uint64_t rejs = 0;
  std::uint64_t mras = 0;
  std::uint64_t other = 0;  // any other MAD (DREQ, ...) or one the codec refuses
};

class Flood {
 public:
  // Encodes nothing yet; reads the rig's flood port and path (rig.has_flood()). Thread contract:
  // main thread, after Rig::create_engines() (the thread samples the server's pool).
  Flood(Rig& rig, const Options& options);
  // Stops the receive loop and joins the thread. Main thread.
  ~Flood();
  Flood(const Flood&) = delete;
  Flood& operator=(const Flood&) = delete;

  // Starts the thread. Main thread, once.
  void start();
  // Blocks until `part` (0..1) of the sending phase has passed. Any one thread.
  void wait_for(double part) const;
  // Blocks until the sending phase is over and returns its figures. Any one thread, once.
  FloodRun wait_sent();
  // The answers counted so far (a snapshot). Any thread.
  [[nodiscard]] FloodAnswers answers() const noexcept;

 private:
  void run();
  // Sends `count` REQs numbered from `first`; returns how many the fabric accepted.
  std::size_t send(std::uint64_t first, std::size_t count);
  // Receives and counts what waits at the port; returns how many MADs.
  std::size_t receive();

  Rig& rig_;
  Options options_;
  std::chrono::steady_clock::time_point start_;  // set before the thread starts
  FloodRun run_;  // written by the thread, read after sent_ is acquired
  // The answer counts. Relaxed: independent counters, read as snapshots.
  std::atomic<std::uint64_t> reps_{0};
  std::atomic<std::uint64_t> rejs_{0};
  std::atomic<std::uint64_t> mras_{0};
  std::atomic<std::uint64_t> other_{0};
  // The sending phase is over: released by the thread after run_ is complete, acquired by
  // wait_sent().
  std::binary_semaphore sent_{0};
  // Relaxed: it only ends the receive loop; the join orders everything after it.
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace fastcm::bench
