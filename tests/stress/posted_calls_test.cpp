// Posted calls (EngineConfig::posted_calls, fastcm/engine.h): from an application thread of an
// engine with worker threads, set_context, establish and the sends return once queued; what the
// shard refuses arrives as a call_failed event, what the calling thread can check is returned, and
// the calls one thread posts run in its order, before a destroy it calls afterwards.
#include <gtest/gtest.h>

#include <poll.h>

#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <variant>
#include <vector>

#include "tests/stress/stress_env.h"

namespace fastcm::stress {
namespace {

using SteadyTime = std::chrono::steady_clock;

constexpr std::uint64_t kService = 0x5757'0000'0000'0900;

// The next event of `queue` (its MAD released: these tests read only the event's own fields and
// copy private data out), or nullopt when none came before `deadline`.
struct Seen {
  Event event;
  std::vector<std::uint8_t> private_data;
};
std::optional<Seen> next_event(Engine& engine, EventQueue& queue, SteadyTime::time_point deadline) {
  std::array<Event, 1> one;
  while (SteadyTime::now() < deadline) {
    if (engine.poll(queue, one) == 1) {
      Seen seen{one[0], std::vector<std::uint8_t>(one[0].private_data.begin(), one[0].private_data.end())};
      seen.event.private_data = {};
      seen.event.mad = nullptr;
      engine.release(one[0]);
      return seen;
    }
    pollfd fd{.fd = queue.event_fd(), .events = POLLIN, .revents = 0};
    (void)::poll(&fd, 1, 5);
  }
  return std::nullopt;
}

// Nothing more arrives on `queue` within a short look (the events a test expects came already).
bool stays_empty(Engine& engine, EventQueue& queue) {
  return !next_event(engine, queue, SteadyTime::now() + std::chrono::milliseconds(100)).has_value();
}

EngineConfig posting(std::uint32_t shards, std::uint32_t posted_calls) {
  EngineConfig config = engine_config(shards);
  config.posted_calls = posted_calls;
  return config;
}

void expect_call_failed(const std::optional<Seen>& seen, Id id, void* context, ApiCall call, Status status) {
  ASSERT_TRUE(seen.has_value()) << "no call_failed event for " << to_string(call);
  EXPECT_EQ(seen->event.type, EventType::call_failed);
  EXPECT_EQ(seen->event.id, id);
  EXPECT_EQ(seen->event.context, context);
  const auto* failed = std::get_if<CallFailed>(&seen->event.params);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->call, call);
  EXPECT_EQ(failed->status, status);
}

// An idle endpoint of `engine` (with `context`) delivering to a new queue of `capacity` events;
// queue null when either could not be made.
struct QueuedEndpoint {
  EventQueue* queue = nullptr;
  Id id;
};
QueuedEndpoint queued_endpoint(Engine& engine, std::uint32_t capacity, void* context = nullptr) {
  QueuedEndpoint made;
  made.queue = engine.create_event_queue(capacity);
  if (made.queue != nullptr && engine.create_id(Delivery{.queue = made.queue}, context, made.id) != Status::ok) {
    made.queue = nullptr;
  }
  return made;
}

TEST(PostedCalls, ReturnOkAndReportTheShardsRefusalAsAnEvent) {
  const auto deadline = SteadyTime::now() + kGuard;
  StressCluster cluster(engine_config(1), posting(2, 16));
  ASSERT_TRUE(cluster.ready());
  Engine& engine = cluster.client();
  int context = 0;
  const auto [queue, id] = queued_endpoint(engine, 64, &context);
  ASSERT_NE(queue, nullptr);

  // An idle endpoint can neither send an RTU nor be established: the shard says so afterwards.
  EXPECT_EQ(engine.send_rtu(id, {}), Status::ok);
  expect_call_failed(next_event(engine, *queue, deadline), id, &context, ApiCall::send_rtu, Status::invalid_state);
  EXPECT_EQ(engine.establish(id), Status::ok);
  expect_call_failed(next_event(engine, *queue, deadline), id, &context, ApiCall::establish, Status::invalid_state);

  // A posted set_context applies to the events after it, in the order the calls were posted.
  int other = 0;
  EXPECT_EQ(engine.set_context(id, &other), Status::ok);
  EXPECT_EQ(engine.send_drep(id, {}), Status::ok);
  expect_call_failed(next_event(engine, *queue, deadline), id, &other, ApiCall::send_drep, Status::invalid_state);

  // What the calling thread can check is returned, and nothing is queued.
  const std::vector<std::uint8_t> too_long(kMaxRtuPrivateData + 1, 0xAB);
  EXPECT_EQ(engine.send_rtu(id, too_long), Status::invalid_argument);
  RejParams rej;
  const std::vector<std::uint8_t> long_ari(kMaxAdditionalInfo + 1, 1);
  rej.ari = long_ari;
  EXPECT_EQ(engine.send_rej(id, rej), Status::invalid_argument);
  EXPECT_TRUE(stays_empty(engine, *queue));

  ASSERT_EQ(engine.destroy_sync(id), Status::ok);
  EXPECT_EQ(engine.send_rtu(id, {}), Status::stale_id);
  EXPECT_EQ(engine.set_context(id, nullptr), Status::stale_id);
  EXPECT_TRUE(stays_empty(engine, *queue));
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
}

TEST(PostedCalls, ARejectThenDestroyFromOneThreadSendsThatReject) {
  const auto deadline = SteadyTime::now() + kGuard;
  StressCluster cluster(posting(2, 16), engine_config(1));
  ASSERT_TRUE(cluster.ready());
  Engine& server = cluster.server();
  Engine& client = cluster.client();
  const ListeningQueues queues = listening_queues(cluster, kService, 64);
  ASSERT_NE(queues.server, nullptr);

  constexpr std::uint32_t kConnections = 8;
  for (std::uint32_t c = 0; c < kConnections; ++c) {
    Id active;
    ASSERT_EQ(client.create_id(Delivery{.queue = queues.client}, nullptr, active), Status::ok);
    ASSERT_EQ(client.send_req(active, patient_req(kService, cluster.path(c % kPorts, c % kPorts), 0x100 + c)),
              Status::ok);

    const std::optional<Seen> req_seen = next_event(server, *queues.server, deadline);
    ASSERT_TRUE(req_seen.has_value());
    ASSERT_EQ(req_seen->event.type, EventType::req_received);
    // The REJ is posted and the destroy detaches at once, yet the shard runs the REJ first: the
    // peer gets its reason and private data, not the destroy's own REJ.
    const std::array<std::uint8_t, 4> why{0xC0, 0xFF, 0xEE, static_cast<std::uint8_t>(c)};
    RejParams rej;
    rej.reason = static_cast<std::uint16_t>(RejReason::consumer_reject);
    rej.private_data = why;
    {
      // Every other connection inside a call batch, which holds the REJ until the destroy.
      std::optional<CallBatch> batch;
      if (c % 2 == 1) batch.emplace(server);
      ASSERT_EQ(server.send_rej(req_seen->event.id, rej), Status::ok);
      ASSERT_EQ(server.destroy(req_seen->event.id), Status::ok);
    }

    const std::optional<Seen> rej_seen = next_event(client, *queues.client, deadline);
    ASSERT_TRUE(rej_seen.has_value());
    ASSERT_EQ(rej_seen->event.type, EventType::rej_received);
    EXPECT_EQ(std::get<RejReceived>(rej_seen->event.params).reason,
              static_cast<std::uint16_t>(RejReason::consumer_reject));
    ASSERT_GE(rej_seen->private_data.size(), why.size());
    EXPECT_EQ(std::memcmp(rej_seen->private_data.data(), why.data(), why.size()), 0) << "connection " << c;
    ASSERT_EQ(client.destroy_sync(active), Status::ok);
  }
  // The destroyed endpoints report nothing, their REJs succeeded anyway.
  EXPECT_TRUE(stays_empty(server, *queues.server));
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
}

TEST(PostedCalls, WithEveryRecordQueuedACallWaitsAndReportsTheSameWay) {
  const auto deadline = SteadyTime::now() + kGuard;
  StressCluster cluster(engine_config(1), posting(1, 1));
  ASSERT_TRUE(cluster.ready());
  Engine& engine = cluster.client();
  constexpr std::uint32_t kCalls = 500;
  const auto [queue, id] = queued_endpoint(engine, kCalls);
  ASSERT_NE(queue, nullptr);
  // One record: the calls find it free, or queued and wait for the shard on their own stack.
  for (std::uint32_t i = 0; i < kCalls; ++i) ASSERT_EQ(engine.send_dreq(id, {}), Status::ok);
  for (std::uint32_t i = 0; i < kCalls; ++i) {
    expect_call_failed(next_event(engine, *queue, deadline), id, nullptr, ApiCall::send_dreq, Status::invalid_state);
    if (HasFatalFailure()) return;
  }
  EXPECT_TRUE(stays_empty(engine, *queue));
  ASSERT_EQ(engine.destroy_sync(id), Status::ok);
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
}

// Inside a call batch (Engine::begin_call_batch) the calls are held and reach the shard together,
// and still run in the thread's order: each send_dreq's call_failed carries the context the
// set_context before it gave. Past 64 held calls the batch sends what it holds; with 8 records a
// call also finds none free and waits, sending the held ones first. (A destroy inside a batch:
// ARejectThenDestroyFromOneThreadSendsThatReject.)
TEST(PostedCalls, ACallBatchKeepsTheThreadsOrder) {
  for (const std::uint32_t records : {256u, 8u}) {
    SCOPED_TRACE(records);
    const auto deadline = SteadyTime::now() + kGuard;
    StressCluster cluster(engine_config(1), posting(2, records));
    ASSERT_TRUE(cluster.ready());
    Engine& engine = cluster.client();
    constexpr std::uint32_t kCalls = 100;
    const auto [queue, id] = queued_endpoint(engine, kCalls);
    ASSERT_NE(queue, nullptr);
    std::array<int, kCalls> contexts{};
    {
      const CallBatch batch(engine);
      for (std::uint32_t i = 0; i < kCalls; ++i) {
        ASSERT_EQ(engine.set_context(id, &contexts[i]), Status::ok);
        ASSERT_EQ(engine.send_dreq(id, {}), Status::ok);
      }
    }
    for (std::uint32_t i = 0; i < kCalls; ++i) {
      expect_call_failed(next_event(engine, *queue, deadline), id, &contexts[i], ApiCall::send_dreq,
                         Status::invalid_state);
      if (HasFatalFailure()) return;
    }
    EXPECT_TRUE(stays_empty(engine, *queue));
    ASSERT_EQ(engine.destroy_sync(id), Status::ok);
    EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
  }
}

TEST(PostedCalls, CreateIdGivesEachEndpointTheCallersDeliveryAndContext) {
  const auto deadline = SteadyTime::now() + kGuard;
  StressCluster cluster(engine_config(1), posting(4, 64));
  ASSERT_TRUE(cluster.ready());
  Engine& engine = cluster.client();
  // More than the shards keep spare: some come from the spares, the rest from the shards.
  constexpr std::uint32_t kIds = 600;
  std::array<EventQueue*, 3> queues{};
  for (EventQueue*& q : queues) {
    q = engine.create_event_queue(kIds);
    ASSERT_NE(q, nullptr);
  }
  std::vector<Id> ids(kIds);
  std::vector<int> contexts(kIds);
  for (std::uint32_t i = 0; i < kIds; ++i) {
    ASSERT_EQ(engine.create_id(Delivery{.queue = queues[i % queues.size()]}, &contexts[i], ids[i]), Status::ok);
    ASSERT_EQ(engine.send_rtu(ids[i], {}), Status::ok);
  }
  // Shards fill a queue side by side: each endpoint's event comes once, on its own queue, in any
  // order with the others'.
  std::map<std::uint64_t, std::uint32_t> index_of;
  for (std::uint32_t i = 0; i < kIds; ++i) index_of[ids[i].raw] = i;
  std::vector<bool> seen(kIds, false);
  for (std::size_t q = 0; q < queues.size(); ++q) {
    for (std::uint32_t n = 0; n < kIds / queues.size(); ++n) {
      const std::optional<Seen> event = next_event(engine, *queues[q], deadline);
      ASSERT_TRUE(event.has_value()) << "queue " << q << ": " << n << " events";
      const auto it = index_of.find(event->event.id.raw);
      ASSERT_NE(it, index_of.end());
      const std::uint32_t i = it->second;
      EXPECT_EQ(i % queues.size(), q);
      EXPECT_FALSE(seen[i]);
      seen[i] = true;
      expect_call_failed(event, ids[i], &contexts[i], ApiCall::send_rtu, Status::invalid_state);
    }
  }
  for (EventQueue* q : queues) EXPECT_TRUE(stays_empty(engine, *q));
  for (const Id id : ids) ASSERT_EQ(engine.destroy_sync(id), Status::ok);
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
}

TEST(PostedCalls, SpareEndpointsLeaveEveryEndpointToCreateId) {
  EngineConfig config = posting(2, 64);
  config.max_endpoints = 300;  // about two shards' spares, twice
  StressCluster cluster(engine_config(1), config);
  ASSERT_TRUE(cluster.ready());
  Engine& engine = cluster.client();
  const Delivery delivery{.handler = [](const Event&, void*) {}};
  for (int round = 0; round < 3; ++round) {
    std::vector<Id> ids;
    Id id;
    Status status = Status::ok;
    while (ids.size() <= config.max_endpoints && (status = engine.create_id(delivery, nullptr, id)) == Status::ok) {
      ids.push_back(id);
    }
    EXPECT_EQ(ids.size(), config.max_endpoints) << "round " << round;
    EXPECT_EQ(status, Status::no_resources);
    EngineLevels levels;
    engine.levels(levels);
    EXPECT_EQ(levels.endpoints.now, config.max_endpoints);
    for (const Id created : ids) ASSERT_EQ(engine.destroy_sync(created), Status::ok);
  }
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace fastcm::stress
