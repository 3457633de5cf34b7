// The simulated cluster of one run: DPDK's EAL, the loopback fabric (HCA 0 serves, HCA 1
// connects, both with the run's ports and faults) and the two engines, sized for the run.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/fastcm_bench/options.h"
#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/counters.h"
#include "fastcm/engine.h"
#include "shards/dpdk_runtime.h"

namespace fastcm::bench {

// Every bound of the run, derived from the options so that nothing runs out: see size_rig().
struct RigSizing {
  std::uint32_t max_endpoints = 0;         // per engine
  std::uint32_t mad_buffers = 0;           // per engine
  std::uint32_t shard_inbox = 0;           // per shard
  std::uint32_t rx_queue_depth = 0;        // per fabric port
  std::uint32_t event_queue_capacity = 0;  // per side, --mode poll
  std::uint32_t backlog = 0;               // the listen's
  std::uint32_t eal_memory_mb = 0;         // EAL heap: both engines' MAD pools
};

// Thread contract: pure.
[[nodiscard]] RigSizing size_rig(const Options& options);

// One engine's counters summed over its ports.
struct EngineTotals {
  std::uint64_t mads_sent = 0;      // every CM MAD the engine sent, retransmissions included
  std::uint64_t retries = 0;        // retransmissions after a timeout
  std::uint64_t duplicates = 0;     // retransmissions received
  std::array<std::uint64_t, kDropReasons> drops{};
  std::vector<std::uint64_t> reqs_per_shard;  // server: REQs received; client: REQs sent
};

struct RigCounters {
  EngineTotals server;
  EngineTotals client;
  std::uint64_t fabric_lost = 0;        // by the --loss rule
  std::uint64_t fabric_duplicated = 0;  // by the --dup rule
  std::uint64_t fabric_delayed = 0;     // by the --reorder rule
  std::uint64_t fabric_queue_full = 0;  // receive queue overflows (undersized queues)
};

class Rig {
 public:
  // Starts the EAL (see rig.cpp for why the tool owns it), builds the fabric and sets its fault
  // rule. Throws std::runtime_error naming what failed. Thread contract: main thread; once per
  // process (EAL cannot start twice).
  Rig(const Options& options, const RigSizing& sizing);
  // Destroys the engines (stopping their threads), then the fabric.
  ~Rig();
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  // Creates the server and client engines. Throws std::runtime_error. Main thread.
  void create_engines();

  [[nodiscard]] Engine& server() noexcept { return *server_; }
  [[nodiscard]] Engine& client() noexcept { return *client_; }

  // The path from the client's port `port` (0-based) to the server's port of the same index.
  [[nodiscard]] Path path(std::uint32_t port) const;

  // Counters of both engines and of the fabric. Any thread; a snapshot.
  [[nodiscard]] RigCounters counters() const;

  // No MAD held by either engine and none in flight on the fabric: every endpoint with protocol
  // state left has finished. Any thread; a snapshot.
  [[nodiscard]] bool drained() const;

  // DREPs the client engine has received (duplicates included). Any thread; a snapshot.
  [[nodiscard]] std::uint64_t client_dreps_received() const;

  // MADs the fabric has dropped (a loss rule or a full receive queue), all ports. Any thread.
  [[nodiscard]] std::uint64_t fabric_drops() const;

 private:
  [[nodiscard]] EngineTotals totals(const Engine& engine, bool server) const;

  Options options_;
  RigSizing sizing_;
  std::unique_ptr<shards::DpdkRuntime> runtime_;
  SteadyClock clock_;
  loopback::LoopbackConfig config_;
  loopback::LoopbackFabric fabric_;
  std::unique_ptr<Engine> server_;
  std::unique_ptr<Engine> client_;
};

}  // namespace fastcm::bench
