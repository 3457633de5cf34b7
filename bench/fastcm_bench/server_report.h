// What --role server measured, and its two renderings: the table and one JSON object (keys in
// README.md's fastcm-bench section).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/fastcm_bench/acceptor.h"
#include "bench/fastcm_bench/leak_check.h"
#include "bench/fastcm_bench/options.h"
#include "bench/fastcm_bench/rig.h"

namespace fastcm::bench {

struct ServerReport {
  Options options;
  RigSizing sizing;
  std::string ports;  // the listening ports, as port_address_text() gives them, ", "-separated
  std::uint64_t reqs = 0;          // Count::server_reqs
  std::uint64_t accepted = 0;      // Count::server_established
  std::uint64_t failed_calls = 0;  // Count::server_failed_calls
  std::uint64_t untracked = 0;     // Count::server_untracked
  ServeRun run;
  RigCounters counters;                 // when serving stopped
  RigCounters counters_after_teardown;  // the whole run
  Teardown teardown;
  LeakCheck leaks;

  // Accepted connections over the span from the first REQ to the last RTU (over the whole
  // listening time when that span is 0).
  [[nodiscard]] double accepted_per_sec() const noexcept;
  // Drained and nothing leaked.
  [[nodiscard]] bool clean() const noexcept;
};

// Thread contract: any thread.
void print_server_table(std::ostream& out, const ServerReport& report);
[[nodiscard]] nlohmann::json to_json(const ServerReport& report);

}  // namespace fastcm::bench
