// The passive side's SIDR_REQs that wait for the application's SIDR_REP, by (request ID, sender),
// so that a retransmitted SIDR_REQ finds its endpoint instead of creating a second one (the kernel
// CM keeps the same pairs in a tree). Bounded and allocation-free like the other CepIndexes.
// Thread contract: the owning shard's thread only.
#pragma once

#include <cstdint>

#include "engine/cep.h"
#include "engine/cep_index.h"
#include "fastcm/fabric.h"

namespace fastcm::engine {

// Who sent a SIDR_REQ: the interface ID of its port GID when it came with a GRH (RoCE, or from
// another subnet: LIDs are not unique there), else its LID. The request ID, chosen by the sender,
// tells that sender's requests apart.
[[nodiscard]] inline std::uint64_t sidr_sender_key(const MadAddress& from) noexcept {
  return from.grh.present ? from.grh.remote_gid.interface_id() : from.remote_lid;
}

// The key travels in RemoteKey's CA GUID member: a SIDR_REQ carries no CA GUID.
inline RemoteKey sidr_request_key(const Cep& c) noexcept {
  return {c.sidr_request_id, sidr_sender_key(c.peer)};
}

using SidrReqIndex = CepIndex<sidr_request_key, &Cep::sidr_next, &Cep::in_sidr_index>;

}  // namespace fastcm::engine
