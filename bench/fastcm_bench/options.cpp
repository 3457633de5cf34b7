#include "bench/fastcm_bench/options.h"

#include <algorithm>
#include <iostream>
#include <limits>

#include <CLI/CLI.hpp>

#include "fabric/loopback/loopback_config.h"
#include "fastcm/engine.h"
#include "fastcm/params.h"

namespace fastcm::bench {

std::uint64_t Options::connection_limit() const noexcept {
  if (duration_s > 0 && disconnect && !connections_given) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  return connections;
}

const char* to_string(DeliveryMode mode) noexcept {
  return mode == DeliveryMode::poll ? "poll" : "callback";
}

std::optional<Options> parse_options(int argc, char** argv, int& exit_code) {
  Options o;
  CLI::App app{
      "fastcm-bench: a connection storm through fastcm. Clients on one simulated HCA connect to "
      "one listen on another over the in-process loopback fabric (REQ, REP, RTU; with "
      "--disconnect also DREQ, DREP and time-wait), keeping a window of connections in flight, "
      "then print a table (or JSON) of rates, latencies, shard balance, memory and leaks.",
      "fastcm-bench"};
  app.get_formatter()->column_width(28);
  app.add_option("--connections,-n", o.connections,
                 "connections to open (with --duration: at most this many)")
      ->check(CLI::Range(std::uint64_t{1}, std::numeric_limits<std::uint64_t>::max() / 2))
      ->capture_default_str();
  app.add_option("--duration,-d", o.duration_s,
                 "stop opening connections after this many seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--ports,-p", o.ports, "ports per HCA, one listen on all of them")
      ->check(CLI::Range(1, 15))
      ->capture_default_str();
  app.add_option("--shards,-s", o.shards, "shards per engine (default: one per port)")
      ->check(CLI::Range(1u, kMaxShards));
  app.add_option("--window,-w", o.window,
                 "connections in flight at once: each of W lanes opens its next connection when "
                 "its current one is established (with --disconnect: when it has left time-wait) "
                 "or has failed")
      ->check(CLI::Range(1u, kMaxWindow))
      ->capture_default_str();
  app.add_option("--private-data", o.private_data, "private data bytes in each REQ and REP")
      ->check(CLI::Range(std::size_t{0}, kMaxReqPrivateData))
      ->capture_default_str();
  std::string mode = "callback";
  app.add_option("--mode", mode,
                 "event delivery: callback (on the shard threads) or poll (event queues drained "
                 "by one application thread per side)")
      ->check(CLI::IsMember({"callback", "poll"}))
      ->capture_default_str();
  app.add_flag("--disconnect", o.disconnect,
               "full life cycle: after its RTU each client sends a DREQ, waits for the DREP and "
               "time-wait, and destroys its endpoint");
  app.add_option("--loss", o.loss_pct, "percent of MADs the fabric loses")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--dup", o.dup_pct, "percent of MADs the fabric delivers twice")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--reorder", o.reorder_pct,
                 "percent of MADs the fabric holds back up to 1 ms so later ones overtake them")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--seed", o.seed, "seed of the fabric's fault decisions")
      ->capture_default_str();
  app.add_option("--cm-timeout", o.cm_timeout,
                 "CM response timeout exponent: a REQ, REP or DREQ is sent again after "
                 "4.096 us x 2^T (20: 4.3 s, rdma_cm's default; lower it for shorter tails "
                 "with --loss)")
      ->check(CLI::Range(0u, 31u))
      ->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object instead of the table");
  app.add_option("--plot", o.plot_path,
                 "draw the rate over time and the latency CDF into this SVG file (gnuplot)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e) == 0 ? 0 : 2;  // --help, or a usage error (printed)
    return std::nullopt;
  }
  o.mode = mode == "poll" ? DeliveryMode::poll : DeliveryMode::callback;
  o.connections_given = app.count("--connections") > 0;
  if (o.shards == 0) o.shards = o.ports;
  if (!o.disconnect && o.connection_limit() > kMaxEstablished) {
    std::cerr << "fastcm-bench: without --disconnect every connection stays established until "
                 "the end; at most "
              << kMaxEstablished << " (use --disconnect for more)\n";
    exit_code = 2;
    return std::nullopt;
  }
  o.window = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(o.window, o.connection_limit()));
  exit_code = 0;
  return o;
}

}  // namespace fastcm::bench
