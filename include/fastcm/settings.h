// fastcm's settings as an INI file gives them (configs/README.md lists every section and key):
// the engine's configuration, the fabric to open, listen and connect defaults, EAL ownership,
// logging, the pcap capture and the metrics file. fastcm-bench --config and the C API's
// fastcm_settings_load read files with this same parser.
//
// Thread contract: plain data; load_settings may run on any thread, concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fastcm/engine.h"
#include "fastcm/log.h"
#include "fastcm/params.h"
#include "fastcm/status.h"

namespace fastcm {

enum class FabricType : std::uint8_t { loopback, umad, udp };

// The fabric type's name in a file ("loopback"), static storage; "unknown" outside the enum.
[[nodiscard]] constexpr std::string_view to_string(FabricType type) noexcept {
  switch (type) {
    case FabricType::loopback: return "loopback";
    case FabricType::umad: return "umad";
    case FabricType::udp: return "udp";
  }
  return "unknown";
}

// [loopback]: simulated HCAs in this process (fastcm/loopback/loopback_config.h); each HCA is the
// fabric of one engine.
struct LoopbackSettings {
  std::uint16_t hcas = 2;
  std::uint8_t ports_per_hca = 1;      // 1..15; port p of HCA h gets LID h * 16 + p
  std::uint32_t rx_queue_depth = 2048; // MADs in flight to one port, 1..2^20
  std::uint64_t fault_seed = 1;
  double loss_pct = 0;                 // fault injection on every MAD, percent 0..100
  double dup_pct = 0;
  double reorder_pct = 0;
};

// [umad]: an HCA's ports through rdma-core's libibumad.
struct UmadSettings {
  std::string device;               // empty: the first device with an active port
  std::vector<std::uint8_t> ports;  // HCA port numbers 1..254; empty: every active port
};

// [udp]: RoCEv2 GSI over UDP sockets, one port per local address.
struct UdpSettings {
  std::vector<std::string> addresses;  // IPv4 or IPv6, at least one
  std::uint16_t udp_port = 4791;
};

struct FabricSettings {
  FabricType type = FabricType::loopback;
  LoopbackSettings loopback;  // only the section of `type` may be in the file
  UmadSettings umad;
  UdpSettings udp;
};

// [listen]: what an application's listens use unless it says otherwise (ListenParams' defaults).
struct ListenSettings {
  std::uint32_t backlog = ListenParams{}.backlog;
  BacklogPolicy backlog_policy = ListenParams{}.backlog_policy;
};

// [connect]: the REQ timeouts an application's connections use (ReqParams' defaults).
struct ConnectSettings {
  std::uint8_t cm_response_timeout = ReqParams{}.remote_cm_response_timeout;  // exponent 0..31
  std::uint8_t max_cm_retries = ReqParams{}.max_cm_retries;                   // 0..15
};

// [pcap]: a capture of every CM MAD the engine's fabric carries (fabric/pcap_tap); no file, no
// capture.
struct PcapSettings {
  std::string file;
  std::uint64_t limit_bytes = std::uint64_t{1} << 30;
};

// [metrics]: the counters written to a file at an interval, Prometheus text or JSON by the file
// name's extension (".json": JSON); no file, no metrics.
struct MetricsSettings {
  std::string file;
  std::uint32_t interval_ms = 1000;  // 10..3,600,000
};

struct Settings {
  EngineConfig engine;      // [engine], [mra], [eal]: checked as Engine::create checks them
  FabricSettings fabric;    // [fabric] and its type's section
  ListenSettings listen;
  ConnectSettings connect;
  LogLevel log_level = LogLevel::warning;  // [log]
  PcapSettings pcap;
  MetricsSettings metrics;
};

// Why a file was refused: the file, the section and key (empty when the problem is the file or
// the section as a whole) and the rule broken, e.g. {"demo.ini", "engine", "shards", "must be
// 1..64"}. text() joins them as "demo.ini: [engine] shards: must be 1..64".
struct SettingsError {
  std::string file;
  std::string section;
  std::string key;
  std::string message;

  [[nodiscard]] std::string text() const {
    std::string t = file + ": ";
    if (!section.empty()) t += "[" + section + "] ";
    if (!key.empty()) t += key + ": ";
    return t + message;
  }
};

// Reads `path` over `out`: a key the file gives replaces the field, a key it leaves out leaves the
// field as it was (so `out` holds the defaults, or an earlier file's values). Every value is
// checked: an unknown section or key, a value that does not parse, a value out of range (the
// EngineConfig fields by Engine::create's own rules, ConfigField, with the fabric's port count
// where the file tells it) and a section of another fabric type are errors. No DPDK EAL is needed.
// Threads: any, concurrently. Blocks: on the file system.
// Errors: invalid_argument (the file cannot be read, or a value is refused; `out` is then
//   unchanged) with the reason in `*why` when `why` is not null.
Status load_settings(const std::string& path, Settings& out, SettingsError* why);

}  // namespace fastcm
