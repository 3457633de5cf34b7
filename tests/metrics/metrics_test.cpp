// fastcm/metrics.h: the exposition format's rules (families together, each with HELP and TYPE;
// fastcm_ names; counters ending _total, levels as gauges), the counts of a real exchange in both
// formats, timeouts and high-water marks, and the metrics file replaced whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/engine.h"
#include "fastcm/metrics.h"
#include "metrics/metrics_file.h"

namespace fastcm {
namespace {

constexpr std::uint64_t kService = 0x77;

struct Pair {
  VirtualClock clock;
  loopback::LoopbackFabric fabric{loopback::LoopbackConfig::two_hcas(2), clock};
  std::unique_ptr<Engine> server;
  std::unique_ptr<Engine> client;

  Pair() {
    EngineConfig config;
    config.shards = 2;
    config.threading = Threading::caller;
    config.max_endpoints = 64;
    config.mad_buffers = 256;
    config.auto_mra_fraction = 0;
    server = Engine::create(fabric.hca(0), clock, config);
    client = Engine::create(fabric.hca(1), clock, config);
  }
  void run() {
    for (int i = 0; i < 100; ++i) {
      if (server->progress() + client->progress() == 0) return;
    }
  }
};

void accept(const Event& e, void* ctx) {
  auto& engine = *static_cast<Engine*>(ctx);
  if (e.type == EventType::req_received) {
    RepParams rep;
    rep.qpn = 0x300;
    EXPECT_EQ(engine.send_rep(e.id, rep), Status::ok);
  }
}

void confirm(const Event& e, void* ctx) {
  if (e.type == EventType::rep_received) {
    EXPECT_EQ(static_cast<Engine*>(ctx)->send_rtu(e.id, {}), Status::ok);
  }
}

ReqParams req_to(Pair& p, std::uint8_t port_index, std::uint64_t service) {
  ReqParams req;
  req.service_id = service;
  req.primary = loopback::path_record(p.fabric.hca(1).ports()[port_index], p.fabric.hca(0).ports()[port_index], 10);
  req.qpn = 0x100;
  req.max_cm_retries = 1;
  return req;
}

// The value of the one sample `line_start` begins.
std::uint64_t sample(const std::string& text, const std::string& line_start) {
  const std::size_t at = text.find("\n" + line_start);
  EXPECT_NE(at, std::string::npos) << line_start;
  if (at == std::string::npos) return 0;
  const std::size_t end = text.find('\n', at + 1);
  const std::string line = text.substr(at + 1, end - at - 1);
  return std::stoull(line.substr(line.rfind(' ') + 1));
}

TEST(Metrics, PrometheusFamiliesFollowTheExpositionRules) {
  Pair p;
  const MetricsSource sources[] = {{p.server.get(), "server"}, {p.client.get(), "client"}};
  const std::string text = render_metrics(sources, MetricsFormat::prometheus);
  std::istringstream lines(text);
  std::map<std::string, std::string> types;  // family -> TYPE
  std::set<std::string> finished;
  std::string current;
  std::size_t samples = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(name.rfind("fastcm_", 0), 0u) << name;
      EXPECT_FALSE(types.contains(name)) << name << " described twice";
      if (!current.empty()) finished.insert(current);
      current = name;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(name, current) << "TYPE without its HELP";
      types[name] = line.substr(line.rfind(' ') + 1);
      continue;
    }
    ++samples;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name, current) << "a sample outside its family's lines: " << line;
    EXPECT_FALSE(finished.contains(name)) << line;
  }
  EXPECT_GT(samples, 0u);
  for (const auto& [name, type] : types) {
    const bool total = name.ends_with("_total");
    EXPECT_EQ(type, total ? "counter" : "gauge") << name;
  }
  EXPECT_TRUE(types.contains("fastcm_endpoints_high_water"));
  EXPECT_TRUE(types.contains("fastcm_shard_inbox_high_water"));
  EXPECT_TRUE(types.contains("fastcm_mad_buffers_high_water"));
  EXPECT_TRUE(types.contains("fastcm_event_queue_high_water"));
  EXPECT_TRUE(types.contains("fastcm_timeouts_total"));
}

TEST(Metrics, CountsOfAConnectionPerShardAndPort) {
  Pair p;
  ListenParams listen;
  listen.service_id = kService;
  listen.delivery = {.handler = accept, .handler_context = p.server.get()};
  Id listen_id;
  ASSERT_EQ(p.server->listen(listen, listen_id), Status::ok);
  Id id;
  ASSERT_EQ(p.client->create_id({.handler = confirm, .handler_context = p.client.get()}, nullptr, id), Status::ok);
  ASSERT_EQ(p.client->send_req(id, req_to(p, 1, kService)), Status::ok);  // port 2 of each HCA
  p.run();

  const MetricsSource server[] = {{p.server.get(), ""}};
  const std::string text = render_metrics(server, MetricsFormat::prometheus);
  // Unnamed: no engine label. The REQ's shard is the one whose counters have it.
  std::uint64_t reqs = 0;
  for (const char* shard : {"0", "1"}) {
    reqs += sample(text, "fastcm_messages_received_total{shard=\"" + std::string(shard) + "\",port=\"2\",message=\"req\"}");
    EXPECT_EQ(sample(text, "fastcm_messages_received_total{shard=\"" + std::string(shard) + "\",port=\"1\",message=\"req\"}"), 0u);
  }
  EXPECT_EQ(reqs, 1u);
  EXPECT_EQ(sample(text, "fastcm_endpoints "), 1u);  // the accepted endpoint, established
  EXPECT_EQ(sample(text, "fastcm_endpoints_high_water "), 1u);
  EXPECT_EQ(sample(text, "fastcm_endpoints_limit "), 64u);

  const nlohmann::json j = nlohmann::json::parse(render_metrics(server, MetricsFormat::json));
  std::uint64_t json_reqs = 0;
  std::uint64_t json_reps = 0;
  for (const auto& shard : j["engines"][0]["shards"]) {
    for (const auto& port : shard["ports"]) {
      json_reqs += port["messages"]["req"]["received"].get<std::uint64_t>();
      json_reps += port["messages"]["rep"]["sent"].get<std::uint64_t>();
    }
  }
  EXPECT_EQ(json_reqs, 1u);
  EXPECT_EQ(json_reps, 1u);
  EXPECT_EQ(j["engines"][0]["endpoints"]["high_water"], 1);
  EXPECT_EQ(j["engines"][0]["shards"].size(), 2u);
}

// A REQ nobody answers: sent, retried once, then timed out (req_error), on the client's port 1.
TEST(Metrics, TimeoutsAreCounted) {
  Pair p;
  Id id;
  ASSERT_EQ(p.client->create_id({.handler = [](const Event&, void*) {}, .handler_context = nullptr}, nullptr, id),
            Status::ok);
  ReqParams req = req_to(p, 0, kService);
  req.primary.remote_lid = 0x99;  // no such port: the loopback switch drops it
  ASSERT_EQ(p.client->send_req(id, req), Status::ok);
  for (int i = 0; i < 10; ++i) {
    p.clock.advance(std::uint64_t{1} << 36);  // beyond every retry wait
    p.run();
  }
  const MetricsSource client[] = {{p.client.get(), "c"}};
  const std::string text = render_metrics(client, MetricsFormat::prometheus);
  std::uint64_t timeouts = 0;
  std::uint64_t retries = 0;
  for (const char* shard : {"0", "1"}) {
    const std::string labels = "{engine=\"c\",shard=\"" + std::string(shard) + "\",port=\"1\",message=\"req\"}";
    timeouts += sample(text, "fastcm_timeouts_total" + labels);
    retries += sample(text, "fastcm_retransmissions_total" + labels);
  }
  EXPECT_EQ(timeouts, 1u);
  EXPECT_EQ(retries, 1u);
}

// Two REQs nobody answers, their errors queued: the queue's level shows both waiting, then none,
// and keeps its mark of 2 after the poll.
TEST(Metrics, EventQueueLevels) {
  Pair p;
  (void)p.client->create_event_queue(4);  // queue 0, unused
  EventQueue* queue = p.client->create_event_queue(8);
  ASSERT_NE(queue, nullptr);
  for (std::uint32_t qpn : {0x100U, 0x101U}) {
    Id id;
    ASSERT_EQ(p.client->create_id({.queue = queue}, nullptr, id), Status::ok);
    ReqParams req = req_to(p, 0, kService);
    req.primary.remote_lid = 0x99;  // no such port: the loopback switch drops it
    req.qpn = qpn;
    ASSERT_EQ(p.client->send_req(id, req), Status::ok);
  }
  for (int i = 0; i < 10; ++i) {
    p.clock.advance(std::uint64_t{1} << 36);  // beyond every retry wait
    p.run();
  }
  const MetricsSource client[] = {{p.client.get(), "c"}};
  std::string text = render_metrics(client, MetricsFormat::prometheus);
  EXPECT_EQ(sample(text, "fastcm_event_queue{engine=\"c\",queue=\"1\"} "), 2u);
  EXPECT_EQ(sample(text, "fastcm_event_queue_high_water{engine=\"c\",queue=\"1\"} "), 2u);
  EXPECT_EQ(sample(text, "fastcm_event_queue_limit{engine=\"c\",queue=\"1\"} "), 8u);
  EXPECT_EQ(sample(text, "fastcm_event_queue_limit{engine=\"c\",queue=\"0\"} "), 4u);
  std::array<Event, 8> events{};
  ASSERT_EQ(p.client->poll(*queue, events), 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(events[i].type, EventType::req_error);
  text = render_metrics(client, MetricsFormat::prometheus);
  EXPECT_EQ(sample(text, "fastcm_event_queue{engine=\"c\",queue=\"1\"} "), 0u);
  EXPECT_EQ(sample(text, "fastcm_event_queue_high_water{engine=\"c\",queue=\"1\"} "), 2u);
  const nlohmann::json j = nlohmann::json::parse(render_metrics(client, MetricsFormat::json));
  EXPECT_EQ(j["engines"][0]["event_queues"][1]["high_water"], 2);
  EXPECT_EQ(j["engines"][0]["event_queues"][1]["queue"], 1);
}

TEST(Metrics, FileIsReplacedWholeAndFollowsItsName) {
  Pair p;
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / ("fastcm_metrics_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string prom = (dir / "m.prom").string();
  const std::string json = (dir / "m.json").string();
  {
    metrics::MetricsFile a(prom, {{p.server.get(), "s"}}, std::chrono::milliseconds(3'600'000));
    metrics::MetricsFile b(json, {{p.server.get(), "s"}}, std::chrono::milliseconds(3'600'000));
    EXPECT_EQ(a.write(), "");
  }
  std::ifstream prom_in(prom);
  std::string first;
  std::getline(prom_in, first);
  EXPECT_EQ(first.rfind("# HELP fastcm_", 0), 0u);
  std::ifstream json_in(json);
  EXPECT_EQ(nlohmann::json::parse(json_in)["engines"][0]["name"], "s");
  // Only the two files: no temporary left beside them.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 2);
  EXPECT_THROW(metrics::MetricsFile((dir / "no" / "such" / "m.prom").string(), {{p.server.get(), "s"}},
                                    std::chrono::milliseconds(1000)),
               std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fastcm
