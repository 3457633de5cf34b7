// An out-of-tree C++ program on the installed fastcm: a connection between two engines on the
// loopback fabric, driven on this thread. Prints "consumer: established" and exits 0 on success.
#include <fastcm/engine.h>
#include <fastcm/loopback/loopback_fabric.h>
#include <fastcm/version.h>

#include <cstdio>

namespace {

struct Side {
  fastcm::Engine* engine = nullptr;
  bool established = false;
};

void on_server(const fastcm::Event& e, void* ctx) {
  auto& self = *static_cast<Side*>(ctx);
  if (e.type == fastcm::EventType::req_received) {
    fastcm::RepParams rep;
    rep.qpn = 0x200;
    (void)self.engine->send_rep(e.id, rep);
  }
  if (e.type == fastcm::EventType::rtu_received) self.established = true;
}

void on_client(const fastcm::Event& e, void* ctx) {
  auto& self = *static_cast<Side*>(ctx);
  if (e.type == fastcm::EventType::rep_received) {
    self.established = self.engine->send_rtu(e.id, {}) == fastcm::Status::ok;
  }
}

}  // namespace

int main() {
  fastcm::VirtualClock clock;
  fastcm::loopback::LoopbackFabric fabric(fastcm::loopback::LoopbackConfig::two_hcas(1), clock);
  fastcm::EngineConfig config;
  config.threading = fastcm::Threading::caller;
  config.max_endpoints = 64;
  config.mad_buffers = 256;
  auto server = fastcm::Engine::create(fabric.hca(0), clock, config);
  auto client = fastcm::Engine::create(fabric.hca(1), clock, config);
  if (!server || !client) return std::puts("consumer: Engine::create failed"), 1;
  Side s{server.get()};
  Side c{client.get()};

  fastcm::ListenParams listen;
  listen.service_id = 0x42;
  listen.delivery = {.handler = on_server, .handler_context = &s};
  fastcm::Id listen_id;
  fastcm::Id id;
  if (server->listen(listen, listen_id) != fastcm::Status::ok) return 1;
  if (client->create_id({.handler = on_client, .handler_context = &c}, nullptr, id) != fastcm::Status::ok) return 1;
  fastcm::ReqParams req;
  req.service_id = 0x42;
  req.primary = fastcm::loopback::path_record(fabric.hca(1).ports()[0], fabric.hca(0).ports()[0], 14);
  req.qpn = 0x100;
  if (client->send_req(id, req) != fastcm::Status::ok) return 1;
  for (int round = 0; round < 1000 && !(s.established && c.established); ++round) {
    server->progress();
    client->progress();
  }
  fastcm::ConnectionInfo info;
  if (!s.established || client->connection_info(id, info) != fastcm::Status::ok ||
      info.state != fastcm::CepState::established) {
    return std::puts("consumer: the connection was not established"), 1;
  }
  std::printf("consumer: %s (fastcm %s)\n", to_string(info.state).data(), FASTCM_VERSION_STRING);
  return 0;
}
