#include "bench/fastcm_bench/server_report.h"

#include <signal.h>
#include <string.h>

#include "bench/fastcm_bench/number_text.h"
#include "bench/fastcm_bench/report_format.h"

namespace fastcm::bench {

namespace {

std::string stopped_by(const ServeRun& run) {
  if (run.stop_signal == 0) return "--duration";
  const char* name = sigabbrev_np(run.stop_signal);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(run.stop_signal);
}

}  // namespace

double ServerReport::accepted_per_sec() const noexcept {
  const double span = run.accept_span_s > 0 ? run.accept_span_s : run.wall_s;
  return span > 0 ? static_cast<double>(accepted) / span : 0;
}

bool ServerReport::clean() const noexcept {
  return teardown.drained && leaks.leaked_mads == 0 && leaks.leaked_ceps == 0;
}

void print_server_table(std::ostream& out, const ServerReport& r) {
  const Options& o = r.options;
  const EngineTotals& t = r.counters.server;
  out << "fastcm-bench: server on " << to_string(o.fabric) << ", service ID "
      << hex_text(o.service_id) << ", " << o.shards << " shard" << (o.shards == 1 ? "" : "s") << ", "
      << to_string(o.mode) << " delivery; stopped by " << stopped_by(r.run) << '\n';
  table_row(out, "ports", r.ports);
  table_row(out, "REQs received", grouped(r.reqs) + " (new connections offered to the listen)");
  table_row(out, "accepted", grouped(r.accepted) + " (RTU received)");
  if (r.failed_calls + r.untracked > 0) {
    table_row(out, "API calls refused", grouped(r.failed_calls) +
                                            (r.untracked > 0 ? ", " + grouped(r.untracked) +
                                                                   " not tracked (table full)"
                                                             : ""));
  }
  table_row(out, "accepted per second",
            grouped(r.accepted_per_sec()) +
                (r.run.accept_span_s > 0
                     ? printf_string(" (first REQ to last RTU: %.2f s)", r.run.accept_span_s)
                     : std::string(" (over the listening time)")));
  table_row(out, "retries", grouped(t.retries) + " (MADs sent again after a timeout)");
  table_row(out, "duplicates received", grouped(t.duplicates));
  table_row(out, "MADs sent", grouped(t.mads_sent));
  table_row(out, "shard balance", percent_list(t.reqs_per_shard) + " of REQs received");
  if (sum_drops(t) > 0) {
    table_row(out, "MADs dropped by the engine", grouped(sum_drops(t)) + drop_text(t));
  }
  table_row(out, "MAD pool high-water",
            grouped(std::uint64_t{r.run.mads_high}) + " of " +
                grouped(std::uint64_t{r.sizing.mad_buffers}) + " (sampled every 50 ms)");
  if (o.mode == DeliveryMode::poll) {
    table_row(out, "event queue high-water",
              grouped(std::uint64_t{r.run.queue_high}) + " of " +
                  grouped(std::uint64_t{r.sizing.event_queue_capacity}));
  }
  table_row(out, "listening time",
            printf_string("%.2f s wall, ", r.run.wall_s) +
                printf_string("%.2f s CPU", r.run.cpu_s));
  const std::uint64_t teardown_retries = r.counters_after_teardown.server.retries - t.retries;
  table_row(out, "teardown",
            printf_string("%.2f s", r.teardown.wall_s) +
                (r.teardown.destroyed > 0
                     ? ", " + grouped(r.teardown.destroyed) + " open connections destroyed"
                     : "") +
                (teardown_retries > 0 ? ", " + grouped(teardown_retries) + " retries" : "") +
                (r.teardown.drained ? "" : ", NOT drained"));
  pcap_row(out, r.options, r.counters_after_teardown);
  table_row(out, "leaked CEPs",
            grouped(r.leaks.leaked_ceps) +
                printf_string(" (create_id of every endpoint again: %.2f s)", r.leaks.wall_s));
  table_row(out, "leaked MADs", grouped(r.leaks.leaked_mads));
}

nlohmann::json to_json(const ServerReport& r) {
  const Options& o = r.options;
  const EngineTotals& t = r.counters.server;
  nlohmann::json j;
  j["role"] = to_string(o.role);
  j["fabric"] = to_string(o.fabric);
  j["service_id"] = o.service_id;
  j["ports"] = r.ports;
  j["shards"] = o.shards;
  j["mode"] = to_string(o.mode);
  j["stopped_by"] = stopped_by(r.run);
  j["wall_s"] = r.run.wall_s;
  j["cpu_s"] = r.run.cpu_s;
  j["reqs_received"] = r.reqs;
  j["accepted"] = r.accepted;
  j["accepted_per_sec"] = r.accepted_per_sec();
  j["accept_span_s"] = r.run.accept_span_s;
  j["failed_calls"] = r.failed_calls;
  j["untracked"] = r.untracked;
  j["counters"] = {{"retries", t.retries},
                   {"duplicates_received", t.duplicates},
                   {"mads_sent", t.mads_sent},
                   {"shard_reqs", t.reqs_per_shard},
                   {"drops", drops_json(t)}};
  j["pools"] = {{"mads_high", r.run.mads_high},
                {"mad_buffers", r.sizing.mad_buffers},
                {"queue_high", r.run.queue_high}};
  j["teardown"] = {{"wall_s", r.teardown.wall_s},
                   {"destroyed", r.teardown.destroyed},
                   {"retries", r.counters_after_teardown.server.retries - t.retries},
                   {"drained", r.teardown.drained}};
  j["pcap"] = pcap_json(r.counters_after_teardown);
  j["leaked_ceps"] = r.leaks.leaked_ceps;
  j["leaked_mads"] = r.leaks.leaked_mads;
  return j;
}

}  // namespace fastcm::bench
