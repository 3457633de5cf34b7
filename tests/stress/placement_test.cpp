// Endpoint placement (Engine::create_id_for_port): an active endpoint made for a port lives on the
// shard whose worker polls that port, so the server's answers to it are handled by the thread that
// receives them; a port the fabric lacks is refused.
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

// Answers the queues' events (server: REQ -> REP, client: REP -> RTU) until each of `connections`
// handshakes ended: established (the server's rtu_received) or failed (a REJ or a retry timeout on
// either side). Returns the failed ones; all of them as failed on the guard's deadline.
std::uint32_t drive(Engine& server, EventQueue& server_queue, Engine& client, EventQueue& client_queue,
                    std::uint32_t connections) {
  const auto deadline = SteadyTime::now() + kGuard;
  std::uint32_t established = 0;
  std::uint32_t failed = 0;
  std::uint32_t reps = 0;
  std::array<Event, 16> events;
  while (established + failed < connections) {
    if (SteadyTime::now() > deadline) return connections;
    bool idle = true;
    for (std::size_t i = 0, n = server.poll(server_queue, events); i < n; ++i, idle = false) {
      if (events[i].type == EventType::req_received) {
        RepParams rep;
        rep.qpn = 0x200 + reps++;  // one remote QP per connection, or the client sees a stale one
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

// Connects kPerPort endpoints from every client port, each made by `create(delivery, port, id)`,
// and returns how many MADs the client's workers passed to another shard meanwhile.
std::uint64_t client_crossings(const std::function<Status(Engine&, const Delivery&, std::uint8_t, Id&)>& create) {
  StressCluster cluster(engine_config(kPorts), engine_config(kPorts));
  EXPECT_TRUE(cluster.ready());
  if (!cluster.ready()) return 0;
  Engine& server = cluster.server();
  Engine& client = cluster.client();
  EventQueue* server_queue = server.create_event_queue(kPerPort * kPorts * 4);
  EventQueue* client_queue = client.create_event_queue(kPerPort * kPorts * 4);
  EXPECT_NE(server_queue, nullptr);
  EXPECT_NE(client_queue, nullptr);
  ListenParams listen;
  listen.service_id = kService;
  listen.delivery = Delivery{.queue = server_queue};
  Id listen_id;
  EXPECT_EQ(server.listen(listen, listen_id), Status::ok);
  const std::uint64_t before = forwarded(client);
  std::uint32_t qpn = 0x100;
  for (std::uint8_t p = 0; p < kPorts; ++p) {
    for (std::uint32_t c = 0; c < kPerPort; ++c) {
      ReqParams req;
      req.service_id = kService;
      req.primary = cluster.path(p, p);
      req.qpn = qpn++;
      req.remote_cm_response_timeout = kPatientCmResponseTimeout;
      req.local_cm_response_timeout = kPatientCmResponseTimeout;
      req.max_cm_retries = kMaxCmRetries;
      Id id;
      EXPECT_EQ(create(client, Delivery{.queue = client_queue}, req.primary.port, id), Status::ok);
      EXPECT_EQ(client.send_req(id, req), Status::ok);
    }
  }
  EXPECT_EQ(drive(server, *server_queue, client, *client_queue, kPerPort * kPorts), 0u) << "handshakes failed";
  const std::uint64_t crossings = forwarded(client) - before;
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
  return crossings;
}

TEST(Placement, EndpointsMadeForTheirPortGetTheirAnswersWithoutCrossingShards) {
  const std::uint64_t crossings = client_crossings([](Engine& e, const Delivery& d, std::uint8_t port, Id& id) {
    return e.create_id_for_port(d, nullptr, port, id);
  });
  EXPECT_EQ(crossings, 0u);
}

// The same connections from endpoints spread round-robin: three in four live on another shard
// than the port their REP arrives on, and each such REP crosses (what the test above rules out).
TEST(Placement, EndpointsSpreadRoundRobinCrossForMostAnswers) {
  const std::uint64_t crossings = client_crossings([](Engine& e, const Delivery& d, std::uint8_t, Id& id) {
    return e.create_id(d, nullptr, id);
  });
  EXPECT_GE(crossings, kPerPort * kPorts / 2);
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
