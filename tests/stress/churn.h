// Background churn of the storm: endpoints that are created and destroyed without ever
// connecting (every way destroy can be called from outside), and listens that appear and
// disappear on the churn service IDs while REQs for them arrive.
//
// Thread contract: each function runs on a thread of its own, against an engine of Threading::
// workers; the probes it is given are its own until their on_destroyed ran.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>

#include "fastcm/engine.h"
#include "tests/stress/probe.h"

namespace fastcm::stress {

// `rounds` rounds of 1..6 idle endpoints, each destroyed with destroy (on_destroyed counted),
// after a set_context, or with destroy_sync; every destroyed Id is checked stale at once.
void churn_ids(Engine& engine, const Delivery& delivery, ProbeArena& arena, std::uint32_t rounds,
               std::chrono::steady_clock::time_point deadline);

struct ListenChurn {
  std::uint32_t created = 0;         // listens created and destroyed: each owes one on_destroyed
  std::uint32_t listen_retries = 0;  // listen() calls answered no_resources (retried)
};

// One listen per element of `listens` (service IDs kChurnServiceBase + i % kChurnServices, on
// every port or on one), each destroyed with on_listen_destroyed once it received a REQ or a few
// milliseconds passed. listen() answering no_resources is retried for a while (its documented
// transient error); destroy() must answer ok.
ListenChurn churn_listens(Engine& engine, const Delivery& delivery, std::span<ListenProbe> listens,
                          Ledger& ledger, std::chrono::steady_clock::time_point deadline);

}  // namespace fastcm::stress
