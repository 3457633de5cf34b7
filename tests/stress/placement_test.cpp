// Endpoint placement. An active endpoint made for a port (Engine::create_id_for_port) lives on the
// shard whose worker polls that port, so the server's answers to it are handled by the thread that
// receives them; a port the fabric lacks is refused. A passive endpoint lives on the shard whose
// worker received its REQ, unless that shard's table is full.
#include <gtest/gtest.h>

#include <poll.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>

#include "tests/stress/stress_env.h"

namespace fastcm::stress {
namespace {

using SteadyTime = std::chrono::steady_clock;

constexpr std::uint64_t kService = 0x5757'0000'0000'0A00;
constexpr std::uint32_t kPerPort = 16;

std::uint64_t forwarded(const Engine& engine) {
  EngineLevels levels;
  engine.levels(levels);
  std::uint64_t sum = 0;
  for (const ShardLevels& shard : levels.shards) sum += shard.forwarded;
  return sum;
}

// Answers the queues' events (server: REQ -> REP from QP `server_qpn`, counting up, client: REP ->
// RTU) until each of `connections` handshakes ended: established (the server's rtu_received) or
// failed (a REJ or a retry timeout on either side). Returns the failed ones; all of them as failed
// on the guard's deadline.
std::uint32_t drive(Engine& server, EventQueue& server_queue, Engine& client, EventQueue& client_queue,
                    std::uint32_t connections, Qpn& server_qpn) {
  const auto deadline = SteadyTime::now() + kGuard;
  std::uint32_t established = 0;
  std::uint32_t failed = 0;
  std::array<Event, 16> events;
  while (established + failed < connections) {
    if (SteadyTime::now() > deadline) return connections;
    bool idle = true;
    for (std::size_t i = 0, n = server.poll(server_queue, events); i < n; ++i, idle = false) {
      if (events[i].type == EventType::req_received) {
        RepParams rep;
        rep.qpn = server_qpn++;  // one remote QP per connection, or the client sees a stale one
        // invalid_state once the REQ timed out meanwhile: its rep_error or REJ ends it below.
        (void)server.send_rep(events[i].id, rep);
      } else if (events[i].type == EventType::rtu_received) {
        ++established;
      } else if (events[i].type == EventType::rep_error || events[i].type == EventType::rej_received) {
        ++failed;
      }
      server.release(events[i]);
    }
    for (std::size_t i = 0, n = client.poll(client_queue, events); i < n; ++i, idle = false) {
      if (events[i].type == EventType::rep_received) {
        (void)client.send_rtu(events[i].id, {});
      } else if (events[i].type == EventType::req_error || events[i].type == EventType::rej_received) {
        ++failed;
      }
      client.release(events[i]);
    }
    if (idle) {
      std::array<pollfd, 2> fds{pollfd{.fd = server_queue.event_fd(), .events = POLLIN, .revents = 0},
                                pollfd{.fd = client_queue.event_fd(), .events = POLLIN, .revents = 0}};
      (void)::poll(fds.data(), fds.size(), 5);
    }
  }
  return failed;
}

// MADs the client's and the server's workers passed to another shard.
struct Crossings {
  std::uint64_t client = 0;
  std::uint64_t server = 0;
};

// Connects kPerPort endpoints from every client port to the same server port, each made by
// `create(delivery, port, id)`, and returns the crossings meanwhile.
Crossings crossings(const std::function<Status(Engine&, const Delivery&, std::uint8_t, Id&)>& create) {
  StressCluster cluster(engine_config(kPorts), engine_config(kPorts));
  EXPECT_TRUE(cluster.ready());
  if (!cluster.ready()) return {};
  Engine& server = cluster.server();
  Engine& client = cluster.client();
  const ListeningQueues queues = listening_queues(cluster, kService, kPerPort * kPorts * 4);
  EXPECT_NE(queues.server, nullptr);
  if (queues.server == nullptr) return {};
  const Crossings before{.client = forwarded(client), .server = forwarded(server)};
  std::uint32_t qpn = 0x100;
  for (std::uint8_t p = 0; p < kPorts; ++p) {
    for (std::uint32_t c = 0; c < kPerPort; ++c) {
      const ReqParams req = patient_req(kService, cluster.path(p, p), qpn++);
      Id id;
      EXPECT_EQ(create(client, Delivery{.queue = queues.client}, req.primary.port, id), Status::ok);
      EXPECT_EQ(client.send_req(id, req), Status::ok);
    }
  }
  Qpn server_qpn = 0x200;
  EXPECT_EQ(drive(server, *queues.server, client, *queues.client, kPerPort * kPorts, server_qpn), 0u)
      << "handshakes failed";
  const Crossings seen{.client = forwarded(client) - before.client, .server = forwarded(server) - before.server};
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
  return seen;
}

Status create_for_port(Engine& e, const Delivery& d, std::uint8_t port, Id& id) {
  return e.create_id_for_port(d, nullptr, port, id);
}

TEST(Placement, EndpointsMadeForTheirPortGetTheirAnswersWithoutCrossingShards) {
  EXPECT_EQ(crossings(create_for_port).client, 0u);
}

// The passive side: the worker that receives a REQ makes its endpoint, so the RTU that follows
// arrives where it lives, and nothing crosses.
TEST(Placement, PassiveEndpointsLiveOnTheShardOfThePortTheirReqArrivedAt) {
  EXPECT_EQ(crossings(create_for_port).server, 0u);
}

// The same connections from endpoints spread round-robin: three in four live on another shard
// than the port their REP arrives on, and each such REP crosses (what the test above rules out).
TEST(Placement, EndpointsSpreadRoundRobinCrossForMostAnswers) {
  const Crossings seen = crossings([](Engine& e, const Delivery& d, std::uint8_t, Id& id) {
    return e.create_id(d, nullptr, id);
  });
  EXPECT_GE(seen.client, kPerPort * kPorts / 2);
}

// Every REQ arrives at one server port, whose shard holds twice its even share of the endpoints:
// past that, the shards the REQs hash to take them, and every connection is made.
TEST(Placement, ReqsBeyondTheTableOfTheirArrivalShardGoToOtherShards) {
  constexpr std::uint32_t kEndpoints = 8192;  // 4 tables of 4096, the smallest a table gets
  constexpr std::uint32_t kConnections = 6144;
  constexpr std::uint32_t kWave = 512;
  EngineConfig config = engine_config(kPorts);
  config.max_endpoints = kEndpoints;
  config.mad_buffers = 4 * kEndpoints;  // the client keeps each connection's RTU
  config.half_open_per_source = kWave;
  StressCluster cluster(config, config);
  ASSERT_TRUE(cluster.ready());
  Engine& server = cluster.server();
  Engine& client = cluster.client();
  const ListeningQueues queues = listening_queues(cluster, kService, kWave * 4);
  ASSERT_NE(queues.server, nullptr);
  Qpn qpn = 0x100;
  Qpn server_qpn = 0x10'0000;
  for (std::uint32_t made = 0; made < kConnections; made += kWave) {
    for (std::uint32_t c = 0; c < kWave; ++c) {
      Id id;
      ASSERT_EQ(client.create_id(Delivery{.queue = queues.client}, nullptr, id), Status::ok);
      ASSERT_EQ(client.send_req(id, patient_req(kService, cluster.path(0, 0), qpn++)), Status::ok);
    }
    ASSERT_EQ(drive(server, *queues.server, client, *queues.client, kWave, server_qpn), 0u)
        << "handshakes failed after " << made;
  }
  EngineLevels levels;
  server.levels(levels);
  EXPECT_EQ(levels.endpoints.now, kConnections);
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
}

// Every REQ arrives at one server port, and the server holds them all unanswered: each keeps a MAD
// buffer, and the arrival shard's share of them runs out first (a quarter of mad_buffers). The
// other shards take the rest, and every REQ reaches the application.
TEST(Placement, ReqsBeyondTheMadShareOfTheirArrivalShardGoToOtherShards) {
  constexpr std::uint32_t kReqs = 1000;  // beyond one shard's ~450 handshakes, within four's
  EngineConfig config = engine_config(kPorts);
  config.mad_buffers = 4096;  // 1024 per shard: 512 kept, refused at 1/8 short of that
  StressCluster cluster(config, config);
  ASSERT_TRUE(cluster.ready());
  Engine& server = cluster.server();
  Engine& client = cluster.client();
  const ListeningQueues queues = listening_queues(cluster, kService, 2 * kReqs);
  ASSERT_NE(queues.server, nullptr);
  for (std::uint32_t c = 0; c < kReqs; ++c) {
    Id id;
    ASSERT_EQ(client.create_id(Delivery{.queue = queues.client}, nullptr, id), Status::ok);
    ASSERT_EQ(client.send_req(id, patient_req(kService, cluster.path(0, 0), 0x100 + c)), Status::ok);
  }
  const auto deadline = SteadyTime::now() + kGuard;
  std::uint32_t received = 0;
  std::uint32_t rejected = 0;
  std::array<Event, 64> events;
  while (received + rejected < kReqs && SteadyTime::now() < deadline) {
    for (std::size_t i = 0, n = server.poll(*queues.server, events); i < n; ++i) {
      if (events[i].type == EventType::req_received) ++received;
      server.release(events[i]);
    }
    for (std::size_t i = 0, n = client.poll(*queues.client, events); i < n; ++i) {
      if (events[i].type == EventType::rej_received) ++rejected;
      client.release(events[i]);
    }
    pollfd fds[] = {{.fd = queues.server->event_fd(), .events = POLLIN, .revents = 0},
                    {.fd = queues.client->event_fd(), .events = POLLIN, .revents = 0}};
    (void)::poll(fds, 2, 5);
  }
  EXPECT_EQ(received, kReqs);
  EXPECT_EQ(rejected, 0u);
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
}

TEST(Placement, APortTheFabricLacksIsInvalid) {
  StressCluster cluster(engine_config(2), engine_config(2));
  ASSERT_TRUE(cluster.ready());
  EventQueue* queue = cluster.client().create_event_queue(4);
  ASSERT_NE(queue, nullptr);
  Id id;
  EXPECT_EQ(cluster.client().create_id_for_port(Delivery{.queue = queue}, nullptr, kPorts + 1, id),
            Status::invalid_argument);
  EXPECT_EQ(cluster.client().create_id_for_port(Delivery{.queue = queue}, nullptr, 0, id), Status::invalid_argument);
  EXPECT_EQ(cluster.client().create_id_for_port(Delivery{}, nullptr, 1, id), Status::invalid_argument);
  EXPECT_TRUE(id.empty());
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace fastcm::stress
