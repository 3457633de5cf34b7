#include "tests/stress/quiescence.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace fastcm::stress {

namespace {

constexpr auto kPollStep = std::chrono::milliseconds(1);

// Idle endpoints made to count slots never connect: any event for one is a violation.
void unexpected_event(const Event& event, void* ledger) {
  static_cast<Ledger*>(ledger)->violation(std::string(name(event.type)) +
                                          " for an endpoint that never connected");
}

void count_destroyed(void* counter) {
  static_cast<std::atomic<std::uint32_t>*>(counter)->fetch_add(1, std::memory_order_release);
}

template <class Pred>
bool poll_until(Deadline deadline, Pred done) {
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollStep);
  }
  return true;
}

// Creates objects with `create(i, id)` until one fails or `limit` + 1 exist, destroys them all
// and waits for their on_destroyed; again until exactly `limit` fit or the deadline passes
// (time-wait endpoints still hold slots for a few milliseconds). The last attempt's result.
template <class Create>
Capacity fill_and_empty(Engine& engine, std::uint32_t limit, Ledger& ledger, Deadline deadline,
                        const char* what, Create create) {
  std::vector<Id> ids;
  ids.reserve(limit + 1);
  for (;;) {
    ids.clear();
    Status s = Status::ok;
    while (ids.size() <= limit) {
      Id id;
      s = create(static_cast<std::uint32_t>(ids.size()), id);
      if (s != Status::ok) break;
      ids.push_back(id);
    }
    const Capacity last{.created = static_cast<std::uint32_t>(ids.size()), .stopped_by = s};
    // On the heap: if on_destroyed never comes, the counter is leaked rather than freed under the
    // engine's feet.
    auto destroyed = std::make_unique<std::atomic<std::uint32_t>>(0);
    for (const Id id : ids) {
      if (engine.destroy(id, &count_destroyed, destroyed.get()) != Status::ok) {
        ledger.violation(std::string("destroy of one of the ") + what + " failed");
        destroyed->fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (!poll_until(deadline, [&] {
          return destroyed->load(std::memory_order_acquire) ==
                 ids.size();  // pairs: count_destroyed
        })) {
      ledger.violation(std::string("on_destroyed of ") + what + " never ran");
      static_cast<void>(destroyed.release());
      return last;
    }
    const bool full = last.created == limit && last.stopped_by == Status::no_resources;
    if (full || std::chrono::steady_clock::now() >= deadline) return last;
    std::this_thread::sleep_for(kPollStep);
  }
}

}  // namespace

bool wait_for_idle_pools(StressCluster& cluster, Deadline deadline) {
  return poll_until(deadline, [&] {
    return cluster.server().mad_buffers_in_use() == 0 &&
           cluster.client().mad_buffers_in_use() == 0 && cluster.fabric().total_pending() == 0;
  });
}

Capacity measure_capacity(Engine& engine, std::uint32_t max_endpoints, Ledger& ledger,
                          Deadline deadline) {
  const Delivery delivery{.handler = &unexpected_event, .handler_context = &ledger};
  return fill_and_empty(
      engine, max_endpoints, ledger, deadline, "idle endpoints",
      [&](std::uint32_t, Id& id) { return engine.create_id(delivery, nullptr, id); });
}

Capacity measure_listen_capacity(Engine& engine, std::uint32_t max_listens, Ledger& ledger,
                                 Deadline deadline) {
  ListenParams params;
  params.delivery = Delivery{.handler = &unexpected_event, .handler_context = &ledger};
  return fill_and_empty(engine, max_listens, ledger, deadline, "listens",
                        [&](std::uint32_t i, Id& id) {
                          params.service_id = kCapacityServiceBase + i;
                          return engine.listen(params, id);
                        });
}

PortCounters total_counters(const Engine& engine) {
  std::vector<PortCounters> ports(kPorts + 1);
  engine.counters(ports);
  PortCounters sum;
  for (const PortCounters& p : ports) sum += p;
  return sum;
}

std::string stuck_probes(ProbeArena& arena, StressCluster& cluster, std::size_t limit) {
  std::string out;
  std::size_t shown = 0;
  for (std::size_t i = 0; i < arena.taken() && shown < limit; ++i) {
    const Probe& p = arena.at(i);
    if (p.done()) continue;
    ++shown;
    ConnectionInfo info;
    std::string state = "unknown (idle endpoints are on either engine)";
    if (p.role != Role::idle) {
      Engine& engine = p.role == Role::server ? cluster.server() : cluster.client();
      const Status s = engine.connection_info(p.handle(), info);
      state = s == Status::ok ? std::string(to_string(info.state)) : std::string(to_string(s));
    }
    out += "  " + p.describe() + " engine state " + state + "\n";
  }
  return out;
}

}  // namespace fastcm::stress
