// Moving a verbs QP through INIT, RTR and RTS with the attributes fastcm derives for a connection
// (Engine::init_qp_attr): fastcm::QpAttr maps field for field onto struct ibv_qp_attr and its mask
// bits are IBV_QP_*, so the conversion copies, except for one index. QpAttr's sgid_index indexes
// the fabric's GID list (PortAttr::gids()), which the device's own table may order differently
// (empty entries, a RoCE v1 and a RoCE v2 entry per address): it is looked up by value.
//
// Thread contract: the thread that owns the QP and the VerbsContext.
#pragma once

#include <infiniband/verbs.h>

#include <string>

#include "examples/rping_common/verbs_context.h"
#include "fastcm/fabric.h"
#include "fastcm/qp_attr.h"

namespace fastcm::examples {

// Applies `attr` to `qp` with ibv_modify_qp; `port` is the fabric's PortAttr of the connection's
// port. Returns false with `error` naming the target state and the cause (the source GID not on
// the device, or ibv_modify_qp's errno text).
bool transition_qp(const VerbsContext& verbs, ibv_qp* qp, const QpAttr& attr, const PortAttr& port,
                   std::string& error);

}  // namespace fastcm::examples
