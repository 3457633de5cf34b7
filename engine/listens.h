// The listens a shard's protocol consults: which listen a new REQ or SIDR_REQ belongs to, and the
// bounded backlog of REQs handed to the application and not yet answered.
//
// The protocol only reads listens; who writes them and how readers stay safe is the concurrency
// layer's business (shards/listen_registry.h publishes snapshots through epoch reclamation).
// A listen's Id has the top bit of its generation set, so it can never name an endpoint (endpoint
// generations stay below 2^30, see cep_table.h).
#pragma once

#include <cstdint>

#include "fastcm/engine.h"
#include "fastcm/id.h"

namespace fastcm::engine {

inline constexpr std::uint32_t kListenGenerationTag = 1u << 31;

[[nodiscard]] constexpr bool is_listen_id(Id id) noexcept {
  return (id.generation() & kListenGenerationTag) != 0;
}

// A listen as the registry published it: immutable while a reader holds it.
struct Listen {
  ListenParams params;
  Id id;  // comm_id() = the listen's slot in its registry, generation() tagged
};

// Which listen's backlog an endpoint counts against: the listen's Id, kept by the endpoint until
// its REQ is answered or abandoned. A default value names no listen.
using BacklogRef = Id;

class Listens {
 public:
  Listens() = default;
  Listens(const Listens&) = delete;
  Listens& operator=(const Listens&) = delete;
  virtual ~Listens() = default;

  // The listen for a REQ or SIDR_REQ to `service_id` arriving on port number `port_num`: the
  // longest mask wins, then a port-specific listen over an every-port one. Null when none matches.
  // Thread contract: a shard's thread while that shard is online (shards/epoch.h), between two of
  // its quiescent points; the result stays valid until that shard's next quiescent point.
  [[nodiscard]] virtual const Listen* match(std::uint64_t service_id, std::uint8_t port_num) noexcept = 0;

  // Counts one REQ against `listen`'s backlog. False, counting nothing, when the backlog is full or
  // the listen has been removed since it was matched. Thread contract: the shard that matched
  // `listen`, before its next quiescent point (it reads the snapshot); shards may call it at once.
  [[nodiscard]] virtual bool take_backlog(const Listen& listen) noexcept = 0;

  // Gives back one unit taken with take_backlog. Ignored when the listen has been removed since
  // (its backlog went with it) or `ref` is empty. Thread contract: any thread, at once.
  virtual void release_backlog(BacklogRef ref) noexcept = 0;
};

}  // namespace fastcm::engine
