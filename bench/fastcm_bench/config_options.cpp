#include "bench/fastcm_bench/config_options.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "config/settings_parser.h"

namespace fastcm::bench {

namespace {

// A file key that stands for a command-line option: applied only when the option was not given.
struct OptionKey {
  const char* key;     // "section.key"
  const char* option;  // the command line's name for it
  std::function<void(const Settings&, Options&)> apply;
};

std::vector<OptionKey> option_keys() {
  return {
      {"fabric.type", "--fabric",
       [](const Settings& s, Options& o) {
         o.fabric = s.fabric.type == FabricType::umad ? FabricKind::umad
                    : s.fabric.type == FabricType::udp ? FabricKind::udp
                                                       : FabricKind::loopback;
       }},
      {"loopback.ports_per_hca", "--ports", [](const Settings& s, Options& o) { o.ports = s.fabric.loopback.ports_per_hca; }},
      {"loopback.fault_seed", "--seed", [](const Settings& s, Options& o) { o.seed = s.fabric.loopback.fault_seed; }},
      {"loopback.loss", "--loss", [](const Settings& s, Options& o) { o.loss_pct = s.fabric.loopback.loss_pct; }},
      {"loopback.dup", "--dup", [](const Settings& s, Options& o) { o.dup_pct = s.fabric.loopback.dup_pct; }},
      {"loopback.reorder", "--reorder", [](const Settings& s, Options& o) { o.reorder_pct = s.fabric.loopback.reorder_pct; }},
      {"umad.device", "--device", [](const Settings& s, Options& o) { o.device = s.fabric.umad.device; }},
      {"umad.ports", "--hca-port", [](const Settings& s, Options& o) { o.hca_ports = s.fabric.umad.ports; }},
      {"udp.addresses", "--address", [](const Settings& s, Options& o) { o.addresses = s.fabric.udp.addresses; }},
      {"udp.port", "--udp-port", [](const Settings& s, Options& o) { o.udp_port = s.fabric.udp.udp_port; }},
      {"engine.shards", "--shards", [](const Settings& s, Options& o) { o.shards = s.engine.shards; }},
      {"engine.posted_calls", "--posted-calls", [](const Settings& s, Options& o) { o.posted_calls = s.engine.posted_calls; }},
      {"connect.cm_response_timeout", "--cm-timeout",
       [](const Settings& s, Options& o) { o.cm_timeout = s.connect.cm_response_timeout; }},
      {"pcap.file", "--pcap", [](const Settings& s, Options& o) { o.pcap_path = s.pcap.file; }},
      {"pcap.limit", "--pcap-limit", [](const Settings& s, Options& o) { o.pcap_limit = s.pcap.limit_bytes; }},
      {"metrics.file", "--metrics", [](const Settings& s, Options& o) { o.metrics_path = s.metrics.file; }},
      {"metrics.interval_ms", "--metrics-interval",
       [](const Settings& s, Options& o) { o.metrics_interval_ms = s.metrics.interval_ms; }},
      {"log.level", "--log-level", [](const Settings& s, Options& o) { o.log_level = s.log_level; }},
  };
}

bool contains(const std::vector<std::string>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

std::string apply_config_file(const CLI::App& app, Options& options) {
  Settings settings;
  settings.engine = options.engine;
  settings.connect.max_cm_retries = options.max_cm_retries;
  settings.listen.backlog_policy = options.backlog_policy;
  std::vector<std::string> given;
  SettingsError why;
  if (config::parse_settings(options.config_path, settings, &given, &why) != Status::ok) return why.text();
  const std::string where = options.config_path + ": ";
  if (settings.engine.threading != Threading::workers) {
    return where + "[engine] threading: fastcm-bench runs the engines on worker threads (workers)";
  }
  if (settings.engine.eal != EalOwner::engine) {
    return where + "[eal] owner: fastcm-bench starts DPDK's EAL itself (engine)";
  }
  if (contains(given, "loopback.hcas") && settings.fabric.loopback.hcas != 2) {
    return where + "[loopback] hcas: fastcm-bench runs two HCAs (0 listens, 1 connects)";
  }
  for (const OptionKey& k : option_keys()) {
    if (contains(given, k.key) && app.count(k.option) == 0) k.apply(settings, options);
  }
  options.engine = settings.engine;
  options.max_cm_retries = settings.connect.max_cm_retries;
  options.backlog_policy = settings.listen.backlog_policy;
  SizeFloors& floors = options.floors;
  if (contains(given, "engine.max_endpoints")) floors.max_endpoints = settings.engine.max_endpoints;
  if (contains(given, "engine.mad_buffers")) floors.mad_buffers = settings.engine.mad_buffers;
  if (contains(given, "engine.shard_inbox")) floors.shard_inbox = settings.engine.shard_inbox;
  if (contains(given, "listen.backlog")) floors.backlog = settings.listen.backlog;
  if (contains(given, "loopback.rx_queue_depth")) floors.rx_queue_depth = settings.fabric.loopback.rx_queue_depth;
  return {};
}

}  // namespace fastcm::bench
