// For C++ programs that host C code on the C API: a C++ fastcm::Fabric as the C handle, so a
// fabric the C++ side built (or one the C API does not create yet) can be given to
// fastcm_engine_create. The handle borrows the fabric, which must outlive every engine on it.
// Thread contract: pure; any thread.
#pragma once

#include "fastcm/fabric.h"
#include "fastcm/fastcm.h"

namespace fastcm {

// The C API's fastcm_fabric is the fastcm::Fabric itself (capi/handles.h casts it back).
[[nodiscard]] inline fastcm_fabric* c_fabric(Fabric& fabric) noexcept {
  return reinterpret_cast<fastcm_fabric*>(&fabric);
}

}  // namespace fastcm
