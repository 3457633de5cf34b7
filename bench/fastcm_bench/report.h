// What a run measured, and its two renderings: the table for people and one JSON object.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/fastcm_bench/flood.h"
#include "bench/fastcm_bench/latency_histogram.h"
#include "bench/fastcm_bench/leak_check.h"
#include "bench/fastcm_bench/options.h"
#include "bench/fastcm_bench/recovery_probe.h"
#include "bench/fastcm_bench/rig.h"
#include "bench/fastcm_bench/storm.h"
#include "bench/fastcm_bench/tally.h"

namespace fastcm::bench {

// --flood-rate's figures.
struct FloodFigures {
  FloodRun run;
  // What the flooding port received by the end of the run (the teardown's REJs to the handshakes
  // it left half-open included); the server's drops are the run's (counters_after_teardown), so
  // that the flood's REQs still queued when the probe's REP came are in.
  FloodAnswers answers;
  Recovery recovery;
  std::uint64_t established_by_end = 0;  // the storm's connections established by the flood's end
  double storm_start_s = 0;  // the storm's start and end, seconds after the flood's start
  double storm_end_s = 0;
  std::uint64_t admitted = 0;  // REQs from outside the storm that reached the listen
  std::uint64_t left_half_open = 0;  // flood endpoints still open after the probe, destroyed
  Level server_endpoints;      // the server's endpoint table after the probe (high-water, limit)
};

// The storm's (--role both or client).
struct Report {
  Options options;
  RigSizing sizing;
  std::uint32_t ports = 0;  // the client's ports (--role both: --ports)
  std::string target;       // --role client: the listen's address as the header line names it
  std::uint64_t counts[static_cast<std::size_t>(Count::count_)] = {};
  double create_wall_s = 0;  // both engines and the listen: every table and pool is allocated
  double create_cpu_s = 0;   // and touched here
  double contenders_cpu_s = 0;  // --contend: the CPU time the contenders took (Contenders::stop)
  StormRun run;
  RigCounters counters;  // at the end of the storm, before the teardown
  RigCounters counters_after_teardown;  // the whole run
  LatencySummary latency;
  // Resident memory (/proc/self/statm) just before the engines were created (EAL, the fabric and
  // the tool's own preallocated records already in), right after, and at the end of the storm.
  std::uint64_t rss_before_engines = 0;
  std::uint64_t rss_engines_created = 0;
  std::uint64_t rss_storm_end = 0;
  std::uint64_t rss_peak = 0;
  Teardown teardown;
  LeakCheck leaks;
  std::optional<FloodFigures> flood;  // --flood-rate

  [[nodiscard]] std::uint64_t count(Count c) const noexcept {
    return counts[static_cast<std::size_t>(c)];
  }
  [[nodiscard]] double established_per_sec() const noexcept;
  [[nodiscard]] double established_per_cpu_sec() const noexcept;
  [[nodiscard]] double mads_per_sec() const noexcept;
  // Engine memory per established connection and engine (RSS growth from before the engines to
  // the end of the storm, over the process's engines, divided by engines x established). Without
  // --disconnect only: with it, connections do not stay.
  [[nodiscard]] std::optional<double> bytes_per_connection() const noexcept;
  // Retransmissions during the teardown (the process's engines).
  [[nodiscard]] std::uint64_t teardown_retries() const noexcept;
  // Connections the counts leave without exactly one ending: every attempted one is established,
  // rejected, timed out or refused; with --disconnect every established one is then
  // disconnected, lost (REJ or DREQ from the server) or its DREQ refused.
  [[nodiscard]] std::uint64_t unaccounted() const noexcept;
  // Events the application should never see (tally.h): both sides' duplicate_events.
  [[nodiscard]] std::uint64_t duplicate_events() const noexcept;
  // Whether the run is sound: not stalled, drained, nothing leaked, every connection accounted
  // for, no duplicate event.
  [[nodiscard]] bool clean() const noexcept;
};

// The table (fixed-width text). Thread contract: any thread.
void print_table(std::ostream& out, const Report& report);

// The same as one JSON object; the keys are listed in README.md's fastcm-bench section.
[[nodiscard]] nlohmann::json to_json(const Report& report);

}  // namespace fastcm::bench
