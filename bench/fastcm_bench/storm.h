// The connection storm: W lanes of clients opening connections to one listen (the Acceptor's in
// this process with --role both, another process's with --role client), the client's event
// handling (callbacks or a poll thread) and the teardown.
//
// Each lane runs one connection at a time: create_id + REQ; on the REP the client sends the RTU
// and the lane starts its next connection (with --disconnect it first sends a DREQ and waits for
// the DREP and time-wait, then destroys the endpoint). The next connection is started by the
// thread that handled the event: in callback mode inline on the client shard's thread (so a
// lane stays on one shard), in poll mode on the client's poll thread. Lane k runs connections
// k, k + W, k + 2W, ...: every lane has the same share, so no client shard collects more than
// its lanes' share of the connections that stay open (the engine's per-shard tables are
// bounded; see size_rig()).
//
// Nothing is allocated per connection: lanes, the Id of every connection that stays open, the
// counters (tally.h) and the latency histogram are allocated before the storm.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <semaphore>
#include <vector>

#include "bench/fastcm_bench/acceptor.h"
#include "bench/fastcm_bench/event_pump.h"
#include "bench/fastcm_bench/latency_histogram.h"
#include "bench/fastcm_bench/process_stats.h"
#include "bench/fastcm_bench/options.h"
#include "bench/fastcm_bench/progress.h"
#include "bench/fastcm_bench/rig.h"
#include "bench/fastcm_bench/tally.h"
#include "fastcm/engine.h"

namespace fastcm::bench {

struct StormRun {
  double wall_s = 0;
  double cpu_s = 0;
  ContextSwitches switches;  // of the whole process over the same span
  bool stalled = false;  // no connection settled for a long while (storm.cpp): the run gave up
  // High-water marks sampled every 50 ms: pooled MADs taken, and (poll mode) events queued.
  std::uint32_t server_mads_high = 0;
  std::uint32_t client_mads_high = 0;
  std::size_t server_queue_high = 0;
  std::size_t client_queue_high = 0;
};

class Storm {
 public:
  // Preallocates everything the storm needs; counts into `tally`. `acceptor`: the listen of
  // --role both (its event queue's high-water is sampled), null with --role client. Throws
  // std::runtime_error when the rdma_cm header cannot be built. Thread contract: main thread,
  // before the engines.
  Storm(Rig& rig, const Options& options, const RigSizing& sizing, Tally& tally,
        const Acceptor* acceptor);
  // Stops the poll thread. Main thread, before the engines are destroyed.
  ~Storm() = default;
  Storm(const Storm&) = delete;
  Storm& operator=(const Storm&) = delete;

  // In poll mode creates the client's event queue and starts its thread. Throws
  // std::runtime_error. Main thread, after Rig::create_engines().
  void prepare();

  // Runs the storm until the connection limit or the duration is reached and every lane's last
  // connection has settled; feeds `progress` 4 times a second. Main thread, once.
  StormRun run(Progress& progress);

  // Destroys every connection left open (paced: at most max(window, 1024) disconnects in flight) and
  // waits until the rig's engines hold no MAD and the fabric is empty. Main thread, after run().
  Teardown tear_down();

  [[nodiscard]] const LatencyHistogram& latency() const noexcept { return latency_; }
  // The REQ the storm sends from client port `port` (0-based), before its QPN and PSN are set.
  // Any thread; valid for the Storm's lifetime.
  [[nodiscard]] const ReqParams& req_template(std::uint32_t port) const {
    return req_templates_[port];
  }

 private:
  // One client: the connection it runs now. Written by whichever thread starts the lane's next
  // connection (the main thread first, then the thread handling the lane's events) and read by
  // the thread handling its events; the engine orders the two through the REQ and the REP. The
  // fields are atomics (relaxed) because that order passes through rte_rings, which TSan does
  // not see.
  struct alignas(64) Lane {
    std::uint32_t port = 0;                      // client and server port index
    std::atomic<std::uint64_t> next{0};          // the lane's next connection number
    std::atomic<std::uint64_t> current{0};       // Id::raw of the lane's endpoint
    std::atomic<std::uint64_t> req_sent_ns{0};   // steady clock
    std::atomic<bool> disconnecting{false};      // --disconnect: DREQ sent
    // The kinds of event the lane's endpoint has had (bit 1 << EventType): a second one of a kind
    // is a duplicate event.
    std::atomic<std::uint32_t> seen{0};
  };

  static void on_client_callback(const Event& event, void* self);
  void on_client(const Event& event);
  // Starts the lane's next connection; ends the lane when there is none left to start.
  void connect_next(Lane& lane);
  void end_lane();
  // Waits (a second at most) until all but `window` of the teardown's DREQs have had their DREP
  // or were dropped by the fabric.
  void pace_teardown(std::uint64_t destroyed, std::uint64_t window) const;

  Rig& rig_;
  const Acceptor* acceptor_;
  Options options_;
  RigSizing sizing_;
  std::uint64_t limit_;
  Tally& tally_;
  LatencyHistogram latency_;
  std::unique_ptr<Lane[]> lanes_;
  // Without --disconnect: connection i's client Id (raw), for the teardown; 0 if never created.
  // Relaxed: the teardown reads them after run(), whose acquire of `finished_` follows every
  // lane's last write (see lanes_active_).
  std::unique_ptr<std::atomic<std::uint64_t>[]> ids_;
  std::vector<std::uint8_t> private_data_;
  // --rdma-cm-port: rdma_cm's header, then private_data_ (the REQs' private data).
  std::array<std::uint8_t, kMaxReqPrivateData> rdma_cm_data_{};
  std::vector<ReqParams> req_templates_;  // per port
  Delivery client_delivery_;
  EventQueue* client_queue_ = nullptr;

  // --duration is up (or the storm stalled). Relaxed: it publishes nothing; lanes that see it
  // late start one more connection each.
  std::atomic<bool> stop_{false};
  // Lanes still running. acq_rel: the last lane's decrement carries every lane's work to the
  // release of `finished_`, whose acquire in run() then sees it all.
  std::atomic<std::uint32_t> lanes_active_{0};
  std::binary_semaphore finished_{0};
  EventPump pump_;  // last: stopped first
};

}  // namespace fastcm::bench
