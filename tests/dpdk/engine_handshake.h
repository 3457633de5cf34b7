// One connection through two engines with worker threads, for the EAL-mode tests: whichever way
// EAL came up, the shards, pollers and pools must work on it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"
#include "tests/conformance/harness.h"

namespace fastcm::test {

struct HandshakeSides {
  Engine* server = nullptr;
  Engine* client = nullptr;
  std::mutex lock;  // guards established; the test waits on `changed`
  std::condition_variable changed;
  int established = 0;  // rtu_received on the server
};

inline void on_server_event(const Event& e, void* sides_ptr) {
  auto* sides = static_cast<HandshakeSides*>(sides_ptr);
  if (e.type == EventType::req_received) {
    RepParams rep;
    rep.qpn = 0x511;
    EXPECT_EQ(sides->server->send_rep(e.id, rep), Status::ok);  // inline on the shard's thread
  } else if (e.type == EventType::rtu_received) {
    const std::scoped_lock guard(sides->lock);
    ++sides->established;
    sides->changed.notify_all();
  }
}

inline void on_client_event(const Event& e, void* sides_ptr) {
  auto* sides = static_cast<HandshakeSides*>(sides_ptr);
  if (e.type == EventType::rep_received) {
    EXPECT_EQ(sides->client->send_rtu(e.id, {}), Status::ok);
  }
}

// Connects a client to a listen over two worker-threaded engines (2 shards each); fails the
// test, never hangs, when the connection is not established within a generous guard.
inline void expect_worker_handshake(EalOwner eal) {
  SteadyClock clock;
  loopback::LoopbackFabric fabric(loopback::LoopbackConfig::two_hcas(1), clock);
  const EngineConfig config{.shards = 2, .eal = eal, .max_endpoints = 64, .mad_buffers = 256};
  HandshakeSides sides;
  auto server = Engine::create(fabric.hca(0), clock, config);
  auto client = Engine::create(fabric.hca(1), clock, config);
  ASSERT_NE(server, nullptr);
  ASSERT_NE(client, nullptr);
  sides.server = server.get();
  sides.client = client.get();

  ListenParams lp;
  lp.service_id = 0x1234;
  lp.delivery = Delivery{.handler = &on_server_event, .handler_context = &sides};
  Id listen;
  ASSERT_EQ(server->listen(lp, listen), Status::ok);
  Id id;
  ASSERT_EQ(client->create_id(Delivery{.handler = &on_client_event, .handler_context = &sides}, nullptr, id),
            Status::ok);
  ReqParams req;
  req.service_id = lp.service_id;
  req.qpn = 0xC11;
  req.primary = Cluster::make_path(fabric.hca(1).ports()[0], fabric.hca(0).ports()[0]);
  ASSERT_EQ(client->send_req(id, req), Status::ok);

  {
    // The guard is the only use of wall time: a timeout fails, nothing is asserted about speed.
    std::unique_lock guard(sides.lock);
    sides.changed.wait_for(guard, std::chrono::seconds(30), [&] { return sides.established > 0; });
    EXPECT_EQ(sides.established, 1);
  }
  ConnectionInfo info;
  ASSERT_EQ(client->connection_info(id, info), Status::ok);  // a command run by the id's shard
  EXPECT_EQ(info.state, CepState::established);
  EXPECT_EQ(client->destroy_sync(id), Status::ok);
}

}  // namespace fastcm::test
