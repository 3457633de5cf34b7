// What the loopback benchmarks share: a fabric whose time-wait lasts microseconds, the REQ of
// connection i, and the server's REP that accepts it. One place, so every benchmark measures the
// same handshake.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fabric/loopback/loopback_config.h"
#include "fastcm/engine.h"
#include "fastcm/event.h"
#include "fastcm/params.h"

namespace fastcm::bench {

inline constexpr std::uint64_t kServiceId = 0x0106'0000'0000'1234ULL;
inline constexpr Qpn kClientQpnBase = 0x10000;  // connection i: client QP kClientQpnBase + i
inline constexpr Qpn kServerQpnBit = 0x800000;  // the server's QP for it: the client's with this bit set

// Two HCAs of `ports` ports (HCA 0 serves, HCA 1 connects). CA ACK delay 0 (default 16, 268 ms)
// because time-wait adds it; receive queues of `rx_queue_depth` so a storm never overflows them.
[[nodiscard]] inline loopback::LoopbackConfig storm_fabric(std::uint8_t ports, std::uint32_t rx_queue_depth) {
  auto config = loopback::LoopbackConfig::two_hcas(ports);
  for (auto& hca : config.hcas) {
    for (auto& port : hca.ports) port.ca.local_ca_ack_delay = 0;
  }
  config.rx_queue_depth = rx_queue_depth;
  return config;
}

// Connection i's REQ from client port `port` to the same server port. Packet life time 0 keeps
// time-wait in microseconds; 4.3 s CM response timeouts keep retransmissions out of a storm.
[[nodiscard]] inline ReqParams storm_req(const loopback::LoopbackConfig& config, std::size_t port, std::uint32_t i) {
  ReqParams p;
  p.service_id = kServiceId;
  p.primary = loopback::path_record(config.hcas[1].ports[port], config.hcas[0].ports[port], 0);
  p.qpn = kClientQpnBase + i;
  p.starting_psn = i;
  p.responder_resources = 4;
  p.initiator_depth = 4;
  p.remote_cm_response_timeout = 20;
  p.local_cm_response_timeout = 20;
  p.max_cm_retries = 3;
  return p;
}

// The storm's listen: every port, room for `backlog` unanswered REQs, events to `handler(ctx)`.
[[nodiscard]] inline ListenParams storm_listen(std::uint32_t backlog, EventHandler handler, void* ctx) {
  ListenParams lp;
  lp.service_id = kServiceId;
  lp.backlog = backlog;
  lp.delivery = Delivery{.handler = handler, .handler_context = ctx};
  return lp;
}

// The server's acceptance of `req`: its own QP, resources crosswise.
[[nodiscard]] inline RepParams accepting_rep(const ReqReceived& req) {
  RepParams rep;
  rep.qpn = req.remote_qpn | kServerQpnBit;
  rep.starting_psn = req.remote_qpn;
  rep.responder_resources = req.initiator_depth;
  rep.initiator_depth = req.responder_resources;
  return rep;
}

// The p-quantile (0..1) of latencies in nanoseconds, in microseconds; reorders `ns`.
[[nodiscard]] inline double percentile_us(std::vector<double>& ns, double p) {
  const auto k = static_cast<std::size_t>(p * static_cast<double>(ns.size() - 1));
  std::nth_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(k), ns.end());
  return ns[k] * 1e-3;
}

}  // namespace fastcm::bench
