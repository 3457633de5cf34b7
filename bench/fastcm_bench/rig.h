// What one run stands on: DPDK's EAL, the fabric and the engines of the process's role, sized for
// the run. --role both: the loopback fabric (HCA 0 serves, HCA 1 connects, both with the run's
// ports and faults) and two engines; --role server or client: one engine over a fabric another
// process can reach (fabric_choice.h), the client's paths built from the target (target_path.h).
// With --flood-rate the loopback gets a third HCA of one port, where no engine runs (flood.h).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "bench/fastcm_bench/options.h"
#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fabric/pcap_tap/pcap_tap.h"
#include "fastcm/clock.h"
#include "fastcm/counters.h"
#include "fastcm/engine.h"
#include "runtime/dpdk_runtime.h"

namespace fastcm::bench {

// Every bound of the run, derived from the options so that nothing runs out: see size_rig().
struct RigSizing {
  std::uint32_t max_endpoints = 0;         // per engine
  std::uint32_t mad_buffers = 0;           // per engine
  std::uint32_t shard_inbox = 0;           // per shard
  std::uint32_t rx_queue_depth = 0;        // per fabric port
  std::uint32_t event_queue_capacity = 0;  // per side, --mode poll
  std::uint32_t backlog = 0;               // the listen's
  std::uint32_t half_open_per_source = 0;  // per engine (EngineConfig's)
  std::uint32_t half_open_per_listen = 0;
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
  // Received MADs a worker posted to another shard's inbox (ShardLevels::forwarded, all shards).
  std::uint64_t forwarded = 0;
};

// Of the engines the role has; the other side's totals stay 0.
struct RigCounters {
  EngineTotals server;
  EngineTotals client;
  // Loopback only (other fabrics count their drops themselves, out of the engine's view).
  std::uint64_t fabric_lost = 0;        // by the --loss rule
  std::uint64_t fabric_duplicated = 0;  // by the --dup rule
  std::uint64_t fabric_delayed = 0;     // by the --reorder rule
  std::uint64_t fabric_queue_full = 0;  // receive queue overflows (undersized queues)
  std::uint64_t server_queue_full = 0;  // those of them at the server's ports (HCA 0)
  std::uint64_t flood_queue_full = 0;   // and at the flood's port (--flood-rate: answers lost)
  std::optional<pcap_tap::PcapTapCounters> pcap;  // --pcap
};

struct Teardown {
  double wall_s = 0;
  std::uint64_t destroyed = 0;  // endpoints the teardown destroyed (established ones send a DREQ)
  bool drained = false;         // every MAD came back before the deadline
};

class Rig {
 public:
  // Starts the EAL (see rig.cpp for why the tool owns it). --role both: builds the loopback
  // fabric and sets its fault rule (`fabric` must be null). Otherwise takes `fabric` (open, not
  // null) for the role's engine; a client builds its path from every port of it to the target.
  // Throws std::runtime_error naming what failed (a target that does not fit a port, among
  // others). Thread contract: main thread; once per process (EAL cannot start twice).
  Rig(const Options& options, const RigSizing& sizing, std::unique_ptr<Fabric> fabric);
  // Destroys the engines (stopping their threads), then the fabric.
  ~Rig();
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  // Creates the role's engines (both: server and client), with --pcap first the tap on the
  // listening side's fabric (--role client: the client's). Throws std::runtime_error,
  // std::system_error (the capture file). Main thread.
  void create_engines();

  // --pcap: waits (10 s at most) until every MAD recorded so far is in the file; true when it is
  // or there is no capture. Main thread, when the engines are idle.
  [[nodiscard]] bool drain_pcap() const;

  [[nodiscard]] bool has_server() const noexcept { return server_fabric_ != nullptr; }
  [[nodiscard]] bool has_client() const noexcept { return client_fabric_ != nullptr; }
  // Only when has_server() (has_client()) and after create_engines().
  [[nodiscard]] Engine& server() noexcept { return *server_; }
  [[nodiscard]] Engine& client() noexcept { return *client_; }
  [[nodiscard]] const Engine& server() const noexcept { return *server_; }
  [[nodiscard]] const Engine& client() const noexcept { return *client_; }
  // The listening side's ports (has_server()). Any thread.
  [[nodiscard]] std::span<const PortAttr> server_ports() const noexcept {
    return server_fabric_->ports();
  }

  // The client's ports, one lane port each (has_client()), and the path from client port `port`
  // (0-based): on the loopback to the server's port of the same index, else to the target.
  [[nodiscard]] std::uint32_t client_ports() const noexcept {
    return static_cast<std::uint32_t>(client_paths_.size());
  }
  [[nodiscard]] const Path& path(std::uint32_t port) const { return client_paths_[port]; }

  // --flood-rate: the flood's HCA (the loopback's third, one port) and the path from its port to
  // the server's first port. Only when has_flood(). Any thread.
  [[nodiscard]] bool has_flood() const noexcept { return options_.flood_rate > 0; }
  [[nodiscard]] Fabric& flood_fabric() { return loopback_->hca(kFloodHca); }
  [[nodiscard]] const Path& flood_path() const noexcept { return flood_path_; }
  [[nodiscard]] const PortAttr& flood_port() const noexcept { return config_.hcas[kFloodHca].ports[0]; }

  // A teardown's destroy of `id` on `engine` (server() or client()), counted until the engine has
  // handled it (its on_destroyed): a destroy from outside the shards returns before its shard has
  // sent the DREQ it keeps until the DREP, so a drain checked before then finds nothing held.
  // Returns engine.destroy's status. Main thread.
  Status destroy(Engine& engine, Id id);

  // Waits (sleeping 1 ms between looks) until drained() or `limit` has passed; returns
  // drained(). Main thread.
  [[nodiscard]] bool wait_drained(std::chrono::steady_clock::duration limit) const;

  // Counters of both engines and of the fabric. Any thread; a snapshot.
  [[nodiscard]] RigCounters counters() const;

  // Every destroy() handled, no MAD held by the role's engines and (loopback) none in flight on
  // the fabric: every endpoint with protocol state left has finished. Any thread; a snapshot.
  [[nodiscard]] bool drained() const;

  // How long endpoints may stay in time-wait after the teardown drained: 0 on the loopback (two
  // 4 us packet life times and no ACK delay), else a bound for a peer's ACK delay (see
  // leak_check.h). Any thread.
  [[nodiscard]] std::chrono::steady_clock::duration timewait_bound() const noexcept;

  // DREPs the client engine has received (duplicates included). Any thread; a snapshot.
  [[nodiscard]] std::uint64_t client_dreps_received() const;

  // MADs the loopback fabric has dropped (a loss rule or a full receive queue), all ports; 0 on
  // other fabrics. Any thread.
  [[nodiscard]] std::uint64_t fabric_drops() const;

 private:
  static constexpr std::size_t kFloodHca = 2;

  [[nodiscard]] EngineTotals totals(const Engine& engine, const Fabric& fabric, bool server) const;

  Options options_;
  RigSizing sizing_;
  std::unique_ptr<shards::DpdkRuntime> runtime_;
  SteadyClock clock_;
  loopback::LoopbackConfig config_;                     // --role both; else no HCA
  std::unique_ptr<loopback::LoopbackFabric> loopback_;  // --role both
  std::unique_ptr<Fabric> fabric_;                      // --role server or client
  Fabric* server_fabric_ = nullptr;  // the fabric (or loopback HCA) of each side the role has
  Fabric* client_fabric_ = nullptr;
  std::vector<Path> client_paths_;
  Path flood_path_;  // --flood-rate
  std::unique_ptr<pcap_tap::PcapTap> tap_;  // --pcap: wraps one of the fabrics above
  // destroy()'s count: issued by the main thread, handled by the engines' on_destroyed (on a shard's
  // thread). Before the engines: a destroy still pending when an engine goes is handled as it goes.
  std::atomic<std::uint64_t> destroys_issued_{0};
  std::atomic<std::uint64_t> destroys_handled_{0};
  std::unique_ptr<Engine> server_;
  std::unique_ptr<Engine> client_;
};

}  // namespace fastcm::bench
