// The input format of the engine-ingress fuzz target (engine_ingress_fuzz.cpp): a script read
// front to back, byte by byte, so the seed writer (ingress_seed_corpus.cpp) can spell scenarios
// out in order. (libFuzzer's FuzzedDataProvider reads integers from the end of the input, and the
// gcc builds that replay the target have no copy of it.)
//
// Layout:  connections:u8  setup:u8 x connections  step...
// Each step starts with a StepKind byte; what follows it is listed at each enum below. A script
// that runs out mid-step reads zeroes, so every byte string is a valid script.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fastcm::fuzz {

inline constexpr std::size_t kMaxConnections = 3;  // live connections set up per input
inline constexpr std::size_t kMaxSteps = 48;       // steps run per input, at most

// Where a setup leaves a connection between the client engine (active) and the server (passive).
enum class Setup : std::uint8_t {
  req,          // client req_sent, server req_rcvd
  mra_req,      // the server MRA'd the REQ
  rep,          // client rep_rcvd, server rep_sent
  mra_rep,      // the client MRA'd the REP
  established,
  lap,          // established, the client sent a LAP
  dreq,         // client dreq_sent, server dreq_rcvd
  timewait,     // both in time-wait
  sidr,         // client sidr_req_sent, server sidr_req_rcvd
  count_
};

enum class StepKind : std::uint8_t {
  // target:u8 message:u8 mutation...   a MAD as the target's peer would send it, from its port
  inject_from_peer,
  // source:u8 target:u8 message:u8 mutation...   the same MAD from another source (Source)
  inject_from_elsewhere,
  // exponent:u8   0: to the next timer; n: forward 2^(n % 36) ns; then settle
  clock,
  // endpoint:u8 call:u8 argument:u8   an API call (ApiCall)
  api,
  count_
};

// The CM messages a step can send, in attribute order (ClassPortInfo, then REQ...APR).
enum class Message : std::uint8_t {
  class_port_info, req, mra, rej, rep, rtu, dreq, drep, sidr_req, sidr_rep, lap, apr, count_
};

// mutation:u8, then per kind:
enum class Mutation : std::uint8_t {
  none,        // (nothing more) the message exactly as the peer would send it
  field,       // field:u8 value:u64   one header or message field set to value (truncated)
  known_value, // field:u8 pick:u8     one field set to a value the script knows (KnownValue)
  byte,        // offset:u8 xor:u8     one byte of the MAD xor'ed
  pkey,        // (nothing more) sent with the port's limited-member P_Key instead of the default
  count_
};

// Values an attacker who watched the fabric (or guessed) would try, for Mutation::known_value.
enum class KnownValue : std::uint8_t {
  zero,
  target_comm_id,      // the target's own comm ID
  peer_comm_id,        // its peer's comm ID
  other_comm_id,       // another connection's comm ID
  target_qpn,
  peer_qpn,
  other_qpn,
  count_
};

// Other places an injected MAD comes from (inject_from_elsewhere).
enum class Source : std::uint8_t {
  tool,         // a third HCA on the fabric
  target_hca,   // the target's own HCA (its own LID)
  count_
};

// api: the call made on the chosen endpoint; `argument` picks among its variants.
enum class ApiCall : std::uint8_t {
  send_rep, send_rtu, send_rej, send_mra, send_dreq, send_drep, establish, destroy, send_lap,
  send_apr, send_sidr_rep, reconnect,  // send_req again on the endpoint (after time-wait)
  connect,       // a new client endpoint sends a REQ (the endpoint byte is unused)
  toggle_listen, // destroy the server's listen, or listen again
  count_
};

// Reads a script front to back; past its end every read returns 0.
class ScriptReader {
 public:
  explicit ScriptReader(std::span<const std::uint8_t> script) noexcept : rest_(script) {}

  [[nodiscard]] bool done() const noexcept { return rest_.empty(); }

  std::uint8_t byte() noexcept {
    if (rest_.empty()) return 0;
    const std::uint8_t b = rest_.front();
    rest_ = rest_.subspan(1);
    return b;
  }

  // The next 8 bytes, little-endian.
  std::uint64_t u64() noexcept {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < 8; ++i) v |= std::uint64_t{byte()} << (8 * i);
    return v;
  }

  // An enumerator of E (one byte modulo E::count_).
  template <typename E>
  E pick() noexcept {
    return static_cast<E>(byte() % static_cast<std::uint8_t>(E::count_));
  }

 private:
  std::span<const std::uint8_t> rest_;
};

}  // namespace fastcm::fuzz
