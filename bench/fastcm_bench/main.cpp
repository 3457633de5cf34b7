// fastcm-bench: a connection storm through fastcm, reported as a table (or JSON) and optionally
// plotted. --role both (the default) runs the storm and its listen in this process over the
// loopback fabric; --role server and --role client run one side each over a fabric another
// process can reach (umad, udp). Exit status: 0 a clean run (not stalled, drained, nothing
// leaked), 1 anything else or a setup failure, 2 a usage error.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstddef>
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/fastcm_bench/acceptor.h"
#include "bench/fastcm_bench/contenders.h"
#include "bench/fastcm_bench/fabric_choice.h"
#include "bench/fastcm_bench/flood.h"
#include "bench/fastcm_bench/leak_check.h"
#include "bench/fastcm_bench/number_text.h"
#include "bench/fastcm_bench/options.h"
#include "bench/fastcm_bench/plot.h"
#include "bench/fastcm_bench/process_stats.h"
#include "bench/fastcm_bench/progress.h"
#include "bench/fastcm_bench/recovery_probe.h"
#include "bench/fastcm_bench/report.h"
#include "bench/fastcm_bench/report_format.h"
#include "bench/fastcm_bench/rig.h"
#include "bench/fastcm_bench/server_report.h"
#include "bench/fastcm_bench/storm.h"
#include "fastcm/log.h"
#include "metrics/metrics_file.h"
#include "tools/fastcm-mad/gid_text.h"

namespace {

using namespace fastcm;
using namespace fastcm::bench;

std::string plot_title(const Options& o, const Report& r) {
  return "fastcm-bench: " + grouped(r.count(Count::established)) + " connections, " +
         std::to_string(r.ports) + " ports, " + std::to_string(o.shards) + " shards, window " +
         std::to_string(o.window) + ", " + to_string(o.mode) +
         (o.disconnect ? ", --disconnect" : "");
}

// How the client role's header line names the listen.
std::string target_text(const Options& o) {
  std::string text;
  if (o.target.lid) {
    char lid[16];
    std::snprintf(lid, sizeof lid, "LID 0x%04x ", static_cast<unsigned>(*o.target.lid));
    text = lid;
  }
  text += "GID " + tools::gid_to_text(o.target.gid ? *o.target.gid : o.target.ip->gid()) +
          ", service ID " + hex_text(o.service_id);
  if (o.rdma_cm_port) text += " (rdma_cm TCP port " + std::to_string(*o.rdma_cm_port) + ")";
  return text;
}

std::string ports_text(std::span<const PortAttr> ports) {
  std::string text;
  for (const PortAttr& port : ports) {
    text += (text.empty() ? "" : ", ") + port_address_text(port);
  }
  return text;
}

// --metrics: the role's engines, named by their side, written every --metrics-interval until the
// returned writer is destroyed (then once more). Null without --metrics.
std::unique_ptr<metrics::MetricsFile> start_metrics(const Options& o, const Rig& rig) {
  if (o.metrics_path.empty()) return nullptr;
  std::vector<MetricsSource> sources;
  if (rig.has_server()) sources.push_back({&rig.server(), "server"});
  if (rig.has_client()) sources.push_back({&rig.client(), "client"});
  return std::make_unique<metrics::MetricsFile>(o.metrics_path, std::move(sources),
                                                std::chrono::milliseconds(o.metrics_interval_ms));
}

// --flood-rate: the storm starts when this part of the flood has passed, so that its connections
// meet a server the flood has already filled.
constexpr double kStormStartsAt = 0.2;

// --flood-rate: runs the flood around the storm, then the recovery probe from the flood's end;
// the storm runs on the calling thread. Returns the flood's figures with the storm's run. The
// flood's thread keeps receiving at its port until `flood` is destroyed, after the teardown.
FloodFigures run_flood(Rig& rig, Flood& flood, RecoveryProbe& probe, Acceptor& acceptor,
                       Storm& storm, const Tally& tally, Progress& progress, StormRun& storm_run) {
  FloodFigures f;
  flood.start();
  const auto flood_start = std::chrono::steady_clock::now();
  const auto since_start = [flood_start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - flood_start).count();
  };
  std::thread prober([&] {
    f.run = flood.wait_sent();
    f.established_by_end = tally.sum(Count::established);
    f.recovery = probe.run(f.run.ended);
  });
  flood.wait_for(kStormStartsAt);
  f.storm_start_s = since_start();
  storm_run = storm.run(progress);
  f.storm_end_s = since_start();
  prober.join();
  f.admitted = tally.sum(Count::server_outside_storm);
  EngineLevels levels;
  rig.server().levels(levels);
  f.server_endpoints = levels.endpoints;
  f.left_half_open = acceptor.destroy_outside_storm();
  probe.tear_down();
  return f;
}

// --role both and --role client.
int run_storm(const Options& options, std::unique_ptr<Fabric> fabric) {
  const RigSizing sizing = size_rig(options);
  Rig rig(options, sizing, std::move(fabric));  // EAL and the fabric
  Tally tally;
  std::optional<Acceptor> acceptor;
  if (rig.has_server()) acceptor.emplace(rig, options, sizing, tally);
  // The tool's records, preallocated and touched.
  Storm storm(rig, options, sizing, tally, acceptor ? &*acceptor : nullptr);
  Report report;
  report.options = options;
  report.sizing = sizing;
  report.ports = rig.client_ports();
  if (options.role == Role::client) report.target = target_text(options);
  report.rss_before_engines = resident_bytes();
  const double create_start = process_cpu_seconds();
  const auto create_wall = std::chrono::steady_clock::now();
  rig.create_engines();
  const std::unique_ptr<metrics::MetricsFile> metrics = start_metrics(options, rig);
  if (acceptor) acceptor->listen();
  storm.prepare();
  report.create_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - create_wall).count();
  report.create_cpu_s = process_cpu_seconds() - create_start;
  report.rss_engines_created = resident_bytes();

  Progress progress(::isatty(STDERR_FILENO) != 0, options.connection_limit(), options.duration_s);
  std::optional<Flood> flood;  // destroyed after the teardown: see run_flood
  std::optional<RecoveryProbe> probe;
  Contenders contenders(options.contend);
  if (rig.has_flood()) {
    flood.emplace(rig, options);
    probe.emplace(rig, storm.req_template(0));
    report.flood =
        run_flood(rig, *flood, *probe, *acceptor, storm, tally, progress, report.run);
  } else {
    report.run = storm.run(progress);
  }
  report.contenders_cpu_s = contenders.stop();
  report.rss_storm_end = resident_bytes();
  report.counters = rig.counters();
  report.latency = storm.latency().summary();
  report.teardown = storm.tear_down();
  if (!rig.drain_pcap()) std::cerr << "fastcm-bench: --pcap: the capture's writer fell behind\n";
  report.counters_after_teardown = rig.counters();
  report.leaks = check_leaks(rig, sizing, options.shards);
  if (flood) report.flood->answers = flood->answers();
  report.rss_peak = peak_resident_bytes();
  for (std::size_t c = 0; c < static_cast<std::size_t>(Count::count_); ++c) {
    report.counts[c] = tally.sum(static_cast<Count>(c));
  }

  if (options.json) {
    std::cout << to_json(report).dump(2) << '\n';
  } else {
    print_table(std::cout, report);
  }
  std::cout.flush();
  int status = report.clean() ? 0 : 1;
  if (!options.plot_path.empty()) {
    const std::string error =
        draw_plot(options.plot_path, plot_title(options, report), progress.samples(),
                  report.latency);
    if (!error.empty()) {
      std::cerr << "fastcm-bench: --plot: " << error << '\n';
      status = 1;
    } else if (!options.json) {
      std::cout << "  plot written to " << options.plot_path << '\n';
    }
  }
  return status;
}

// --role server. `stop_signals` are blocked in every thread (main() blocks them first).
int run_server(const Options& options, std::unique_ptr<Fabric> fabric,
               const sigset_t& stop_signals) {
  const RigSizing sizing = size_rig(options);
  Rig rig(options, sizing, std::move(fabric));
  Tally tally;
  Acceptor acceptor(rig, options, sizing, tally);
  ServerReport report;
  report.options = options;
  report.sizing = sizing;
  report.ports = ports_text(rig.server_ports());
  rig.create_engines();
  const std::unique_ptr<metrics::MetricsFile> metrics = start_metrics(options, rig);
  acceptor.listen();
  // The one line other processes (tests, scripts) wait for before they connect.
  std::cerr << "fastcm-bench: listening on service ID " << hex_text(options.service_id) << ": "
            << report.ports << std::endl;

  Progress progress(::isatty(STDERR_FILENO) != 0, std::numeric_limits<std::uint64_t>::max(),
                    options.duration_s);
  report.run = acceptor.serve(progress, stop_signals);
  report.counters = rig.counters();
  report.teardown = acceptor.tear_down();
  if (!rig.drain_pcap()) std::cerr << "fastcm-bench: --pcap: the capture's writer fell behind\n";
  report.counters_after_teardown = rig.counters();
  report.leaks = check_leaks(rig, sizing, options.shards);
  report.reqs = tally.sum(Count::server_reqs);
  report.accepted = tally.sum(Count::server_established);
  report.failed_calls = tally.sum(Count::server_failed_calls);
  report.untracked = tally.sum(Count::server_untracked);
  if (options.json) {
    std::cout << to_json(report).dump(2) << '\n';
  } else {
    print_server_table(std::cout, report);
  }
  std::cout.flush();
  return report.clean() ? 0 : 1;
}

int run(Options options, const sigset_t& stop_signals) {
  std::unique_ptr<Fabric> fabric;
  if (options.fabric != FabricKind::loopback) {
    std::string error;
    fabric = open_fabric(options, error);
    if (!fabric) {
      std::cerr << "fastcm-bench: --fabric " << to_string(options.fabric) << ": " << error << '\n';
      return 1;
    }
    if (options.shards == 0) {
      options.shards = static_cast<std::uint32_t>(
          std::clamp<std::size_t>(fabric->ports().size(), 1, kMaxShards));
    }
  }
  if (options.role == Role::server) return run_server(options, std::move(fabric), stop_signals);
  return run_storm(options, std::move(fabric));
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  const std::optional<Options> options = parse_options(argc, argv, exit_code);
  if (!options) return exit_code;
  set_log_level(options->log_level);
  if (!options->plot_path.empty() && !gnuplot_available()) {
    std::cerr << "fastcm-bench: --plot needs gnuplot, which is not on PATH "
                 "(install it with: apt-get install gnuplot-nox)\n";
    return 2;
  }
  if (!options->plot_path.empty() && !plot_path_writable(options->plot_path)) {
    std::cerr << "fastcm-bench: --plot: cannot write " << options->plot_path
              << " (no such folder, or not writable)\n";
    return 2;
  }
  // The server waits for SIGINT or SIGTERM with sigtimedwait: blocked here, before any thread
  // starts, so that every thread (EAL's, the engine's) inherits the mask and none is ended by them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  if (options->role == Role::server) {
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  }
  try {
    return run(*options, stop_signals);
  } catch (const std::exception& e) {
    std::cerr << "fastcm-bench: " << e.what() << '\n';
    return 1;
  }
}
