// fastcm-bench's command line: what to run (connections or a duration, ports, shards, window,
// delivery mode, faults), over which fabric and in which role, and how to report it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/fastcm_bench/ip_address.h"
#include "fastcm/engine.h"
#include "fastcm/log.h"
#include "fastcm/types.h"

namespace fastcm::bench {

enum class DeliveryMode : std::uint8_t { callback, poll };

// loopback: both sides in this process (--role both); umad and udp: one side per process.
enum class FabricKind : std::uint8_t { loopback, umad, udp };

// both: the storm and its listen in one process; server: the listen alone; client: the storm
// against another process's listen.
enum class Role : std::uint8_t { both, server, client };

// The service ID of the storm's listen unless --service-id or --rdma-cm-port names another.
inline constexpr std::uint64_t kDefaultServiceId = 0x1000'0000'0000'FCB0;

// What the client role connects to (see target_path.h for the path it builds from it).
struct Target {
  std::optional<Lid> lid;       // --target-lid: InfiniBand only
  std::optional<Gid> gid;       // --target-gid (on RoCE and udp --target-ip's GID stands in)
  std::optional<IpAddress> ip;  // --target-ip: the rdma_cm header's destination
};

// Sizes a --config file gives: the run's own sizing (rig.h) is raised to them, never lowered.
struct SizeFloors {
  std::uint32_t max_endpoints = 0;
  std::uint32_t mad_buffers = 0;
  std::uint32_t shard_inbox = 0;
  std::uint32_t backlog = 0;
  std::uint32_t rx_queue_depth = 0;
};

struct Options {
  FabricKind fabric = FabricKind::loopback;
  Role role = Role::both;
  std::string device;                    // umad: empty = the first device with an active port
  std::vector<std::uint8_t> hca_ports;   // umad: empty = every active port of the device
  std::vector<std::string> addresses;    // udp: one port per local address
  std::uint16_t udp_port = 4791;         // udp: RoCEv2's port, another for parallel tests
  std::uint64_t service_id = kDefaultServiceId;  // --service-id, or --rdma-cm-port's
  std::optional<std::uint16_t> rdma_cm_port;     // rdma_cm TCP port space (server and client)
  Target target;                                 // client
  std::optional<IpAddress> source_ip;            // client with --rdma-cm-port
  std::uint64_t connections = 1'000'000;
  bool connections_given = false;  // --connections on the command line (else the default)
  double duration_s = 0;           // 0: run for `connections` only
  std::uint32_t ports = 4;    // loopback: ports per HCA
  // Per engine; unless given, one per port: parse_options sets the loopback's, main() that of
  // another fabric once it is open (until then 0).
  std::uint32_t shards = 0;
  std::uint32_t window = 1024;
  std::uint32_t private_data = 0;
  DeliveryMode mode = DeliveryMode::callback;
  bool disconnect = false;
  double loss_pct = 0;
  double dup_pct = 0;
  double reorder_pct = 0;
  std::uint64_t seed = 1;
  // CM response timeout exponent of every REQ (4.096 us x 2^t): how long before a REQ, REP or
  // DREQ is sent again. 20 (4.3 s) is rdma_cm's default. Much shorter waits turn a stall into a
  // retransmission storm on a machine with fewer cores than engine threads: a thread preempted
  // inside the MAD pool's rte_ring (DPDK's multi-producer ring) leaves the others spinning on
  // its tail for a time slice, answers then take hundreds of milliseconds, and every
  // retransmission adds load (seen at 16, 268 ms, in teardowns of a million connections).
  std::uint32_t cm_timeout = 20;
  bool json = false;
  std::string plot_path;  // empty: no plot
  std::string pcap_path;  // empty: no capture
  std::uint64_t pcap_limit = std::uint64_t{1} << 30;  // the capture file's size limit, bytes

  // --config, --metrics, --metrics-interval, --log-level (config_options.h, metrics_writer.h).
  std::string config_path;    // empty: no settings file
  std::string metrics_path;   // empty: no metrics file
  std::uint32_t metrics_interval_ms = 1000;
  LogLevel log_level = LogLevel::warning;
  // Each engine's configuration before the run sizes it (create_engines sets shards, threading,
  // EAL and the sized fields); the rest (auto-MRA, idle spins, listens) may come from --config.
  EngineConfig engine;
  SizeFloors floors;
  std::uint8_t max_cm_retries = 7;                       // of every REQ
  // --flood-rate (flood.h): REQs per second a third loopback HCA (one port: one source LID) sends
  // the listen for --flood-seconds, never completing a handshake, while the storm connects; 0: no
  // flood.
  double flood_rate = 0;
  double flood_seconds = 10;
  BacklogPolicy backlog_policy = BacklogPolicy::reject;  // of the listen
  // --posted-calls: EngineConfig::posted_calls of both engines (calls from application threads,
  // --mode poll's, queued to the shards without waiting); 0: every such call waits for its shard.
  std::uint32_t posted_calls = 4096;
  // --contend: CPU-bound child processes running while the storm (and the flood) run
  // (contenders.h); 0: none.
  std::uint32_t contend = 0;

  // Connections the run may open at most: `connections`, except with --duration and
  // --disconnect without --connections, where it is unbounded (each connection ends before the
  // next on its lane starts, so nothing accumulates).
  [[nodiscard]] std::uint64_t connection_limit() const noexcept;
};

// At most this many connections stay established at once (without --disconnect): the two
// engines keep a few KiB per connection and the machine this runs on has 24 GiB.
inline constexpr std::uint64_t kMaxEstablished = 4'000'000;
inline constexpr std::uint32_t kMaxWindow = 65'536;

// Parses and checks the command line. Returns the options, or nullopt with `exit_code` set: 0
// after --help, 2 after a usage error (CLI11 has printed the message). Thread contract: main
// thread, once.
[[nodiscard]] std::optional<Options> parse_options(int argc, char** argv, int& exit_code);

[[nodiscard]] const char* to_string(DeliveryMode mode) noexcept;
[[nodiscard]] const char* to_string(FabricKind fabric) noexcept;
[[nodiscard]] const char* to_string(Role role) noexcept;

}  // namespace fastcm::bench
