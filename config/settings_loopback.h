// The loopback fabric a settings file's [loopback] describes (fastcm::LoopbackSettings), for
// open_fabrics and the C API's fastcm_loopback_create.
#pragma once

#include <memory>

#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/settings.h"

namespace fastcm::config {

// HCAs and ports with the default attributes (LoopbackConfig::make), the queue depth and seed, and
// one fault rule for every MAD when a percentage is above 0. `clock` must outlive the fabric.
// Thread contract: any thread. Throws std::invalid_argument naming a value out of range,
// std::system_error when an eventfd or ring cannot be set up, std::bad_alloc.
[[nodiscard]] std::unique_ptr<loopback::LoopbackFabric> make_loopback(const LoopbackSettings& settings,
                                                                      const Clock& clock);

}  // namespace fastcm::config
