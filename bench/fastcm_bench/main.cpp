// fastcm-bench: a connection storm through fastcm over the in-process loopback fabric, reported
// as a table (or JSON) and optionally plotted. Exit status: 0 a clean run (not stalled, drained,
// nothing leaked), 1 anything else or a setup failure, 2 a usage error.
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "bench/fastcm_bench/number_text.h"
#include "bench/fastcm_bench/options.h"
#include "bench/fastcm_bench/plot.h"
#include "bench/fastcm_bench/process_stats.h"
#include "bench/fastcm_bench/progress.h"
#include "bench/fastcm_bench/report.h"
#include "bench/fastcm_bench/rig.h"
#include "bench/fastcm_bench/storm.h"

namespace {

using namespace fastcm::bench;

std::string plot_title(const Options& o, const Report& r) {
  return "fastcm-bench: " + grouped(r.count(Count::established)) + " connections, " +
         std::to_string(o.ports) + " ports, " + std::to_string(o.shards) + " shards, window " +
         std::to_string(o.window) + ", " + to_string(o.mode) +
         (o.disconnect ? ", --disconnect" : "");
}

int run(const Options& options) {
  const RigSizing sizing = size_rig(options);
  Rig rig(options, sizing);             // EAL and the fabric
  Storm storm(rig, options, sizing);     // the tool's records, preallocated and touched
  Report report;
  report.options = options;
  report.sizing = sizing;
  report.rss_before_engines = resident_bytes();
  const double create_start = process_cpu_seconds();
  const auto create_wall = std::chrono::steady_clock::now();
  rig.create_engines();
  storm.listen();
  report.create_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - create_wall).count();
  report.create_cpu_s = process_cpu_seconds() - create_start;
  report.rss_engines_created = resident_bytes();

  Progress progress(::isatty(STDERR_FILENO) != 0, options.connection_limit(), options.duration_s);
  report.run = storm.run(progress);
  report.rss_storm_end = resident_bytes();
  report.counters = rig.counters();
  report.latency = storm.latency().summary();
  report.teardown = storm.tear_down();
  report.counters_after_teardown = rig.counters();
  report.leaks = storm.check_leaks();
  report.rss_peak = peak_resident_bytes();
  for (std::size_t c = 0; c < static_cast<std::size_t>(Count::count_); ++c) {
    report.counts[c] = storm.tally().sum(static_cast<Count>(c));
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

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  const std::optional<Options> options = parse_options(argc, argv, exit_code);
  if (!options) return exit_code;
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
  try {
    return run(*options);
  } catch (const std::exception& e) {
    std::cerr << "fastcm-bench: " << e.what() << '\n';
    return 1;
  }
}
