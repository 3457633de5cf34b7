// What the shard router needs to know about a received MAD, read straight from the wire without
// decoding the message: the local communication ID it names,
// or the remote key of a request that names none of ours.
//
// The concurrency layer turns a key into a shard and never looks at message layouts itself. The
// key is only a hint: the owning shard decodes and validates the whole MAD, header included, and
// counts anything malformed. So only the attribute ID is read here: a MAD naming no CM attribute is
// `unrouted`, any other is keyed by its attribute's fields even when the rest of its header is bad.
#pragma once

#include <cstdint>
#include <span>

#include "engine/mad/cm_messages.h"
#include "engine/mad/codec.h"
#include "fastcm/fabric.h"

namespace fastcm::engine {

struct RoutingKey {
  enum class Kind : std::uint8_t {
    local_comm_id,  // names one of our endpoints: `comm_id` (REP, RTU, MRA, REJ, DREQ, DREP, LAP, APR, SIDR_REP)
    remote_qp,      // a REQ: from QP `id` of CA `origin`
    sidr_request,   // a SIDR_REQ: request `id` from sender `origin` (source GID interface ID, or LID)
    any_shard,      // names no endpoint: an REJ "timeout" from a peer that never learnt our ID
                    // (matched by the duplicate-REQ index of whichever shard holds the REQ)
    unrouted,       // ClassPortInfo, or a MAD the owning shard will drop as malformed
  };
  Kind kind = Kind::unrouted;
  std::uint32_t comm_id = 0;
  std::uint32_t id = 0;
  std::uint64_t origin = 0;
};

// The routing key of a MAD received from `from`. Never fails.
[[nodiscard]] RoutingKey routing_key(mad::ConstMadSpan bytes, const MadAddress& from) noexcept;

}  // namespace fastcm::engine
