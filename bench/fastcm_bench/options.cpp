#include "bench/fastcm_bench/options.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <map>

#include <CLI/CLI.hpp>

#include "bench/fastcm_bench/config_options.h"
#include "fabric/loopback/loopback_config.h"
#include "fastcm/engine.h"
#include "fastcm/params.h"
#include "fastcm/rdma_cm.h"
#include "tools/fastcm-mad/gid_text.h"

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

const char* to_string(FabricKind fabric) noexcept {
  switch (fabric) {
    case FabricKind::umad: return "umad";
    case FabricKind::udp: return "udp";
    case FabricKind::loopback: break;
  }
  return "loopback";
}

const char* to_string(Role role) noexcept {
  switch (role) {
    case Role::server: return "server";
    case Role::client: return "client";
    case Role::both: break;
  }
  return "both";
}

namespace {

// Options that belong to one fabric or one role, and the ones each role needs. Returns the
// first conflict as a message, empty when there is none.
std::string check_combination(const CLI::App& app, const Options& o) {
  const auto given = [&app](const char* name) { return app.count(name) > 0; };
  const auto first_given = [&](std::initializer_list<const char*> names) -> std::string {
    for (const char* n : names) {
      if (given(n)) return n;
    }
    return {};
  };
  if (o.role == Role::both && o.fabric != FabricKind::loopback) {
    return "--role both runs both sides in one process over the loopback fabric; over " +
           std::string(to_string(o.fabric)) +
           " run one process with --role server and another with --role client";
  }
  if (o.role != Role::both && o.fabric == FabricKind::loopback) {
    return std::string("--role ") + to_string(o.role) +
           " needs a fabric another process can reach (--fabric umad or udp): the loopback "
           "fabric lives inside one process";
  }
  if (const std::string n = first_given({"--ports", "--loss", "--dup", "--reorder", "--seed"});
      !n.empty() && o.fabric != FabricKind::loopback) {
    return n + " applies to the loopback fabric only";
  }
  if (const std::string n = first_given({"--device", "--hca-port"});
      !n.empty() && o.fabric != FabricKind::umad) {
    return n + " applies to --fabric umad only";
  }
  if (const std::string n = first_given({"--address", "--udp-port"});
      !n.empty() && o.fabric != FabricKind::udp) {
    return n + " applies to --fabric udp only";
  }
  if (o.fabric == FabricKind::udp && o.addresses.empty()) {
    return "--fabric udp needs at least one --address (one port per local IP address)";
  }
  if (const std::string n = first_given({"--flood-rate", "--flood-seconds"});
      !n.empty() && o.role != Role::both) {
    return n + " floods from a third loopback HCA: --role both only";
  }
  if (given("--flood-seconds") && !given("--flood-rate")) {
    return "--flood-seconds needs --flood-rate";
  }
  if (given("--flood-rate") && o.duration_s > 0) {
    return "--flood-rate: the storm runs its --connections during the flood; --duration does not "
           "apply";
  }
  if (given("--service-id") && given("--rdma-cm-port")) {
    return "--service-id and --rdma-cm-port both name the listen's service ID: give one";
  }
  if (o.role == Role::server) {
    if (const std::string n =
            first_given({"--window", "--disconnect", "--cm-timeout", "--plot", "--contend",
                         "--target-lid", "--target-gid", "--target-ip", "--source-ip"});
        !n.empty()) {
      return n + " applies to the storm's client side (--role client or both), not to --role "
                 "server";
    }
    return {};
  }
  if (o.role == Role::both) {
    if (const std::string n = first_given(
            {"--target-lid", "--target-gid", "--target-ip", "--source-ip", "--rdma-cm-port"});
        !n.empty()) {
      return n + " addresses another process's listen: use it with --role client";
    }
    return {};
  }
  // --role client
  if (!o.target.gid && !o.target.ip) {
    return "--role client needs the listen's address: --target-gid GID (on InfiniBand with "
           "--target-lid LID), or on RoCE and udp --target-ip IP";
  }
  if (o.target.lid && o.fabric == FabricKind::udp) {
    return "--target-lid: udp ports have no LIDs (RoCE); name the listen by --target-gid or "
           "--target-ip";
  }
  if (o.rdma_cm_port) {
    if (!o.target.ip || !o.source_ip) {
      return "--rdma-cm-port needs --source-ip and --target-ip: rdma_cm's REQ header carries "
             "both addresses";
    }
    if (o.target.ip->version != o.source_ip->version) {
      return "--source-ip and --target-ip must both be IPv4 or both IPv6";
    }
    if (o.private_data > rdma_cm::kMaxReqConsumerData) {
      return "--private-data: with --rdma-cm-port at most " +
             std::to_string(rdma_cm::kMaxReqConsumerData) +
             " bytes (rdma_cm's header takes the first " +
             std::to_string(rdma_cm::kIpHeaderSize) + " of the REQ's)";
    }
  } else if (o.source_ip) {
    return "--source-ip is the rdma_cm header's source address: use it with --rdma-cm-port";
  }
  return {};
}

// CLI11 validators that parse into the option's typed form and say what they expect.
template <typename T, typename Parse>
std::function<std::string(const std::string&)> parsed_into(std::optional<T>& out, Parse parse,
                                                           const char* what) {
  return [&out, parse, what](const std::string& text) -> std::string {
    out = parse(text);
    return out ? std::string() : text + " is not " + what;
  };
}

}  // namespace

std::optional<Options> parse_options(int argc, char** argv, int& exit_code) {
  Options o;
  CLI::App app{
      "fastcm-bench: a connection storm through fastcm. Clients on one simulated HCA connect to "
      "one listen on another over the in-process loopback fabric (REQ, REP, RTU; with "
      "--disconnect also DREQ, DREP and time-wait), keeping a window of connections in flight, "
      "then print a table (or JSON) of rates, latencies, shard balance, memory and leaks. With "
      "--role server and --role client the two sides run as two processes over --fabric umad "
      "or udp.",
      "fastcm-bench"};
  app.get_formatter()->column_width(28);
  std::string fabric = "loopback";
  app.add_option("--fabric", fabric,
                 "loopback (in-process, both sides), umad (rdma-core libibumad: an HCA's "
                 "InfiniBand or RoCE ports) or udp (RoCEv2 GSI over a UDP socket)")
      ->check(CLI::IsMember({"loopback", "umad", "udp"}))
      ->capture_default_str();
  std::string role = "both";
  app.add_option("--role", role,
                 "both: storm and listen in this process (loopback); server: the listen alone, "
                 "until SIGINT, SIGTERM or --duration; client: the storm against a listen "
                 "elsewhere")
      ->check(CLI::IsMember({"both", "server", "client"}))
      ->capture_default_str();
  app.add_option("--device", o.device, "umad: the HCA (default: the first with an active port)");
  app.add_option("--hca-port", o.hca_ports,
                 "umad: a port number of the device, repeatable (default: every active port)")
      ->check(CLI::Range(1, 254));
  app.add_option("--address", o.addresses, "udp: a local IP address, one port each; repeatable");
  app.add_option("--udp-port", o.udp_port, "udp: the UDP port of RoCEv2 (4791) or another")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  char default_sid[24];
  std::snprintf(default_sid, sizeof default_sid, "0x%" PRIx64, kDefaultServiceId);
  app.add_option("--service-id", o.service_id,
                 std::string("the listen's service ID (server: listens on it; client: connects "
                             "to it; default ") +
                     default_sid + ")");
  std::uint16_t rdma_cm_port = 0;
  app.add_option("--rdma-cm-port", rdma_cm_port,
                 "instead of --service-id: rdma_cm's TCP port space ID for this port; a client "
                 "also puts rdma_cm's IP header in its REQs (--source-ip, --target-ip)");
  std::uint16_t target_lid = 0;
  app.add_option("--target-lid", target_lid, "client: the listen's port LID (InfiniBand)")
      ->check(CLI::Range(1, 0xbfff));
  app.add_option("--target-gid", "client: the listen's port GID (IPv6 notation)")
      ->type_name("GID")
      ->check(parsed_into(o.target.gid, tools::gid_from_text, "a GID (IPv6 notation)"));
  app.add_option("--target-ip", "client: the listen's IP address (on RoCE and udp its GID too)")
      ->type_name("IP")
      ->check(parsed_into(o.target.ip, parse_ip_address, "an IPv4 or IPv6 address"));
  app.add_option("--source-ip", "client with --rdma-cm-port: the header's source address")
      ->type_name("IP")
      ->check(parsed_into(o.source_ip, parse_ip_address, "an IPv4 or IPv6 address"));
  app.add_option("--connections,-n", o.connections,
                 "connections to open (with --duration: at most this many); --role server: "
                 "the most it keeps open at once (sizes its engine)")
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
  app.add_option("--posted-calls", o.posted_calls,
                 "calls of application threads (--mode poll's answers, the storm's first REQs) "
                 "queued to the shards without waiting, at most (EngineConfig::posted_calls); 0: "
                 "each waits for its shard")
      ->check(CLI::Range(0u, 1u << 20))
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
  app.add_option("--flood-rate", o.flood_rate,
                 "REQs per second a third loopback HCA (one port, one source) sends the listen for "
                 "--flood-seconds: each with fresh comm ID and QPN, CM response timeouts 2^20 "
                 "(4.3 s) and 15 retries, REPs ignored, no RTU; the storm's connections start "
                 "after a fifth of it. Adds the flood's figures to the report: the rate offered, "
                 "the storm's connections established by the flood's end, the time from its end "
                 "to a REP for a fresh connect, the server's peak MADs and endpoints, and what it "
                 "shed, by reason")
      ->check(CLI::PositiveNumber);
  app.add_option("--flood-seconds", o.flood_seconds, "how long --flood-rate floods")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  app.add_option("--contend", o.contend,
                 "CPU-bound child processes (at this tool's nice value) running while the storm "
                 "runs, to measure it on shared cores")
      ->check(CLI::Range(0, 256));
  app.add_flag("--json", o.json, "print one JSON object instead of the table");
  app.add_option("--plot", o.plot_path,
                 "draw the rate over time and the latency CDF into this SVG file (gnuplot)");
  app.add_option("--pcap", o.pcap_path,
                 "record every CM MAD the listening side (--role client: the client) sends and "
                 "receives into this pcapng file, one interface per port");
  app.add_option("--pcap-limit", o.pcap_limit,
                 "the capture's size limit in bytes; later MADs are counted, not recorded")
      ->capture_default_str();
  // Operating the run: a settings file under the command line, metrics, the log's level.
  app.add_option("--config", o.config_path,
                 "a settings file (INI, configs/README.md): its keys are the defaults of the "
                 "options above; options given here win")
      ->check(CLI::ExistingFile);
  app.add_option("--metrics", o.metrics_path,
                 "write the engines' counters to this file every --metrics-interval (replaced "
                 "atomically): Prometheus text, or JSON for a name ending in .json");
  app.add_option("--metrics-interval", o.metrics_interval_ms, "milliseconds between metrics writes")
      ->check(CLI::Range(10u, 3'600'000u))
      ->capture_default_str();
  std::string log_level = "warning";
  app.add_option("--log-level", log_level, "fastcm's log level (messages go to standard error)")
      ->check(CLI::IsMember({"off", "error", "warning", "notice", "info", "debug"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e) == 0 ? 0 : 2;  // --help, or a usage error (printed)
    return std::nullopt;
  }
  o.mode = mode == "poll" ? DeliveryMode::poll : DeliveryMode::callback;
  o.fabric = fabric == "umad" ? FabricKind::umad
             : fabric == "udp" ? FabricKind::udp
                               : FabricKind::loopback;
  o.role = role == "server" ? Role::server : role == "client" ? Role::client : Role::both;
  if (app.count("--rdma-cm-port") > 0) {
    o.rdma_cm_port = rdma_cm_port;
    o.service_id = rdma_cm::service_id(rdma_cm::PortSpace::tcp, rdma_cm_port);
  }
  if (app.count("--target-lid") > 0) o.target.lid = target_lid;
  for (const LogLevel level : {LogLevel::off, LogLevel::error, LogLevel::warning, LogLevel::notice,
                               LogLevel::info, LogLevel::debug}) {
    if (to_string(level) == log_level) o.log_level = level;
  }
  if (!o.config_path.empty()) {
    if (const std::string problem = apply_config_file(app, o); !problem.empty()) {
      std::cerr << "fastcm-bench: --config " << problem << '\n';
      exit_code = 2;
      return std::nullopt;
    }
  }
  if (const std::string conflict = check_combination(app, o); !conflict.empty()) {
    std::cerr << "fastcm-bench: " << conflict << '\n';
    exit_code = 2;
    return std::nullopt;
  }
  o.connections_given = app.count("--connections") > 0;
  if (o.shards == 0 && o.fabric == FabricKind::loopback) o.shards = o.ports;
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
