// Per-port CM counters: messages by attribute and direction, and drops by reason.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fastcm/cm_enums.h"  // CmMessageKind

namespace fastcm {

// Why a received MAD changed nothing but a counter.
enum class DropReason : std::uint8_t {
  malformed,            // the codec rejected it (short, bad version/method/attribute, bad field)
  unknown_comm_id,      // names a local ID we never issued or that was reused (generation)
  out_of_state,         // a valid message the endpoint's state ignores (spec: discard)
  duplicate,            // a retransmission already answered (counted per message too)
  no_resources,         // endpoint table or MAD pool exhausted
  backlog_full,         // listen backlog full under the drop policy
  queue_full,           // an EventQueue was full
  wrong_port,           // the MAD arrived on a port the endpoint's connection does not run on
  inbox_full,           // the owning shard's inbox was full (overload: the peer retries)
  // Names a live endpoint by our comm ID but is not from its peer (a spoof, or a peer's confusion):
  wrong_comm_id,        // the sender's comm ID (or, in a REP, its CA GUID) is not the connection's
  wrong_qpn,            // the QPN it names (ours in a DREQ or LAP, the sender's in a REP) is not
  wrong_source,         // sent from an address (LID, GID, P_Key) of neither of the connection's paths
  // A REQ refused by the half-open budget (EngineConfig::half_open_per_source / _per_listen),
  // then answered as its listen's BacklogPolicy says:
  source_budget,        // its source holds half_open_per_source half-open handshakes already
  listen_budget,        // its listen holds half_open_per_listen
  count_
};

[[nodiscard]] constexpr std::string_view to_string(DropReason r) noexcept {
  switch (r) {
    case DropReason::malformed: return "malformed";
    case DropReason::unknown_comm_id: return "unknown_comm_id";
    case DropReason::out_of_state: return "out_of_state";
    case DropReason::duplicate: return "duplicate";
    case DropReason::no_resources: return "no_resources";
    case DropReason::backlog_full: return "backlog_full";
    case DropReason::queue_full: return "queue_full";
    case DropReason::wrong_port: return "wrong_port";
    case DropReason::inbox_full: return "inbox_full";
    case DropReason::wrong_comm_id: return "wrong_comm_id";
    case DropReason::wrong_qpn: return "wrong_qpn";
    case DropReason::wrong_source: return "wrong_source";
    case DropReason::source_budget: return "source_budget";
    case DropReason::listen_budget: return "listen_budget";
    case DropReason::count_: break;
  }
  return "unknown";
}

inline constexpr std::size_t kCmMessageKinds = static_cast<std::size_t>(CmMessageKind::count_);
inline constexpr std::size_t kDropReasons = static_cast<std::size_t>(DropReason::count_);

struct MessageCounters {
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t retried = 0;      // retransmissions we sent
  std::uint64_t duplicate = 0;    // retransmissions we received
  std::uint64_t timed_out = 0;    // sent, and every retransmission went unanswered (an *_error event)

  // Adds every field (sums over shards or ports).
  MessageCounters& operator+=(const MessageCounters& o) noexcept {
    sent += o.sent;
    received += o.received;
    retried += o.retried;
    duplicate += o.duplicate;
    timed_out += o.timed_out;
    return *this;
  }
};

// A bounded resource of an engine (Engine::levels): in use now, the most in use at once since the
// engine was created, and its bound. `now` is a snapshot where other threads take and give.
struct Level {
  std::uint64_t now = 0;
  std::uint64_t high_water = 0;
  std::uint64_t limit = 0;
};

// One shard's resources: its inbox (received MADs and commands on their way to it) and its share
// of the MAD pool's handshake part, in halves (EngineConfig::mad_buffers): MADs endpoints keep to
// send again, and received MADs kept after their handling.
struct ShardLevels {
  Level inbox;
  Level mad_sent;
  Level mad_kept;
  // MADs this shard's worker received on its ports for another shard and posted to that shard's
  // inbox since the engine started, and REQs it passed to the shard whose endpoint their remote QP
  // is connected to (a copy of a REQ that reached another port, say): the received MADs that
  // crossed threads (0 with Threading::caller, where one thread runs every shard).
  std::uint64_t forwarded = 0;
};

struct PortCounters {
  std::array<MessageCounters, kCmMessageKinds> messages{};
  std::array<std::uint64_t, kDropReasons> drops{};

  [[nodiscard]] MessageCounters& of(CmMessageKind k) noexcept { return messages[static_cast<std::size_t>(k)]; }
  [[nodiscard]] const MessageCounters& of(CmMessageKind k) const noexcept {
    return messages[static_cast<std::size_t>(k)];
  }
  [[nodiscard]] std::uint64_t dropped(DropReason r) const noexcept { return drops[static_cast<std::size_t>(r)]; }

  // Adds every counter (sums over shards).
  PortCounters& operator+=(const PortCounters& o) noexcept {
    for (std::size_t k = 0; k < kCmMessageKinds; ++k) messages[k] += o.messages[k];
    for (std::size_t r = 0; r < kDropReasons; ++r) drops[r] += o.drops[r];
    return *this;
  }
};

}  // namespace fastcm
