// REQs from one remote QP that reach two ports of a worker-threaded server at the same moment. Each
// port's worker makes the endpoints of the REQs it receives, so both may find the QP unclaimed and
// race to claim it: exactly one must win and make an endpoint; the other is handed to the winner's
// shard and rejected there as stale (IBTA 12.9.8.3.2), as one shard handling both in turn would.
// The REQs come raw from the second HCA's ports (no engine behind them) so that each pair leaves
// at once.
#include <gtest/gtest.h>

#include <poll.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>

#include "engine/mad/codec.h"
#include "tests/stress/stress_env.h"

namespace fastcm::stress {
namespace {

using SteadyTime = std::chrono::steady_clock;

constexpr std::uint16_t kServerHca = 0;
constexpr std::uint16_t kSenderHca = 1;

// A REQ from QP `qpn` of the sending HCA, leaving its port `port` for the server's port `port`.
MadPacket req_packet(const PortAttr& from, const PortAttr& to, std::uint32_t comm_id, Qpn qpn) {
  mad::Req req;
  req.local_comm_id = comm_id;
  req.service_id = kMainService;
  req.local_ca_guid = from.node_guid;
  req.local_qpn = qpn;
  req.remote_cm_response_timeout = kPatientCmResponseTimeout;
  req.local_cm_response_timeout = kPatientCmResponseTimeout;
  req.partition_key = 0xFFFF;
  req.path_packet_payload_mtu = mad::MtuCode::mtu_4096;
  req.max_cm_retries = kMaxCmRetries;
  req.primary.local_port_lid = from.lid;
  req.primary.remote_port_lid = to.lid;
  req.primary.subnet_local = true;
  req.primary.local_ack_timeout = 17;
  MadPacket p;
  p.addr.remote_lid = to.lid;
  EXPECT_TRUE(mad::encode(mad::cm_header(mad::Method::send, mad::AttrId::req, comm_id), req, mad::MadSpan(p.mad)).ok());
  return p;
}

// Takes what reached the sending HCA's first two ports; returns the REJs "stale connection" among it.
std::uint32_t take_stale_rejs(Fabric& sender) {
  std::uint32_t stale = 0;
  MadPacket in;
  const std::array<MadPacket*, 1> slot{&in};
  for (std::uint16_t port = 0; port < 2; ++port) {
    while (sender.recv_burst(port, slot) == 1) {
      const mad::ConstMadSpan bytes(in.mad);
      mad::Rej rej;
      if (mad::peek<&mad::MadHeader::attribute_id>(bytes) == mad::AttrId::rej && mad::decode_body(bytes, rej).ok() &&
          rej.reason == mad::RejReason::stale_conn) {
        ++stale;
      }
    }
  }
  return stale;
}

std::uint64_t reqs_received(const Engine& engine) {
  std::array<PortCounters, kPorts> ports;
  engine.counters(ports);
  std::uint64_t sum = 0;
  for (const PortCounters& c : ports) sum += c.of(CmMessageKind::req).received;
  return sum;
}

TEST(CrossPortRace, TwoReqsFromOneQpAtTwoPortsAtOnceMakeOneEndpoint) {
  const std::uint32_t pairs = scaled(512);
  SteadyClock clock;
  const loopback::LoopbackConfig config = fabric_config();
  loopback::LoopbackFabric fabric(config, clock);
  std::unique_ptr<Engine> server = Engine::create(fabric.hca(kServerHca), clock, engine_config(kPorts));
  ASSERT_NE(server, nullptr);
  EventQueue* queue = server->create_event_queue(2 * pairs);
  ASSERT_NE(queue, nullptr);
  ListenParams listen;
  listen.service_id = kMainService;
  listen.delivery = Delivery{.queue = queue};
  Id listen_id;
  ASSERT_EQ(server->listen(listen, listen_id), Status::ok);

  const auto& server_ports = config.hcas[kServerHca].ports;
  const auto& sender_ports = config.hcas[kSenderHca].ports;
  for (std::uint32_t i = 0; i < pairs; ++i) {
    const Qpn qpn = 0x1000 + i;
    for (std::uint16_t port = 0; port < 2; ++port) {
      const MadPacket req = req_packet(sender_ports[port], server_ports[port], 2 * i + port + 1, qpn);
      const std::array<const MadPacket*, 1> burst{&req};
      ASSERT_EQ(fabric.hca(kSenderHca).send_burst(port, burst), 1u);
    }
  }

  // Every REQ handled (counted once, where it arrived), and one of each pair rejected; then every
  // event they made.
  const auto deadline = SteadyTime::now() + kGuard;
  std::uint32_t stale_rejs = 0;
  while ((reqs_received(*server) < 2 * pairs || stale_rejs < pairs) && SteadyTime::now() < deadline) {
    stale_rejs += take_stale_rejs(fabric.hca(kSenderHca));
    pollfd fd{.fd = queue->event_fd(), .events = POLLIN, .revents = 0};
    (void)::poll(&fd, 1, 1);
  }
  EXPECT_EQ(reqs_received(*server), 2 * pairs);
  EXPECT_EQ(stale_rejs, pairs);
  std::map<Qpn, std::uint32_t> endpoints_per_qp;
  std::array<Event, 64> events;
  for (std::size_t n = server->poll(*queue, events); n != 0; n = server->poll(*queue, events)) {
    for (std::size_t i = 0; i < n; ++i) {
      if (events[i].type == EventType::req_received) ++endpoints_per_qp[std::get<ReqReceived>(events[i].params).remote_qpn];
      server->release(events[i]);
    }
  }
  EXPECT_EQ(endpoints_per_qp.size(), pairs);
  for (const auto& [qpn, endpoints] : endpoints_per_qp) EXPECT_EQ(endpoints, 1u) << "QP " << qpn;
  EngineLevels levels;
  server->levels(levels);
  EXPECT_EQ(levels.endpoints.now, pairs);
}

}  // namespace
}  // namespace fastcm::stress
