// The pieces both reports (report.h: the storm's; server_report.h: --role server's) print their
// values with. Thread contract: pure functions.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/fastcm_bench/rig.h"
#include "fastcm/fabric.h"

namespace fastcm::bench {

// `value` formatted by one printf conversion of a double ("%.2f s").
[[nodiscard]] std::string printf_string(const char* format, double value);
// 877 us, 2.42 ms, ... (three significant digits or whole units).
[[nodiscard]] std::string latency_text(std::uint64_t ns);
[[nodiscard]] std::string mib(std::uint64_t bytes);
[[nodiscard]] double us(std::uint64_t ns);
// Each entry's share of the sum, "25.0% 25.0%" ("-" each when the sum is 0).
[[nodiscard]] std::string percent_list(const std::vector<std::uint64_t>& per_shard);
[[nodiscard]] std::uint64_t sum_drops(const EngineTotals& t);
// " (reason n, reason n)" for the reasons with drops; empty when none.
[[nodiscard]] std::string drop_text(const EngineTotals& t);
// Every reason with its count.
[[nodiscard]] nlohmann::json drops_json(const EngineTotals& t);
// 0x0000000001060fa0: 16 hex digits.
[[nodiscard]] std::string hex_text(std::uint64_t value);
// "port 1 LID 0x0001 GID fe80::2:c903:0:1" (the GID at index 0; RoCE ports: LID 0x0000).
[[nodiscard]] std::string port_address_text(const PortAttr& port);
// One table row: the label in a 27-character column after two spaces, then the value.
void table_row(std::ostream& out, const char* label, const std::string& value);
// --pcap: the "pcap" row (nothing without a capture), and its JSON (null without one).
void pcap_row(std::ostream& out, const Options& options, const RigCounters& counters);
[[nodiscard]] nlohmann::json pcap_json(const RigCounters& counters);

}  // namespace fastcm::bench
