// The soak's script (soak_test.cpp): what the two applications of each connection will do, drawn
// from a seed, the REQ that opens it, and the private data each of its messages carries.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "fastcm/params.h"
#include "tests/conformance/harness.h"
#include "tests/conformance/invariant_checker.h"

namespace fastcm::test::soak {

inline constexpr std::uint64_t kUs = 1'000;
inline constexpr std::uint64_t kMs = 1'000'000;

// Services: two listens (callback and poll delivery), and one nobody listens on.
inline constexpr std::uint64_t kListenedService = 0x1000'0000'0000'5000;
inline constexpr std::uint64_t kPolledService = 0x1000'0000'0000'5001;
inline constexpr std::uint64_t kUnlistenedService = 0x1000'0000'0000'6000;

// 16.8 ms: above the delays of the tame cases; the wild ones hold some MADs up to 400 ms, as a
// misbehaving fabric would, and late copies then meet endpoints long gone or reused.
inline constexpr std::uint8_t kPacketLifeTime = 12;
inline constexpr std::uint8_t kCmResponseTimeout = 16;  // 268 ms; the engine MRAs after half of it
inline constexpr std::uint8_t kMraServiceTimeout = 21;  // 8.6 s, in the script's own MRAs
inline constexpr std::uint8_t kTargetAckDelay = 14;  // with the packet life time: 100 ms time-wait

// REJ reasons (IBTA Table 112) the script can provoke.
inline constexpr std::uint16_t kRejNoResources = 3;
inline constexpr std::uint16_t kRejTimeout = 4;
inline constexpr std::uint16_t kRejInvalidCommId = 6;
inline constexpr std::uint16_t kRejInvalidServiceId = 8;
inline constexpr std::uint16_t kRejConsumer = 28;

enum class ServerPlan : std::uint8_t {
  accept,               // send_rep from the req_received callback
  accept_slowly,        // send_rep later: the engine MRAs when it takes too long
  mra_then_accept,      // send_mra from the callback, send_rep later
  reject,               // send_rej (consumer reject) with private data
  destroy_in_callback,  // destroy from the req_received callback
  destroy_later,        // accept, then destroy whatever state the connection has reached
};
enum class ClientPlan : std::uint8_t {
  rtu,                       // send_rtu from the rep_received callback
  rtu_slowly,                // send_rtu later: the engine MRAs the REP when it takes too long
  mra_then_rtu,              // send_mra from the callback, send_rtu later
  reject_rep,                // send_rej of the REP, with private data
  destroy_in_callback,       // destroy from the rep_received callback
  destroy_while_connecting,  // destroy within 2 ms of the REQ, racing the REP
};
// How an established connection ends (hold_ns after the client's RTU).
enum class Release : std::uint8_t {
  client_dreq,
  server_dreq,
  both_dreq,
  client_destroy,
  server_destroy,
  keep
};
enum class Msg : std::uint8_t { req, rep, rej, rtu, mra, dreq, drep };

// The private data length of each message on the wire (received private data has it in full).
constexpr std::size_t wire_length(Msg m) {
  switch (m) {
    case Msg::req: return kMaxReqPrivateData;
    case Msg::rep: return kMaxRepPrivateData;
    case Msg::rej: return kMaxRejPrivateData;
    case Msg::rtu: return kMaxRtuPrivateData;
    case Msg::mra: return kMaxMraPrivateData;
    case Msg::dreq: return kMaxDreqPrivateData;
    case Msg::drep: return kMaxDrepPrivateData;
  }
  return 0;
}

constexpr std::size_t index(Side s) { return static_cast<std::size_t>(s); }
constexpr Side peer_of(Side s) { return s == Side::client ? Side::server : Side::client; }

// One connection of the script: what each application will do, and what each side's DREQ and
// DREP carried once sent (an empty vector: sent by destroy, without private data).
struct Plan {
  std::uint32_t conn = 0;
  std::uint64_t start_ns = 0;
  std::uint16_t client_port = 0;  // port index on the client's HCA
  std::uint16_t server_port = 0;  // port index on the server's HCA the REQ goes to
  bool listened = true;           // false: the REQ names a service nobody listens on
  std::uint8_t max_cm_retries = 5;
  ServerPlan server = ServerPlan::accept;
  std::uint64_t server_delay_ns = 0;
  bool server_establishes = false;  // establish() racing the RTU, as when data comes first
  ClientPlan client = ClientPlan::rtu;
  std::uint64_t client_delay_ns = 0;
  Release release = Release::keep;
  std::uint64_t hold_ns = 0;
  std::array<bool, 2> polled{};            // per side: events by EventQueue instead of callback
  std::array<bool, 2> destroys_on_dreq{};  // per side: destroy instead of send_drep
  std::array<std::optional<std::vector<std::uint8_t>>, 2> dreq_sent;
  std::array<std::optional<std::vector<std::uint8_t>>, 2> drep_sent;
  Endpoint* client_ep = nullptr;

  [[nodiscard]] Qpn qpn(Side s) const { return (s == Side::client ? 0x10000u : 0x20000u) + conn; }
  [[nodiscard]] std::uint32_t psn(Side s) const {
    return (conn * (s == Side::client ? 7919u : 104729u)) & 0xFFFFFFu;
  }
};

inline std::uint64_t service_of(const Plan& plan) {
  return !plan.listened                     ? kUnlistenedService
         : plan.polled[index(Side::server)] ? kPolledService
                                            : kListenedService;
}

// The connection's REQ from the client's chosen port to the server's.
inline ReqParams request(const Plan& plan, const Cluster& cluster,
                         std::span<const std::uint8_t> data) {
  ReqParams p;
  p.service_id = service_of(plan);
  p.primary = Cluster::make_path(cluster.client_port(plan.client_port),
                                 cluster.server_port(plan.server_port));
  p.primary.packet_life_time = kPacketLifeTime;
  p.qpn = plan.qpn(Side::client);
  p.starting_psn = plan.psn(Side::client);
  p.responder_resources = 4;
  p.initiator_depth = 4;
  p.remote_cm_response_timeout = kCmResponseTimeout;
  p.local_cm_response_timeout = kCmResponseTimeout;
  p.max_cm_retries = plan.max_cm_retries;
  p.private_data = data;
  return p;
}

// The script's choices, all from one seeded generator (mt19937_64's output is fixed by the
// standard, so a seed is the same script on every platform).
class ScriptRng {
 public:
  explicit ScriptRng(std::uint64_t seed) : gen_(seed) {}
  std::uint64_t below(std::uint64_t n) { return gen_() % n; }
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
  bool chance(std::uint64_t pct) { return below(100) < pct; }
  // An index drawn with the given weights.
  template <std::size_t N>
  std::size_t pick(const std::array<std::uint64_t, N>& weights) {
    std::uint64_t r = below(std::accumulate(weights.begin(), weights.end(), std::uint64_t{0}));
    std::size_t i = 0;
    while (r >= weights[i]) r -= weights[i++];
    return i;
  }

 private:
  std::mt19937_64 gen_;
};

inline Plan make_plan(ScriptRng& rng, std::uint32_t conn, std::uint64_t start_window_ns) {
  Plan p;
  p.conn = conn;
  p.start_ns = rng.below(start_window_ns);
  p.client_port = static_cast<std::uint16_t>(rng.below(2));
  p.server_port = static_cast<std::uint16_t>(rng.below(2));
  p.listened = !rng.chance(8);
  constexpr std::array<std::uint8_t, 5> kRetries{0, 1, 3, 5, 8};
  p.max_cm_retries = kRetries[rng.pick(std::array<std::uint64_t, 5>{10, 10, 25, 35, 20})];
  p.server = static_cast<ServerPlan>(rng.pick(std::array<std::uint64_t, 6>{40, 15, 10, 15, 8, 12}));
  if (p.server == ServerPlan::accept_slowly) p.server_delay_ns = rng.between(20 * kMs, 1500 * kMs);
  if (p.server == ServerPlan::mra_then_accept)
    p.server_delay_ns = rng.between(200 * kMs, 3000 * kMs);
  if (p.server == ServerPlan::destroy_later) p.server_delay_ns = rng.between(0, 400 * kMs);
  p.server_establishes = rng.chance(15);
  p.client = static_cast<ClientPlan>(rng.pick(std::array<std::uint64_t, 6>{50, 12, 8, 8, 7, 15}));
  if (p.client == ClientPlan::rtu_slowly) p.client_delay_ns = rng.between(50 * kMs, 1000 * kMs);
  if (p.client == ClientPlan::mra_then_rtu) p.client_delay_ns = rng.between(200 * kMs, 2000 * kMs);
  if (p.client == ClientPlan::destroy_while_connecting) p.client_delay_ns = rng.between(0, 2 * kMs);
  p.release = static_cast<Release>(rng.pick(std::array<std::uint64_t, 6>{25, 20, 16, 14, 14, 4}));
  p.hold_ns = rng.between(0, 2000 * kMs);
  p.destroys_on_dreq = {rng.chance(20), rng.chance(20)};
  p.polled = {rng.chance(30), rng.chance(30)};
  return p;
}

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E37'79B9'7F4A'7C15;
  x = (x ^ (x >> 30)) * 0xBF58'476D'1CE4'E5B9;
  x = (x ^ (x >> 27)) * 0x94D0'49BB'1331'11EB;
  return x ^ (x >> 31);
}

// Private data of one message: the connection number, then bytes that are never zero (so a
// truncation shows), 4 bytes up to the message's full length, all from (seed, connection,
// sender, message).
inline std::vector<std::uint8_t> private_data(std::uint64_t seed, const Plan& plan, Side from,
                                              Msg kind) {
  std::uint64_t h = splitmix64(seed ^ (std::uint64_t{plan.conn} << 16) ^ (index(from) << 8) ^
                               static_cast<std::uint64_t>(kind));
  std::vector<std::uint8_t> data(4 + h % (wire_length(kind) - 3));
  for (std::size_t i = 0; i < 4; ++i)
    data[i] = static_cast<std::uint8_t>(plan.conn >> (24 - 8 * i));
  for (std::size_t i = 4; i < data.size(); ++i)
    data[i] = static_cast<std::uint8_t>((h = splitmix64(h)) | 1);
  return data;
}

// Whether received private data (full wire length) is `sent` followed by zeros.
inline bool carries(std::span<const std::uint8_t> got, std::span<const std::uint8_t> sent,
                    Msg kind) {
  return got.size() == wire_length(kind) && std::equal(sent.begin(), sent.end(), got.begin()) &&
         std::all_of(got.begin() + static_cast<std::ptrdiff_t>(sent.size()), got.end(),
                     [](std::uint8_t b) { return b == 0; });
}

}  // namespace fastcm::test::soak
