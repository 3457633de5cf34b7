// The engine's budget of half-open handshakes: passive endpoints made by a REQ, from the REQ until
// the handshake settles (established, rejected, timed out, or abandoned). Each one holds an
// endpoint and up to two MAD buffers (the REQ, kept, and the REP it resends) for as long as the
// peer may take to answer: retries x 4.096 us x 2^(REQ's local CM response timeout), about 70 s
// at exponent 20 and 15 retries. Without a budget one source could fill the engine with handshakes
// it never completes and lock every other peer out.
//
// Two bounds (EngineConfig::half_open_per_source, half_open_per_listen): handshakes per source,
// and per listen. A source is what the fabric stamped on the REQ, never what its payload claims
// (the CA GUID and QPN are the sender's to write):
//  - InfiniBand without a GRH: the source LID, assigned by the subnet manager: a host cannot pick
//    another without the SM's help, so a flooding host is one source;
//  - with a GRH (RoCE always, InfiniBand through a router): the source GID. On RoCE the GID is the
//    sender's IP address, which a host writes itself: a host that forges a new GID per REQ is a
//    new source per REQ, and only the per-listen cap and the engine's pools bound it.
// A source also has a standing: a source whose last two handshakes timed out waiting for its
// answer (a REP never answered by an RTU) gets its REPs sent once, without retransmission, until
// it answers a handshake again (an RTU, a REJ, a DREQ); so the REPs the engine sends to a source
// that never answers are bounded by the REQs it sends (plus the retries of the handshakes it held
// before its standing fell), not multiplied by the REQ's retry count.
//
// REQs of one source reach different shards (each is handled by the shard of the port it arrives
// at, or the one its CA GUID and QPN hash to), so the count is engine-wide. It is touched twice
// per handshake (admit, settle), never per MAD.
// The implementation lives with the engine's other shared state (shards/half_open_table.h).
#pragma once

#include <cstdint>

#include "engine/listens.h"
#include "fastcm/fabric.h"

namespace fastcm::engine {

class HalfOpenBudget {
 public:
  enum class Refusal : std::uint8_t {
    none,
    source,  // the source holds EngineConfig::half_open_per_source half-open handshakes already
    listen,  // the listen holds EngineConfig::half_open_per_listen
  };
  struct Admission {
    Refusal refused = Refusal::none;
    std::uint32_t source = 0;  // the source's entry, for settle()
    bool unanswering = false;  // the source left its last handshakes unanswered: send its REP once
  };
  // How a handshake ended, for its source's standing.
  enum class Settled : std::uint8_t {
    answered,    // the peer answered (RTU, REJ, DREQ, or data on the QP: Engine::establish)
    unanswered,  // our REP's retries ran out
    abandoned,   // we ended it (the application rejected or destroyed it, or no endpoint was free)
  };

  HalfOpenBudget() = default;
  HalfOpenBudget(const HalfOpenBudget&) = delete;
  HalfOpenBudget& operator=(const HalfOpenBudget&) = delete;
  virtual ~HalfOpenBudget() = default;

  // Counts a new handshake of the source that sent a REQ received at `from` (its port, and its LID
  // or, with a GRH, its GID) for `listen`, unless either is at its bound: then it counts nothing
  // and says which bound refused. Thread contract: any thread, concurrently.
  [[nodiscard]] virtual Admission admit(const MadAddress& from, BacklogRef listen) noexcept = 0;

  // Ends a handshake admit() counted, with its admission's source entry and its listen (a listen
  // removed since is ignored). Thread contract: any thread, concurrently; once per admission.
  virtual void settle(std::uint32_t source, BacklogRef listen, Settled how) noexcept = 0;
};

}  // namespace fastcm::engine
