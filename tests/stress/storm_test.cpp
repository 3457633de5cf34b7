// The storm (issue 4): four client ports storming REQs at one listen of a sharded server while
// other threads create and destroy idle endpoints, listens appear and disappear, and endpoints are
// destroyed inside their callbacks and from other threads during them; a few percent of all CM
// MADs are lost, duplicated or reordered, so retries and timeouts happen. Both engines run real
// threads on the steady clock.
//
// Checked: every invariant of probe.h on every endpoint and listen; every client connection that
// was not abandoned ended established, rejected or timed out; every endpoint and listen got
// exactly one on_destroyed; afterwards both engines give back every pooled MAD and every endpoint
// slot (max_endpoints can be created again), and the counters agree with what the callbacks saw.
// Every wait has a guard deadline that fails the test.
#include <gtest/gtest.h>

#include <iostream>
#include <ostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/stress/churn.h"
#include "tests/stress/client_side.h"
#include "tests/stress/probe.h"
#include "tests/stress/quiescence.h"
#include "tests/stress/server_side.h"
#include "tests/stress/storm_plan.h"
#include "tests/stress/stress_env.h"

namespace fastcm::stress {
namespace {

struct StormShape {
  std::uint32_t server_shards;
  bool polled;  // the storm's listen delivers through an EventQueue drained by a polling thread
  // Connections in flight per client thread. The polling thread answers each REQ with shard
  // commands it waits for, so it serves fewer in time than callbacks do.
  std::uint32_t window;
  // The server posts the polling thread's calls (EngineConfig::posted_calls) instead: refusals
  // come back as call_failed events.
  bool posted = false;
};

void PrintTo(const StormShape& shape, std::ostream* out) {
  *out << shape.server_shards << " server shards, " << (shape.polled ? "poll" : "callback")
       << " delivery" << (shape.posted ? " (posted calls), " : ", ") << shape.window << " in flight per client thread";
}

std::string shape_name(const ::testing::TestParamInfo<StormShape>& info) {
  return std::to_string(info.param.server_shards) + "Shards" +
         (info.param.polled ? "Polled" : "Callbacks") + (info.param.posted ? "Posted" : "");
}

constexpr std::uint32_t kClientShards = 2;
constexpr std::uint32_t kClientThreads = 4;

// A few percent of every CM MAD lost, duplicated or held back past later ones; on one port pair
// (client port 4 to server port 4, a sixteenth of the connections) most REQs and REPs are lost,
// so handshakes also run out of retries. Disconnects there keep the common rate: an established
// side whose peer's DREQs all got lost stays established (the CM cannot tell a silent peer).
constexpr std::uint16_t kReqAttr = 0x0010;
constexpr std::uint16_t kRepAttr = 0x0013;
constexpr loopback::PortRef kLossyClientPort{1, kPorts - 1};
constexpr loopback::PortRef kLossyServerPort{0, kPorts - 1};
const std::vector<loopback::FaultRule> kStormFaults{
    {.loss_pct = 2, .dup_pct = 2, .reorder_pct = 2, .reorder_window_ns = 1'000'000},
    {.from = kLossyClientPort, .to = kLossyServerPort, .attr_id = kReqAttr, .loss_pct = 60},
    {.from = kLossyServerPort, .to = kLossyClientPort, .attr_id = kRepAttr, .loss_pct = 60},
};

class Storm : public ::testing::TestWithParam<StormShape> {};

TEST_P(Storm, EveryHandshakeEndsAndEverythingIsReturned) {
  const StormShape shape = GetParam();
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  const std::uint32_t per_thread = scaled(2500);
  const std::uint32_t id_rounds = scaled(1000);
  const std::uint32_t listen_cycles = scaled(300);
  const std::uint32_t conns = kClientThreads * per_thread;

  // Declared before the cluster: an engine's destructor may still run deferred on_destroyed calls.
  Ledger ledger;
  // Server endpoints: one per REQ that reached a listen, which a lost REJ can make a few per
  // connection (the retried REQ finds the old endpoint gone).
  ProbeArena arena(ledger, std::size_t{conns} * (kMaxCmRetries + 2) + 2 * id_rounds * 6);
  const auto churned = std::make_unique<ListenProbe[]>(listen_cycles);
  ListenProbe main_listen;
  main_listen.ledger = &ledger;
  main_listen.service_id = kMainService;

  EngineConfig server_config = engine_config(shape.server_shards);
  if (shape.posted) server_config.posted_calls = 256;  // few: the full pool's waiting path runs too
  StressCluster cluster(server_config, engine_config(kClientShards), kStormFaults);
  ASSERT_TRUE(cluster.ready()) << "Engine::create failed";
  ServerSide server(cluster.server(), arena, ledger);
  ClientSide client(cluster, arena, ledger);

  ListenParams listen;
  listen.service_id = kMainService;
  listen.delivery = server.callbacks();
  listen.context = &main_listen;
  if (shape.polled) {
    EventQueue* queue = cluster.server().create_event_queue(1u << 16);
    ASSERT_NE(queue, nullptr);
    listen.delivery = Delivery{.queue = queue};
    server.start_polling(*queue);
  }
  Id main_listen_id;
  ASSERT_EQ(cluster.server().listen(listen, main_listen_id), Status::ok);

  ListenChurn listen_churn_result;
  std::thread listen_churn([&] {
    listen_churn_result = churn_listens(cluster.server(), server.callbacks(),
                                        {churned.get(), listen_cycles}, ledger, deadline);
  });
  std::thread server_ids(
      [&] { churn_ids(cluster.server(), server.callbacks(), arena, id_rounds, deadline); });
  std::thread client_ids([&] {
    churn_ids(cluster.client(),
              Delivery{.handler =
                           [](const Event& e, void* l) {
                             static_cast<Ledger*>(l)->violation(std::string(name(e.type)) +
                                                                " for an idle client endpoint");
                           },
                       .handler_context = &ledger},
              arena, id_rounds, deadline);
  });
  const bool drivers_done = client.run(kClientThreads, per_thread, shape.window, deadline);
  listen_churn.join();
  server_ids.join();
  client_ids.join();
  EXPECT_TRUE(drivers_done) << "the client threads did not finish their connections in time";
  const std::uint32_t listens_made = listen_churn_result.created;

  // Quiet: every endpoint's probe completed, and then the pools and the fabric drained without a
  // new endpoint appearing meanwhile (a late retransmitted REQ makes one).
  const auto all_completed = [&] { return ledger.completed() >= arena.taken(); };
  bool quiet = false;
  while (!quiet && ledger.wait_until(deadline, all_completed)) {
    const std::size_t taken = arena.taken();
    quiet = wait_for_idle_pools(cluster, deadline) && arena.taken() == taken && all_completed();
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  ASSERT_TRUE(quiet) << "not quiet by the guard deadline: " << ledger.completed() << " of "
                     << arena.taken() << " endpoints done; pooled MADs server "
                     << cluster.server().mad_buffers_in_use() << " client "
                     << cluster.client().mad_buffers_in_use() << "; fabric pending "
                     << cluster.fabric().total_pending() << "\nnot done:\n"
                     << stuck_probes(arena, cluster, 20) << "violations:\n"
                     << ledger.violation_report();

  // Every churned listen's on_destroyed, with no further listen change to trigger it (the storm's
  // own listen is still there). Bounded by the shards' grace periods, far below this wait.
  const auto listens_done = [&] {
    for (std::uint32_t i = 0; i < listens_made; ++i) {
      if (churned[i].destroyed_runs.load(std::memory_order_acquire) == 0) return false;
    }
    return true;
  };
  EXPECT_TRUE(ledger.wait_until(
      std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(5)), listens_done))
      << "a churned listen's on_destroyed never ran while no other listen changed";

  // The storm's listen goes last; its on_destroyed must come without any further listen change.
  ASSERT_EQ(cluster.server().destroy(main_listen_id, &on_listen_destroyed, &main_listen),
            Status::ok);
  EXPECT_TRUE(ledger.wait_until(
      std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(5)),
      [&] { return main_listen.destroyed_runs.load() == 1; }))
      << "the last listen's on_destroyed never ran";
  server.stop();
  client.stop_reaper();
  EXPECT_TRUE(wait_for_idle_pools(cluster, deadline));

  // Per probe: every connection the client did not abandon ended one of the three ways.
  std::size_t unfinished = 0;
  for (std::size_t i = 0; i < arena.taken(); ++i) {
    const Probe& p = arena.at(i);
    const Outcome o = p.outcome_now();
    if (p.role == Role::client && (p.plan == complete || p.plan == complete_inline) &&
        o != Outcome::established && o != Outcome::rejected && o != Outcome::timed_out) {
      if (++unfinished <= 10)
        ADD_FAILURE() << "a connection ended " << name(o) << ": " << p.describe();
    }
  }
  EXPECT_EQ(unfinished, 0u);

  // Counters: every event the callbacks saw came from a MAD the engine counted.
  const PortCounters server_counts = total_counters(cluster.server());
  const PortCounters client_counts = total_counters(cluster.client());
  const ClientTally& tally = client.tally();
  EXPECT_GE(server_counts.of(CmMessageKind::req).received, server.reqs());
  EXPECT_GE(client_counts.of(CmMessageKind::req).sent, tally.reqs_sent.load());
  EXPECT_GE(client_counts.of(CmMessageKind::rep).received, tally.established.load());
  for (const PortCounters* counts : {&server_counts, &client_counts}) {
    EXPECT_EQ(counts->dropped(DropReason::malformed), 0u);
    EXPECT_EQ(counts->dropped(DropReason::queue_full), 0u);
  }
  EXPECT_GT(tally.established.load(), 0u)
      << "no connection got established: the storm tested nothing";

  // Every endpoint and listen slot is back: max_endpoints idle endpoints and max_listens listens
  // fit again, and not one more.
  const EngineConfig sizes = engine_config(1);
  for (Engine* engine : {&cluster.server(), &cluster.client()}) {
    const Capacity endpoints = measure_capacity(*engine, sizes.max_endpoints, ledger, deadline);
    EXPECT_EQ(endpoints.created, sizes.max_endpoints);
    EXPECT_EQ(endpoints.stopped_by, Status::no_resources);
  }
  const Capacity listens =
      measure_listen_capacity(cluster.server(), sizes.max_listens, ledger, deadline);
  EXPECT_EQ(listens.created, sizes.max_listens);
  EXPECT_EQ(listens.stopped_by, Status::no_resources);
  EXPECT_TRUE(wait_for_idle_pools(cluster, deadline));

  EXPECT_EQ(ledger.violation_count(), 0u) << ledger.violation_report();
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)))
      << "an engine's destructor did not return";
  std::cout << "[ storm    ] " << conns << " connections: " << tally.established.load()
            << " established, " << tally.rejected.load() << " rejected, " << tally.timed_out.load()
            << " timed out; server REQ callbacks " << server.reqs()
            << "; destroyed during a callback: " << server.destroyed_during_callback()
            << " server, " << tally.destroyed_during_callback.load() << " client; " << listens_made
            << " listens churned (" << listen_churn_result.listen_retries
            << " listen calls retried on no_resources); " << arena.taken()
            << " endpoints probed; REQ retries " << client_counts.of(CmMessageKind::req).retried
            << ", duplicates seen by the server " << server_counts.of(CmMessageKind::req).duplicate
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(Shapes, Storm,
                         ::testing::Values(StormShape{4, false, 24}, StormShape{2, false, 24},
                                           StormShape{4, true, 6}, StormShape{4, true, 24, true}),
                         shape_name);

}  // namespace
}  // namespace fastcm::stress
