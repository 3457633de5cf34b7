// examples/c_server against a C++ client in one process: the loopback fabric is in-process, so
// this test hosts it, runs the C server's epoll loop on a thread of its own (worker-threaded
// engine, real clock: the loop blocks in epoll_wait like a real server), and connects C++ clients
// to it from another HCA. The server's loop returns once it counted every connection.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "c_server.h"
#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/engine.h"
#include "fastcm/fastcm_interop.h"

namespace fastcm::test {
namespace {

constexpr std::uint64_t kService = 0xC5E7;
constexpr unsigned kConnections = 50;
constexpr int kIdleTimeoutMs = 20'000;  // a bound on a failure, not a pace

// The client: sends the RTU from its REP callback and counts the REPs.
struct Client {
  Engine* engine = nullptr;
  std::atomic<unsigned> reps{0};
  std::atomic<unsigned> failures{0};

  static void on_event(const Event& e, void* self_ptr) {
    auto& self = *static_cast<Client*>(self_ptr);
    if (e.type == EventType::rep_received) {
      if (self.engine->send_rtu(e.id, {}) != Status::ok) ++self.failures;
      ++self.reps;
    } else {
      ++self.failures;  // REJ, timeouts: the server should accept every REQ
    }
  }
};

TEST(CServer, CountsEveryConnectionOfACppClient) {
  const SteadyClock clock;
  loopback::LoopbackFabric fabric(loopback::LoopbackConfig::two_hcas(1), clock);

  c_server* server = nullptr;
  ASSERT_EQ(c_server_start(c_fabric(fabric.hca(0)), kService, &server), FASTCM_OK);
  fastcm_status served = FASTCM_ERR_INTERNAL;
  std::thread loop([&] { served = c_server_serve(server, kConnections, kIdleTimeoutMs); });

  Client client;
  auto engine = Engine::create(fabric.hca(1), clock, EngineConfig{.max_endpoints = 256, .mad_buffers = 1024});
  ASSERT_NE(engine, nullptr);
  client.engine = engine.get();
  const Path path = loopback::path_record(fabric.hca(1).ports()[0], fabric.hca(0).ports()[0], 14);
  for (unsigned i = 0; i < kConnections; ++i) {
    Id id;
    ASSERT_EQ(engine->create_id(Delivery{.handler = &Client::on_event, .handler_context = &client}, nullptr, id),
              Status::ok);
    ReqParams req;
    req.service_id = kService;
    req.primary = path;
    req.qpn = 0x1000 + i;
    ASSERT_EQ(engine->send_req(id, req), Status::ok);
  }
  loop.join();

  EXPECT_EQ(served, FASTCM_OK) << fastcm_strerror(served);
  EXPECT_EQ(c_server_established(server), kConnections);
  EXPECT_EQ(client.reps.load(), kConnections);  // each RTU came from a REP callback that returned
  EXPECT_EQ(client.failures.load(), 0u);
  engine.reset();
  c_server_stop(server);
}

}  // namespace
}  // namespace fastcm::test
