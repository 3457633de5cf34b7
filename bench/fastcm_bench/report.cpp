#include "bench/fastcm_bench/report.h"

#include <cstdio>
#include <limits>
#include <string>

#include "bench/fastcm_bench/number_text.h"
#include "bench/fastcm_bench/report_format.h"

namespace fastcm::bench {

namespace {

double percent(std::uint64_t part, std::uint64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

// REQs the server engine received over the whole run, retransmissions included.
std::uint64_t server_reqs_received(const Report& r) {
  std::uint64_t n = 0;
  for (const std::uint64_t per_shard : r.counters_after_teardown.server.reqs_per_shard) n += per_shard;
  return n;
}

void flood_rows(std::ostream& out, const Report& r) {
  const FloodFigures& f = *r.flood;
  const auto row = [&out](const char* label, const std::string& value) {
    table_row(out, label, value);
  };
  out << "  flood: " << printf_string("%.0f REQs/s asked", r.options.flood_rate)
      << printf_string(" for %.2f s from one port", r.options.flood_seconds)
      << " (LID of HCA 2), to the server's first port\n";
  row("flood offered", grouped(f.run.sent) + " REQs in " + printf_string("%.2f s", f.run.seconds) +
                           " = " + grouped(f.run.offered_per_sec()) + " per second; " +
                           grouped(f.run.refused) + " refused by the fabric");
  row("", printf_string("(flood thread: %.2f s CPU)", f.run.cpu_s));
  row("flood answered", "REP " + grouped(f.answers.reps) + ", REJ " + grouped(f.answers.rejs) +
                            ", MRA " + grouped(f.answers.mras) + ", other " +
                            grouped(f.answers.other) + " received at the flooding port, " +
                            grouped(r.counters_after_teardown.flood_queue_full) +
                            " lost to its full queue");
  row("flood admitted", grouped(f.admitted) + " REQs from outside the storm reached the listen");
  row("", std::string("(flood and probe; ") + grouped(f.left_half_open) +
              " of their endpoints still open after the probe, destroyed)");
  const std::uint64_t connections = r.options.connection_limit();
  row("legit during the flood",
      grouped(f.established_by_end) + " of " + grouped(connections) + " established (" +
          printf_string("%.1f%%", percent(f.established_by_end, connections)) +
          ") by the flood's end");
  row("", printf_string("(storm from %.2f s", f.storm_start_s) +
              printf_string(" to %.2f s of the flood)", f.storm_end_s));
  row("answered after the flood",
      f.recovery.answered
          ? latency_text(static_cast<std::uint64_t>(f.recovery.after_s * 1e9)) +
                " from the flood's end to a REP for a fresh connect (" +
                grouped(f.recovery.attempts) +
                (f.recovery.attempts == 1 ? " attempt" : " attempts") + ", one every 5 ms)"
          : "NO REP within 30 s (" + grouped(f.recovery.attempts) + " attempts)");
  row("server peak during flood",
      "MADs " + grouped(std::uint64_t{f.run.server_mads_high}) + " of " +
          grouped(std::uint64_t{r.sizing.mad_buffers}) + " (sampled every ms), endpoints " +
          grouped(f.server_endpoints.high_water) + " of " + grouped(f.server_endpoints.limit));
  row("", "(half-open bounds: " + grouped(std::uint64_t{r.sizing.half_open_per_source}) +
              " per source, " + grouped(std::uint64_t{r.sizing.half_open_per_listen}) +
              " per listen)");
  const auto drop = [&r](DropReason reason) {
    return grouped(r.counters_after_teardown.server.drops[static_cast<std::size_t>(reason)]);
  };
  row("server shed", "source_budget " + drop(DropReason::source_budget) + ", listen_budget " +
                         drop(DropReason::listen_budget) + ", no_resources " +
                         drop(DropReason::no_resources) + ", inbox_full " +
                         drop(DropReason::inbox_full) + ", port queue overflows " +
                         grouped(r.counters_after_teardown.server_queue_full));
  row("", "(every server drop: " + grouped(sum_drops(r.counters_after_teardown.server)) +
              drop_text(r.counters_after_teardown.server) + "; REQs received, all sources: " +
              grouped(server_reqs_received(r)) + ")");
}

nlohmann::json flood_json(const Report& r) {
  const FloodFigures& f = *r.flood;
  return {{"rate_asked", r.options.flood_rate},
          {"seconds_asked", r.options.flood_seconds},
          {"sent", f.run.sent},
          {"refused", f.run.refused},
          {"seconds", f.run.seconds},
          {"offered_per_sec", f.run.offered_per_sec()},
          {"thread_cpu_s", f.run.cpu_s},
          {"answers", {{"rep", f.answers.reps}, {"rej", f.answers.rejs},
                       {"mra", f.answers.mras}, {"other", f.answers.other}}},
          {"admitted", f.admitted},
          {"left_half_open", f.left_half_open},
          {"established_by_end", f.established_by_end},
          {"established_by_end_pct", percent(f.established_by_end, r.options.connection_limit())},
          {"storm_start_s", f.storm_start_s},
          {"storm_end_s", f.storm_end_s},
          {"recovery", {{"answered", f.recovery.answered},
                        {"after_s", f.recovery.answered ? nlohmann::json(f.recovery.after_s)
                                                        : nlohmann::json(nullptr)},
                        {"attempts", f.recovery.attempts}}},
          {"server_mads_high", f.run.server_mads_high},
          {"mad_buffers", r.sizing.mad_buffers},
          {"server_endpoints_high", f.server_endpoints.high_water},
          {"max_endpoints", f.server_endpoints.limit},
          {"half_open_per_source", r.sizing.half_open_per_source},
          {"half_open_per_listen", r.sizing.half_open_per_listen},
          {"server_drops", drops_json(r.counters_after_teardown.server)},
          {"server_queue_full", r.counters_after_teardown.server_queue_full},
          {"server_reqs_received", server_reqs_received(r)},
          {"flood_queue_full", r.counters_after_teardown.flood_queue_full}};
}

}  // namespace

double Report::established_per_sec() const noexcept {
  return run.wall_s > 0 ? static_cast<double>(count(Count::established)) / run.wall_s : 0;
}

double Report::established_per_cpu_sec() const noexcept {
  return run.cpu_s > 0 ? static_cast<double>(count(Count::established)) / run.cpu_s : 0;
}

double Report::mads_per_sec() const noexcept {
  return run.wall_s > 0
             ? static_cast<double>(counters.server.mads_sent + counters.client.mads_sent) /
                   run.wall_s
             : 0;
}

std::optional<double> Report::bytes_per_connection() const noexcept {
  const std::uint64_t established = count(Count::established);
  if (options.disconnect || established == 0 || rss_storm_end < rss_before_engines) {
    return std::nullopt;
  }
  const double engines = options.role == Role::both ? 2.0 : 1.0;
  return static_cast<double>(rss_storm_end - rss_before_engines) /
         (engines * static_cast<double>(established));
}

std::uint64_t Report::teardown_retries() const noexcept {
  const auto retries = [](const RigCounters& c) { return c.server.retries + c.client.retries; };
  return retries(counters_after_teardown) - retries(counters);
}

std::uint64_t Report::unaccounted() const noexcept {
  const auto apart = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : b - a; };
  std::uint64_t n = apart(count(Count::attempted),
                          count(Count::established) + count(Count::rejected) +
                              count(Count::timed_out) + count(Count::failed_calls));
  if (options.disconnect) {
    n += apart(count(Count::established), count(Count::disconnected) +
                                              count(Count::lost_after_established) +
                                              count(Count::failed_disconnects));
  }
  return n;
}

std::uint64_t Report::duplicate_events() const noexcept {
  return count(Count::duplicate_events) + count(Count::server_duplicate_events);
}

bool Report::clean() const noexcept {
  return !run.stalled && teardown.drained && leaks.leaked_mads == 0 && leaks.leaked_ceps == 0 &&
         unaccounted() == 0 && duplicate_events() == 0;
}

void print_table(std::ostream& out, const Report& r) {
  const Options& o = r.options;
  const auto row = [&out](const char* label, const std::string& value) {
    table_row(out, label, value);
  };
  std::string what = o.duration_s > 0 ? printf_string("%.0f s of connections", o.duration_s)
                                      : grouped(o.connections) + " connections";
  if (o.duration_s > 0 && o.connection_limit() != std::numeric_limits<std::uint64_t>::max()) {
    what += " (at most " + grouped(o.connections) + ")";
  }
  const bool both = o.role == Role::both;
  const std::string listen = both ? "one listen" : "the listen at " + r.target + ",";
  out << "fastcm-bench: " << what << " to " << listen << " over " << r.ports
      << (both ? "" : std::string(" ") + to_string(o.fabric)) << " port"
      << (r.ports == 1 ? "" : "s") << ", " << o.shards << " shard" << (o.shards == 1 ? "" : "s")
      << " per engine, window " << o.window << ", " << to_string(o.mode) << " delivery"
      << (o.disconnect ? ", full life cycle (--disconnect)" : "") << '\n';
  if (o.loss_pct > 0 || o.dup_pct > 0 || o.reorder_pct > 0) {
    out << "  faults: loss " << o.loss_pct << "%, dup " << o.dup_pct << "%, reorder "
        << o.reorder_pct << "% (seed " << o.seed << ")\n";
  }
  if (o.contend > 0) {
    out << "  contended: " << o.contend << " CPU-bound processes beside the storm, "
        << printf_string("%.2f", r.contenders_cpu_s) << " CPU-seconds of theirs\n";
  }
  row("attempted", grouped(r.count(Count::attempted)));
  row("established", grouped(r.count(Count::established)));
  row("rejected", grouped(r.count(Count::rejected)));
  row("timed out", grouped(r.count(Count::timed_out)));
  if (r.count(Count::failed_calls) + r.count(Count::failed_disconnects) +
          r.count(Count::server_failed_calls) >
      0) {
    row("API calls refused",
        "client " + grouped(r.count(Count::failed_calls) + r.count(Count::failed_disconnects)) +
            ", server " + grouped(r.count(Count::server_failed_calls)));
  }
  if (r.count(Count::lost_after_established) > 0) {
    row("lost after established", grouped(r.count(Count::lost_after_established)));
  }
  if (o.disconnect) {
    row("disconnected", grouped(r.count(Count::disconnected)) + " (DREQ, DREP, time-wait)" +
                            (r.count(Count::disconnect_timeouts) > 0
                                 ? ", " + grouped(r.count(Count::disconnect_timeouts)) +
                                       " DREQ timeouts"
                                 : ""));
  }
  row("unaccounted", grouped(r.unaccounted()) + " (connections without one ending)");
  row("duplicate events",
      "client " + grouped(r.count(Count::duplicate_events)) +
          (both ? ", server " + grouped(r.count(Count::server_duplicate_events)) : std::string()) +
          " (a second event of a kind, or one after destroy)");
  row("retries", grouped(r.counters.server.retries + r.counters.client.retries) +
                     (both ? " (MADs sent again after a timeout, both engines)"
                           : " (MADs sent again after a timeout)"));
  row("storm time", printf_string("%.2f s wall, ", r.run.wall_s) +
                        printf_string("%.2f s CPU ", r.run.cpu_s) +
                        printf_string("(%.2f cores)",
                                      r.run.wall_s > 0 ? r.run.cpu_s / r.run.wall_s : 0));
  row("context switches", grouped(r.run.switches.voluntary) + " voluntary, " +
                              grouped(r.run.switches.involuntary) + " involuntary (the storm's, whole process)");
  row("established per second", grouped(r.established_per_sec()) + " (" +
                                    grouped(r.established_per_cpu_sec()) + " per CPU-second)");
  row("MADs per second",
      grouped(r.mads_per_sec()) + (both ? " (sent by both engines)" : " (sent by the client)"));
  row("handshake latency",
      "p50 " + latency_text(r.latency.p50_ns) + ", p99 " + latency_text(r.latency.p99_ns) +
          ", p99.9 " + latency_text(r.latency.p999_ns) + ", max " +
          latency_text(r.latency.max_ns));
  row("", "(REQ sent -> REP received by the client, " + grouped(r.latency.count) + " samples)");
  if (both) {
    row("shard balance, server", percent_list(r.counters.server.reqs_per_shard) +
                                     " of REQs received");
  }
  row("shard balance, client", percent_list(r.counters.client.reqs_per_shard) + " of REQs sent");
  if (const std::uint64_t established = r.count(Count::established); established > 0) {
    const auto per_connection = [&](std::uint64_t n) {
      return printf_string("%.2f", static_cast<double>(n) / static_cast<double>(established));
    };
    // The flood's REQs cross too, and they are not the storm's connections: the server's count is
    // given whole then.
    const std::string server = r.flood ? grouped(r.counters.server.forwarded) + " MADs in all (the flood's REQs among them)"
                                       : per_connection(r.counters.server.forwarded);
    row("thread crossings", (both ? "server " + server + ", " : std::string()) + "client " +
                                per_connection(r.counters.client.forwarded) +
                                " per connection (MADs a worker passed to another shard's)");
  }
  const std::uint64_t grown =
      r.rss_storm_end > r.rss_before_engines ? r.rss_storm_end - r.rss_before_engines : 0;
  const std::uint64_t at_creation = r.rss_engines_created > r.rss_before_engines
                                        ? r.rss_engines_created - r.rss_before_engines
                                        : 0;
  if (const std::optional<double> per = r.bytes_per_connection()) {
    row("engine memory", grouped(*per) + " bytes per connection and engine");
  } else {
    row("engine memory", "(per connection: only without --disconnect)");
  }
  row("", "(RSS " + mib(r.rss_before_engines) + " before the engines, +" + mib(at_creation) +
              " at creation, +" + mib(grown) + " at the end of the storm; peak " +
              mib(r.rss_peak) + ")");
  row("", "(per engine: " + grouped(std::uint64_t{r.sizing.max_endpoints}) + " endpoints, " +
              grouped(std::uint64_t{r.sizing.mad_buffers}) + " MAD buffers; " +
              (both ? "both created in " : "created in ") +
              printf_string("%.2f s", r.create_wall_s) + ")");
  if (both) {
    row("MAD pool high-water", "server " + grouped(std::uint64_t{r.run.server_mads_high}) +
                                   ", client " + grouped(std::uint64_t{r.run.client_mads_high}) +
                                   " of " + grouped(std::uint64_t{r.sizing.mad_buffers}) +
                                   " each (sampled every 50 ms)");
  } else {
    row("MAD pool high-water", grouped(std::uint64_t{r.run.client_mads_high}) + " of " +
                                   grouped(std::uint64_t{r.sizing.mad_buffers}) +
                                   " (sampled every 50 ms)");
  }
  if (o.mode == DeliveryMode::poll && both) {
    row("event queue high-water", "server " + grouped(std::uint64_t{r.run.server_queue_high}) +
                                      ", client " +
                                      grouped(std::uint64_t{r.run.client_queue_high}) + " of " +
                                      grouped(std::uint64_t{r.sizing.event_queue_capacity}));
  }
  const std::uint64_t engine_drops = sum_drops(r.counters.server) + sum_drops(r.counters.client);
  if (o.mode == DeliveryMode::poll && !both) {
    row("event queue high-water", grouped(std::uint64_t{r.run.client_queue_high}) + " of " +
                                      grouped(std::uint64_t{r.sizing.event_queue_capacity}));
  }
  if (engine_drops > 0 && !both) {
    row("MADs dropped by the engine",
        grouped(sum_drops(r.counters.client)) + drop_text(r.counters.client));
  } else if (engine_drops > 0) {
    row("MADs dropped by engines", "server " + grouped(sum_drops(r.counters.server)) +
                                       drop_text(r.counters.server) + ", client " +
                                       grouped(sum_drops(r.counters.client)) +
                                       drop_text(r.counters.client));
  }
  if (r.counters.fabric_lost + r.counters.fabric_duplicated + r.counters.fabric_delayed +
          r.counters.fabric_queue_full >
      0) {
    row("fabric", "lost " + grouped(r.counters.fabric_lost) + ", duplicated " +
                      grouped(r.counters.fabric_duplicated) + ", reordered " +
                      grouped(r.counters.fabric_delayed) + ", queue overflows " +
                      grouped(r.counters.fabric_queue_full));
  }
  const std::uint64_t teardown_retries = r.teardown_retries();
  row("teardown", printf_string("%.2f s", r.teardown.wall_s) +
                      (r.teardown.destroyed > 0
                           ? ", " + grouped(r.teardown.destroyed) + " connections disconnected"
                           : "") +
                      (teardown_retries > 0 ? ", " + grouped(teardown_retries) + " retries" : "") +
                      (r.teardown.drained ? "" : ", NOT drained"));
  pcap_row(out, o, r.counters_after_teardown);
  row("leaked CEPs", grouped(r.leaks.leaked_ceps) +
                         printf_string(" (create_id of every endpoint again: %.2f s)",
                                       r.leaks.wall_s));
  row("leaked MADs", grouped(r.leaks.leaked_mads));
  if (r.flood) flood_rows(out, r);
  if (r.run.stalled) out << "  STALLED: no connection settled for a long time; the storm was cut short\n";
}

nlohmann::json to_json(const Report& r) {
  const Options& o = r.options;
  nlohmann::json j;
  if (o.role != Role::both) {
    j["role"] = to_string(o.role);
    j["fabric"] = to_string(o.fabric);
    j["service_id"] = o.service_id;
    j["target"] = r.target;
  }
  j["ports"] = r.ports;
  j["shards"] = o.shards;
  j["window"] = o.window;
  j["mode"] = to_string(o.mode);
  j["posted_calls"] = o.posted_calls;
  j["disconnect"] = o.disconnect;
  j["contend"] = {{"processes", o.contend}, {"cpu_s", r.contenders_cpu_s}};
  j["private_data"] = o.private_data;
  j["connections_limit"] = o.connection_limit() == std::numeric_limits<std::uint64_t>::max()
                               ? nlohmann::json(nullptr)
                               : nlohmann::json(o.connection_limit());
  j["duration_s"] = o.duration_s > 0 ? nlohmann::json(o.duration_s) : nlohmann::json(nullptr);
  j["faults"] = {{"loss_pct", o.loss_pct}, {"dup_pct", o.dup_pct},
                 {"reorder_pct", o.reorder_pct}, {"seed", o.seed}};
  j["attempted"] = r.count(Count::attempted);
  j["established"] = r.count(Count::established);
  j["rejected"] = r.count(Count::rejected);
  j["timed_out"] = r.count(Count::timed_out);
  j["failed_calls"] = r.count(Count::failed_calls);
  j["server_failed_calls"] = r.count(Count::server_failed_calls);
  j["server_established"] = r.count(Count::server_established);
  j["lost_after_established"] = r.count(Count::lost_after_established);
  j["disconnected"] = r.count(Count::disconnected);
  j["disconnect_timeouts"] = r.count(Count::disconnect_timeouts);
  j["failed_disconnects"] = r.count(Count::failed_disconnects);
  j["unaccounted"] = r.unaccounted();
  j["duplicate_events"] = r.count(Count::duplicate_events);
  j["server_duplicate_events"] = r.count(Count::server_duplicate_events);
  j["retries"] = r.counters.server.retries + r.counters.client.retries;
  j["duplicates_received"] = r.counters.server.duplicates + r.counters.client.duplicates;
  j["create_wall_s"] = r.create_wall_s;
  j["create_cpu_s"] = r.create_cpu_s;
  j["wall_s"] = r.run.wall_s;
  j["cpu_s"] = r.run.cpu_s;
  j["established_per_sec"] = r.established_per_sec();
  j["established_per_cpu_sec"] = r.established_per_cpu_sec();
  j["context_switches"] = {{"voluntary", r.run.switches.voluntary}, {"involuntary", r.run.switches.involuntary}};
  j["mads_sent"] = r.counters.server.mads_sent + r.counters.client.mads_sent;
  j["mads_per_sec"] = r.mads_per_sec();
  j["latency_us"] = {{"p50", us(r.latency.p50_ns)},
                     {"p99", us(r.latency.p99_ns)},
                     {"p999", us(r.latency.p999_ns)},
                     {"max", us(r.latency.max_ns)},
                     {"samples", r.latency.count},
                     {"measured", "REQ sent to REP received by the client"}};
  j["shard_reqs"] = {{"server_received", r.counters.server.reqs_per_shard},
                     {"client_sent", r.counters.client.reqs_per_shard}};
  j["forwarded_mads"] = {{"server", r.counters.server.forwarded}, {"client", r.counters.client.forwarded}};
  const std::optional<double> per = r.bytes_per_connection();
  j["bytes_per_connection"] = per ? nlohmann::json(*per) : nlohmann::json(nullptr);
  j["memory"] = {{"rss_before_engines", r.rss_before_engines},
                 {"rss_engines_created", r.rss_engines_created},
                 {"rss_storm_end", r.rss_storm_end},
                 {"rss_peak", r.rss_peak},
                 {"max_endpoints", r.sizing.max_endpoints},
                 {"mad_buffers", r.sizing.mad_buffers}};
  j["pools"] = {{"server_mads_high", r.run.server_mads_high},
                {"client_mads_high", r.run.client_mads_high},
                {"mad_buffers", r.sizing.mad_buffers},
                {"server_queue_high", r.run.server_queue_high},
                {"client_queue_high", r.run.client_queue_high}};
  j["drops"] = {{"server", drops_json(r.counters.server)},
                {"client", drops_json(r.counters.client)}};
  j["fabric"] = {{"lost", r.counters.fabric_lost},
                 {"duplicated", r.counters.fabric_duplicated},
                 {"delayed", r.counters.fabric_delayed},
                 {"queue_full", r.counters.fabric_queue_full}};
  j["teardown"] = {{"wall_s", r.teardown.wall_s},
                   {"destroyed", r.teardown.destroyed},
                   {"retries", r.teardown_retries()},
                   {"drained", r.teardown.drained}};
  j["stalled"] = r.run.stalled;
  j["pcap"] = pcap_json(r.counters_after_teardown);
  j["leaked_ceps"] = r.leaks.leaked_ceps;
  j["leaked_mads"] = r.leaks.leaked_mads;
  j["flood"] = r.flood ? flood_json(r) : nlohmann::json(nullptr);
  return j;
}

}  // namespace fastcm::bench
