// The storm's listen: the server side of --role both, and all of --role server. It answers every
// REQ with a REP at once (from the callback or the poll thread), counts the RTUs, and destroys an
// endpoint on its DREQ (which answers the DREP and leaves through time-wait) or when the
// connection fails. With --role server it also keeps every accepted endpoint in an
// AcceptedTable, serves until SIGINT, SIGTERM or --duration, and at the end destroys the listen
// and every connection still open. With --flood-rate it accepts the REQs from outside the storm
// (the flood's and the recovery probe's, told by their QPNs: storm_qpns.h) like any other, keeps
// their endpoints in an AcceptedTable and destroys those still open after the flood.
#pragma once

#include <signal.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "bench/fastcm_bench/accepted_table.h"
#include "bench/fastcm_bench/event_pump.h"
#include "bench/fastcm_bench/options.h"
#include "bench/fastcm_bench/progress.h"
#include "bench/fastcm_bench/req_ledger.h"
#include "bench/fastcm_bench/rig.h"
#include "bench/fastcm_bench/storm_qpns.h"
#include "bench/fastcm_bench/tally.h"
#include "fastcm/engine.h"

namespace fastcm::bench {

// The server role's run.
struct ServeRun {
  double wall_s = 0;  // from the listen to the stop
  double cpu_s = 0;   // process CPU time over the same span
  // From the first REQ received to the last RTU (0 when fewer than two connections).
  double accept_span_s = 0;
  int stop_signal = 0;  // SIGINT or SIGTERM; 0 when --duration ended it
  std::uint32_t mads_high = 0;    // pooled MADs taken, sampled every 50 ms
  std::size_t queue_high = 0;     // --mode poll: events queued, sampled every 50 ms
};

class Acceptor {
 public:
  // Preallocates what the server needs (with --role server: the accepted table). Thread
  // contract: main thread, before the engines.
  Acceptor(Rig& rig, const Options& options, const RigSizing& sizing, Tally& tally);
  // Stops the poll thread. Main thread, before the engines are destroyed.
  ~Acceptor() = default;
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // Creates the listen on options.service_id, every port (in poll mode first the event queue and
  // its thread). Throws std::runtime_error. Main thread, after Rig::create_engines().
  void listen();

  // --role server: serves until a signal of `stop_signals` arrives (the caller has blocked them
  // in every thread) or --duration passes; feeds `progress` 4 times a second (REQs received as
  // attempted, RTUs as established). Main thread, once, after listen().
  ServeRun serve(Progress& progress, const sigset_t& stop_signals);

  // --role server: destroys the listen and every accepted connection still open (DREQ or REJ),
  // then waits until the engine holds no MAD. Main thread, after serve().
  Teardown tear_down();

  // --flood-rate: destroys every endpoint accepted for a REQ from outside the storm that is still
  // open (handshakes the flood left half-open); returns how many. Main thread, after the flood.
  std::uint64_t destroy_outside_storm();

  // The event queue of --mode poll (null in callback mode or before listen()). Any thread.
  [[nodiscard]] const EventQueue* queue() const noexcept { return queue_; }

 private:
  static void on_callback(const Event& event, void* self);
  void on_event(const Event& event);
  void on_req(const Event& event);
  // Destroys the endpoint and frees its accepted-table slot (null: none). An endpoint already
  // destroyed (the event came after its destroy) counts a duplicate event where they are counted.
  void destroy(Id id, AcceptedTable::Slot* slot);
  [[nodiscard]] std::uint64_t now_ns_since_start() const noexcept;

  // Per thread: the first REQ and the last RTU it handled (ns since start_), for accept_span_s.
  struct alignas(64) Span {
    std::atomic<std::uint64_t> first_req{0};  // 0: none yet (times count from 1)
    std::atomic<std::uint64_t> last_rtu{0};
  };

  Rig& rig_;
  Options options_;
  RigSizing sizing_;
  Tally& tally_;
  std::vector<std::uint8_t> private_data_;
  RepParams rep_template_;
  Delivery delivery_;
  EventQueue* queue_ = nullptr;
  Id listen_id_;
  std::optional<AcceptedTable> accepted_;  // --role server; --flood-rate: the flood's endpoints
  std::optional<ReqLedger> req_ledger_;    // --role both, at most kQpnSpan connections
  std::unique_ptr<Span[]> spans_;          // --role server, kMaxThreadSlots rows
  std::chrono::steady_clock::time_point start_;
  EventPump pump_;  // last: stopped first
};

}  // namespace fastcm::bench
