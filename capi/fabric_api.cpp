// The C API of fabrics: a fabric's ports, and the loopback fabric.
#include <new>

#include "capi/boundary.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "config/settings_loopback.h"

using fastcm::capi::cpp;
using fastcm::capi::guarded;

extern "C" {

size_t fastcm_fabric_port_count(const fastcm_fabric* fabric) noexcept { return cpp(fabric).ports().size(); }

fastcm_status fastcm_fabric_port(const fastcm_fabric* fabric, size_t index, fastcm_port_attr* out) noexcept {
  if (fabric == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  const auto ports = cpp(fabric).ports();
  if (index >= ports.size()) return FASTCM_ERR_INVALID_ARGUMENT;
  *out = fastcm::capi::to_c(ports[index]);
  return FASTCM_OK;
}

void fastcm_loopback_config_init(fastcm_loopback_config* config) noexcept {
  if (config != nullptr) *config = fastcm::capi::to_c(fastcm::LoopbackSettings{});
}

fastcm_status fastcm_loopback_create(const fastcm_loopback_config* config, const fastcm_clock* clock,
                                     fastcm_loopback** out) noexcept {
  if (config == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    // make_loopback checks every value (std::invalid_argument).
    auto handle = std::make_unique<fastcm_loopback>(clock);
    handle->fabric = fastcm::config::make_loopback(fastcm::capi::from_c(*config), handle->clock);
    *out = handle.release();
    return FASTCM_OK;
  });
}

void fastcm_loopback_destroy(fastcm_loopback* loopback) noexcept { delete loopback; }

size_t fastcm_loopback_hca_count(const fastcm_loopback* loopback) noexcept { return loopback->fabric->hca_count(); }

fastcm_fabric* fastcm_loopback_hca(fastcm_loopback* loopback, size_t index) noexcept {
  if (loopback == nullptr || index >= loopback->fabric->hca_count()) return nullptr;
  return reinterpret_cast<fastcm_fabric*>(&loopback->fabric->hca(index));
}

void fastcm_loopback_path_record(const fastcm_port_attr* from, const fastcm_port_attr* to,
                                 uint8_t packet_life_time, fastcm_path* out) noexcept {
  using fastcm::capi::from_c;
  *out = fastcm::capi::to_c(fastcm::loopback::path_record(from_c(*from), from_c(*to), packet_life_time));
}

}  // extern "C"
