// Focused scenarios for what the storm hits only by chance, each on engines of Threading::workers
// and each deterministic in what it checks:
// - destroy from another thread while the endpoint's callback is held inside the engine;
// - a listen's on_destroyed runs while the shards poll without ever sleeping, also when no later
//   listen change follows;
// - destroy of a listen succeeds while a callback holds a shard (no quiescent point meanwhile).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/stress/probe.h"
#include "tests/stress/quiescence.h"
#include "tests/stress/server_side.h"
#include "tests/stress/storm_plan.h"
#include "tests/stress/stress_env.h"

namespace fastcm::stress {
namespace {

using Clock = std::chrono::steady_clock;

// A client endpoint whose rep_received callback announces itself and then holds its shard until
// the test thread says destroy returned (bounded: a missing release is a violation, not a hang).
struct HeldCallback {
  Engine* engine = nullptr;
  std::atomic<bool> entered{false};  // release by the callback, acquire by the test thread
  std::atomic<Status> rtu_status{Status::ok};
  std::atomic<bool> finished{false};

  static void on_event(const Event& event, void* self_ptr) {
    auto& self = *static_cast<HeldCallback*>(self_ptr);
    auto& probe = *static_cast<Probe*>(event.context);
    const CallbackScope scope(probe, event);
    if (event.type != EventType::rep_received) return;
    self.entered.store(true, std::memory_order_release);
    const auto until = Clock::now() + kGuard;
    while (!probe.destroy_returned.load(std::memory_order_acquire)) {  // pairs: the test thread
      if (Clock::now() >= until) {
        probe.ledger->violation("the held callback was never released: " + probe.describe());
        break;
      }
      std::this_thread::yield();
    }
    // Destroy returned while this callback ran: calls on the endpoint fail from here on.
    self.rtu_status.store(self.engine->send_rtu(event.id, {}), std::memory_order_relaxed);
    self.finished.store(true, std::memory_order_release);
  }
};

TEST(DestroyRace, FromAnotherThreadWhileTheCallbackRuns) {
  const auto deadline = Clock::now() + kGuard;
  Ledger ledger;
  const std::uint32_t rounds = scaled(200);
  ProbeArena arena(ledger, std::size_t{rounds} * 4);
  ListenProbe listen_probe;
  listen_probe.ledger = &ledger;
  listen_probe.service_id = kMainService;
  StressCluster cluster(engine_config(2), engine_config(2));
  ASSERT_TRUE(cluster.ready());
  ServerSide server(cluster.server(), arena, ledger);
  ListenParams listen;
  listen.service_id = kMainService;
  listen.delivery = server.callbacks();
  listen.context = &listen_probe;
  Id listen_id;
  ASSERT_EQ(cluster.server().listen(listen, listen_id), Status::ok);

  std::uint32_t conn = 0;
  for (std::uint32_t round = 0; round < rounds; ++round, ++conn) {
    while (service_of(conn) != kMainService || server_plan(conn) != accept) ++conn;  // a plain REP
    HeldCallback held;
    held.engine = &cluster.client();
    Probe& probe = *arena.take(Role::client, conn, complete);
    Id id;
    ASSERT_EQ(
        cluster.client().create_id(
            Delivery{.handler = &HeldCallback::on_event, .handler_context = &held}, &probe, id),
        Status::ok);
    probe.id.store(id.raw, std::memory_order_release);
    const Tag tag = make_tag(kReqMagic, conn, client_qpn(conn));
    ReqParams req =
        patient_req(kMainService, cluster.path(client_port_of(conn), server_port_of(conn)), client_qpn(conn));
    req.private_data = tag;
    ASSERT_EQ(cluster.client().send_req(id, req), Status::ok);

    const auto handshake_failed = [&] {
      return probe.count(EventType::req_error) + probe.count(EventType::rej_received) > 0;
    };
    const bool ended = ledger.wait_until(deadline, [&] {
      return held.entered.load(std::memory_order_acquire) || handshake_failed();
    });
    if (!ended || handshake_failed()) {
      // The engines' threads stop first: they may still call into `held` and `server`.
      EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)));
      FAIL() << "round " << round << ": "
             << (ended ? "the handshake failed: " : "neither a REP nor a failure: ") << probe.describe();
    }
    probe.destroy_claimed.store(true, std::memory_order_release);
    ASSERT_EQ(cluster.client().destroy(id, &on_probe_destroyed, &probe), Status::ok);
    // The callback is still held: on_destroyed cannot have run.
    EXPECT_EQ(probe.destroyed_runs.load(std::memory_order_acquire), 0u) << "round " << round;
    probe.destroy_thread.store(thread_token(), std::memory_order_relaxed);
    probe.destroy_returned.store(true, std::memory_order_release);  // releases the callback
    finish_destroy(cluster.client(), probe, Caller::other_thread);  // returns after the callback
    EXPECT_TRUE(held.finished.load(std::memory_order_acquire))
        << "the fence ran before the held callback ended";
    ASSERT_TRUE(ledger.wait_until(deadline, [&] { return probe.done(); }))
        << "round " << round << ": no on_destroyed";
    EXPECT_EQ(held.rtu_status.load(), Status::stale_id) << "round " << round;
  }
  // The server side learns of each abandoned connection (REJ) and destroys its endpoint.
  EXPECT_TRUE(ledger.wait_until(deadline, [&] { return ledger.completed() >= arena.taken(); }))
      << ledger.completed() << " of " << arena.taken() << " endpoints done\n"
      << stuck_probes(arena, cluster, 10);
  ASSERT_EQ(cluster.server().destroy(listen_id), Status::ok);
  server.stop();
  EXPECT_TRUE(wait_for_idle_pools(cluster, deadline));
  EXPECT_EQ(ledger.violation_count(), 0u) << ledger.violation_report();
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)))
      << "an engine's destructor did not return";
}

// Shards that never sleep stay online and report a quiescent point after every batch (a busy
// engine looks the same). A listen's on_destroyed must come once they have passed one, even when
// no other listen changes afterwards.
TEST(ListenLifetime, LastListenOnDestroyedRunsWhileShardsPoll) {
  EngineConfig polling = engine_config(2);
  polling.idle_spins = ~0u;
  StressCluster cluster(polling, engine_config(1));
  ASSERT_TRUE(cluster.ready());
  Ledger ledger;
  ListenProbe probe;
  probe.ledger = &ledger;
  probe.service_id = kMainService;
  ListenParams params;
  params.service_id = kMainService;
  params.delivery = Delivery{.handler = [](const Event&, void*) {}, .handler_context = nullptr};
  Id id;
  ASSERT_EQ(cluster.server().listen(params, id), Status::ok);
  ASSERT_EQ(cluster.server().destroy(id, &on_listen_destroyed, &probe), Status::ok);
  EXPECT_TRUE(ledger.wait_until(Clock::now() + std::chrono::seconds(5), [&] {
    return probe.destroyed_runs.load(std::memory_order_acquire) == 1;
  })) << "on_destroyed of the listen did not run within 5 s";
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)))
      << "an engine's destructor did not return";
  EXPECT_EQ(probe.destroyed_runs.load(), 1u)
      << "on_destroyed must run exactly once, by engine teardown at the latest";
}

// A callback that holds its shard (the application is slow) keeps that shard from reporting a
// quiescent point, so retired listen snapshots pile up. listen() may then answer no_resources
// (its documented error), but destroy() of a live listen must still succeed: engine.h gives it
// no error but stale_id, and the application has no other way to remove the listen.
TEST(ListenLifetime, DestroyOfAListenSucceedsWhileACallbackHoldsAShard) {
  StressCluster cluster(engine_config(2), engine_config(1));
  ASSERT_TRUE(cluster.ready());
  struct Hold {
    std::atomic<bool> entered{false};  // release by the callback, acquire by the test thread
    std::atomic<bool> release{false};  // release by the test thread, acquire by the callback
  } hold;
  ListenParams held;
  held.service_id = kMainService;
  held.delivery =
      Delivery{.handler =
                   [](const Event&, void* h) {
                     auto& self = *static_cast<Hold*>(h);
                     self.entered.store(true, std::memory_order_release);
                     const auto until = Clock::now() + kGuard;
                     while (!self.release.load(std::memory_order_acquire) && Clock::now() < until) {
                       std::this_thread::yield();
                     }
                   },
               .handler_context = &hold};
  Id held_listen;
  ASSERT_EQ(cluster.server().listen(held, held_listen), Status::ok);
  Id client_id;
  ASSERT_EQ(cluster.client().create_id(
                Delivery{.handler = [](const Event&, void*) {}, .handler_context = nullptr},
                nullptr, client_id),
            Status::ok);
  ReqParams req;
  req.service_id = kMainService;
  req.primary = cluster.path(0, 0);
  req.qpn = client_qpn(0);
  req.remote_cm_response_timeout = kCmResponseTimeout;
  req.local_cm_response_timeout = kCmResponseTimeout;
  req.max_cm_retries = kMaxCmRetries;
  ASSERT_EQ(cluster.client().send_req(client_id, req), Status::ok);
  Ledger ledger;
  ASSERT_TRUE(ledger.wait_until(Clock::now() + kGuard,
                                [&] { return hold.entered.load(std::memory_order_acquire); }));

  // While the shard is held: a few dozen listens, then their removal.
  constexpr std::uint32_t kListens = 40;
  const auto probes = std::make_unique<ListenProbe[]>(kListens);
  std::vector<Id> ids;
  for (std::uint32_t i = 0; i < kListens; ++i) {
    probes[i].ledger = &ledger;
    ListenParams params;
    params.service_id = kChurnServiceBase + i;
    params.delivery = Delivery{.handler = [](const Event&, void*) {}, .handler_context = nullptr};
    Id id;
    if (cluster.server().listen(params, id) != Status::ok) break;  // allowed: no_resources
    ids.push_back(id);
  }
  std::vector<Status> failed;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const Status s = cluster.server().destroy(ids[i], &on_listen_destroyed, &probes[i]);
    if (s != Status::ok) failed.push_back(s);
  }
  hold.release.store(true, std::memory_order_release);
  EXPECT_TRUE(failed.empty()) << failed.size() << " of " << ids.size()
                              << " destroys of live listens failed, the first with "
                              << to_string(failed.empty() ? Status::ok : failed.front());
  EXPECT_TRUE(cluster.stop_engines(std::chrono::seconds(10)))
      << "an engine's destructor did not return";
}

}  // namespace
}  // namespace fastcm::stress
