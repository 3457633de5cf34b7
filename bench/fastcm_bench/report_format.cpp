#include "bench/fastcm_bench/report_format.h"

#include <cinttypes>
#include <cstdio>

#include "bench/fastcm_bench/number_text.h"
#include "tools/fastcm-mad/gid_text.h"

namespace fastcm::bench {

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string latency_text(std::uint64_t ns) {
  if (ns < 10'000) return printf_string("%.2f us", static_cast<double>(ns) / 1e3);
  if (ns < 1'000'000) return printf_string("%.0f us", static_cast<double>(ns) / 1e3);
  if (ns < 100'000'000) return printf_string("%.2f ms", static_cast<double>(ns) / 1e6);
  return printf_string("%.0f ms", static_cast<double>(ns) / 1e6);
}

std::string mib(std::uint64_t bytes) {
  return printf_string("%.0f MiB", static_cast<double>(bytes) / (1u << 20));
}

double us(std::uint64_t ns) { return static_cast<double>(ns) / 1e3; }

std::string percent_list(const std::vector<std::uint64_t>& per_shard) {
  std::uint64_t total = 0;
  for (const std::uint64_t n : per_shard) total += n;
  std::string text;
  for (const std::uint64_t n : per_shard) {
    text += text.empty() ? "" : " ";
    text += total == 0 ? "-"
                       : printf_string("%.1f%%", 100.0 * static_cast<double>(n) /
                                                     static_cast<double>(total));
  }
  return text;
}

std::uint64_t sum_drops(const EngineTotals& t) {
  std::uint64_t n = 0;
  for (const std::uint64_t d : t.drops) n += d;
  return n;
}

std::string drop_text(const EngineTotals& t) {
  std::string text;
  for (std::size_t r = 0; r < kDropReasons; ++r) {
    if (t.drops[r] == 0) continue;
    text += text.empty() ? " (" : ", ";
    text += std::string(to_string(static_cast<DropReason>(r))) + " " + grouped(t.drops[r]);
  }
  return text.empty() ? text : text + ")";
}

nlohmann::json drops_json(const EngineTotals& t) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t r = 0; r < kDropReasons; ++r) {
    j[std::string(to_string(static_cast<DropReason>(r)))] = t.drops[r];
  }
  return j;
}

std::string hex_text(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, value);
  return text;
}

std::string port_address_text(const PortAttr& port) {
  char lid[8];
  std::snprintf(lid, sizeof lid, "0x%04x", static_cast<unsigned>(port.lid));
  return "port " + std::to_string(port.port_num) + " LID " + lid + " GID " +
         (port.gids().empty() ? std::string("(none)") : tools::gid_to_text(port.gids().front()));
}

void table_row(std::ostream& out, const char* label, const std::string& value) {
  char head[40];
  std::snprintf(head, sizeof head, "  %-27s ", label);
  out << head << value << '\n';
}

void pcap_row(std::ostream& out, const Options& options, const RigCounters& counters) {
  if (!counters.pcap) return;
  const pcap_tap::PcapTapCounters& p = *counters.pcap;
  std::string text = grouped(p.written) + " MADs in " + options.pcap_path;
  if (p.dropped_queue_full + p.dropped_limit + p.write_errors > 0) {
    text += " (not recorded: " + grouped(p.dropped_queue_full) + " writer behind, " +
            grouped(p.dropped_limit) + " over --pcap-limit, " + grouped(p.write_errors) +
            " write errors)";
  }
  table_row(out, "pcap", text);
}

nlohmann::json pcap_json(const RigCounters& counters) {
  if (!counters.pcap) return nullptr;
  const pcap_tap::PcapTapCounters& p = *counters.pcap;
  return {{"written", p.written},
          {"dropped_queue_full", p.dropped_queue_full},
          {"dropped_limit", p.dropped_limit},
          {"write_errors", p.write_errors}};
}

}  // namespace fastcm::bench
