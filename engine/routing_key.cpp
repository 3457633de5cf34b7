#include "engine/routing_key.h"

#include "engine/sidr_req_index.h"

namespace fastcm::engine {

RoutingKey routing_key(mad::ConstMadSpan bytes, const MadAddress& from) noexcept {
  // Only the attribute is read: the owning shard validates the whole header (and drops what fails)
  // anyway, so checking it here too would cost a second header decode per MAD.
  const auto ours = [](std::uint32_t comm_id) {
    return RoutingKey{.kind = RoutingKey::Kind::local_comm_id, .comm_id = comm_id};
  };
  switch (mad::peek<&mad::MadHeader::attribute_id>(bytes)) {
    case mad::AttrId::req:
      return {.kind = RoutingKey::Kind::remote_qp,
              .id = mad::peek<&mad::Req::local_qpn>(bytes),
              .origin = mad::peek<&mad::Req::local_ca_guid>(bytes)};
    case mad::AttrId::sidr_req:
      return {.kind = RoutingKey::Kind::sidr_request,
              .id = mad::peek<&mad::SidrReq::request_id>(bytes),
              .origin = sidr_sender_key(from)};
    case mad::AttrId::rej: {
      const std::uint32_t ours_id = mad::peek<&mad::Rej::remote_comm_id>(bytes);
      if (ours_id == 0 && mad::peek<&mad::Rej::reason>(bytes) == mad::RejReason::timeout) {
        return {.kind = RoutingKey::Kind::any_shard};
      }
      return ours(ours_id);
    }
    case mad::AttrId::mra: return ours(mad::peek<&mad::Mra::remote_comm_id>(bytes));
    case mad::AttrId::rep: return ours(mad::peek<&mad::Rep::remote_comm_id>(bytes));
    case mad::AttrId::rtu: return ours(mad::peek<&mad::Rtu::remote_comm_id>(bytes));
    case mad::AttrId::dreq: return ours(mad::peek<&mad::Dreq::remote_comm_id>(bytes));
    case mad::AttrId::drep: return ours(mad::peek<&mad::Drep::remote_comm_id>(bytes));
    case mad::AttrId::lap: return ours(mad::peek<&mad::Lap::remote_comm_id>(bytes));
    case mad::AttrId::apr: return ours(mad::peek<&mad::Apr::remote_comm_id>(bytes));
    case mad::AttrId::sidr_rep: return ours(mad::peek<&mad::SidrRep::request_id>(bytes));
    case mad::AttrId::class_port_info: break;
  }
  return {};
}

}  // namespace fastcm::engine
