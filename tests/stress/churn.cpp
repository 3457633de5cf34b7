#include "tests/stress/churn.h"

#include <array>
#include <string>
#include <thread>

#include "tests/stress/stress_env.h"

namespace fastcm::stress {

namespace {

constexpr std::uint32_t kMaxBatch = 6;
// How long a churn listen waits for its first REQ before it is destroyed anyway.
constexpr auto kListenLife = std::chrono::milliseconds(3);
// listen() may answer no_resources while the shards have not yet passed the quiescent points that
// free old listen snapshots: it is retried, every kRetryStep, for at most kRetryFor.
constexpr auto kRetryStep = std::chrono::milliseconds(1);
constexpr auto kRetryFor = std::chrono::seconds(1);

void check(Ledger& ledger, Status got, Status want, const char* what) {
  if (got != want) {
    ledger.violation(std::string(what) + " returned " + std::string(to_string(got)) +
                     ", expected " + std::string(to_string(want)));
  }
}

}  // namespace

void churn_ids(Engine& engine, const Delivery& delivery, ProbeArena& arena, std::uint32_t rounds,
               std::chrono::steady_clock::time_point deadline) {
  std::array<Probe*, kMaxBatch> batch{};
  for (std::uint32_t round = 0; round < rounds && std::chrono::steady_clock::now() < deadline;
       ++round) {
    const std::uint32_t size = 1 + round % kMaxBatch;
    std::uint32_t made = 0;
    for (; made < size; ++made) {
      Probe* probe = arena.take(Role::idle, round, 0);
      if (probe == nullptr) break;
      Id id;
      const Status s = engine.create_id(delivery, probe, id);
      if (s != Status::ok) {
        check(*probe->ledger, s, Status::ok, "create_id");
        probe->synced.store(true, std::memory_order_release);  // no endpoint: nothing owed
        probe->ledger->complete();
        break;
      }
      probe->id.store(id.raw, std::memory_order_release);
      batch[made] = probe;
    }
    for (std::uint32_t i = 0; i < made; ++i) {
      Probe& probe = *batch[i];
      Ledger& ledger = *probe.ledger;
      switch ((round + i) % 3) {
        case 0:
          destroy_probe(engine, probe, Caller::other_thread);
          break;
        case 1:
          check(ledger, engine.set_context(probe.handle(), &probe), Status::ok, "set_context");
          destroy_probe(engine, probe, Caller::other_thread);
          break;
        default: {
          probe.destroy_claimed.store(true, std::memory_order_release);
          check(ledger, engine.destroy_sync(probe.handle()), Status::ok, "destroy_sync");
          probe.destroy_returned.store(true, std::memory_order_release);
          probe.synced.store(true, std::memory_order_release);
          ledger.complete();
          ConnectionInfo info;
          check(ledger, engine.connection_info(probe.handle(), info), Status::stale_id,
                "connection_info after destroy_sync");
          check(ledger, engine.destroy_sync(probe.handle()), Status::stale_id,
                "a second destroy_sync");
          check(ledger, engine.set_context(probe.handle(), nullptr), Status::stale_id,
                "set_context after destroy_sync");
          break;
        }
      }
    }
  }
}

ListenChurn churn_listens(Engine& engine, const Delivery& delivery, std::span<ListenProbe> listens,
                          Ledger& ledger, std::chrono::steady_clock::time_point deadline) {
  ListenChurn result;
  for (std::size_t i = 0; i < listens.size() && std::chrono::steady_clock::now() < deadline; ++i) {
    ListenProbe& probe = listens[i];
    probe.ledger = &ledger;
    probe.service_id = kChurnServiceBase + i % kChurnServices;
    ListenParams params;
    params.service_id = probe.service_id;
    params.port = static_cast<std::uint8_t>(i % (kPorts + 1));  // 0: every port
    params.delivery = delivery;
    params.context = &probe;
    Id id;
    Status s = Status::ok;
    const auto give_up = std::chrono::steady_clock::now() + kRetryFor;
    while ((s = engine.listen(params, id)) == Status::no_resources &&
           std::chrono::steady_clock::now() < give_up) {
      ++result.listen_retries;
      std::this_thread::sleep_for(kRetryStep);
    }
    if (s != Status::ok) {
      check(ledger, s, Status::ok, "listen");
      continue;
    }
    ++result.created;
    (void)ledger.wait_until(std::chrono::steady_clock::now() + kListenLife,
                            [&] { return probe.reqs.load(std::memory_order_relaxed) > 0; });
    // destroy promises ok or stale_id: anything else is a violation, retried so that the listen
    // still goes away and the storm stays meaningful.
    s = engine.destroy(id, &on_listen_destroyed, &probe);
    if (s != Status::ok) {
      check(ledger, s, Status::ok, "destroy of a listen");
      const auto stop_trying = std::chrono::steady_clock::now() + kRetryFor;
      while (s != Status::ok && s != Status::stale_id &&
             std::chrono::steady_clock::now() < stop_trying) {
        std::this_thread::sleep_for(kRetryStep);
        s = engine.destroy(id, &on_listen_destroyed, &probe);
      }
      if (s != Status::ok) --result.created;  // it owes no on_destroyed
    }
    check(ledger, engine.destroy(id, &on_listen_destroyed, &probe), Status::stale_id,
          "a second destroy of a listen");
  }
  return result;
}

}  // namespace fastcm::stress
