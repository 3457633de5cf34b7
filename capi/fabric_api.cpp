// The C API of fabrics: a fabric's ports, and the loopback fabric.
#include <new>

#include "capi/boundary.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "fabric/loopback/loopback_config.h"

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
  if (config == nullptr) return;
  const fastcm::loopback::LoopbackConfig d;
  *config = fastcm_loopback_config{.hcas = 2, .ports_per_hca = 1, .rx_queue_depth = d.rx_queue_depth,
                                   .fault_seed = d.fault_seed};
}

fastcm_status fastcm_loopback_create(const fastcm_loopback_config* config, const fastcm_clock* clock,
                                     fastcm_loopback** out) noexcept {
  if (config == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    // make() and the fabric's constructor check every value (std::invalid_argument).
    auto cfg = fastcm::loopback::LoopbackConfig::make(config->hcas, config->ports_per_hca);
    cfg.rx_queue_depth = config->rx_queue_depth;
    cfg.fault_seed = config->fault_seed;
    *out = new fastcm_loopback(cfg, clock);
    return FASTCM_OK;
  });
}

void fastcm_loopback_destroy(fastcm_loopback* loopback) noexcept { delete loopback; }

size_t fastcm_loopback_hca_count(const fastcm_loopback* loopback) noexcept { return loopback->fabric.hca_count(); }

fastcm_fabric* fastcm_loopback_hca(fastcm_loopback* loopback, size_t index) noexcept {
  if (loopback == nullptr || index >= loopback->fabric.hca_count()) return nullptr;
  return reinterpret_cast<fastcm_fabric*>(&loopback->fabric.hca(index));
}

void fastcm_loopback_path_record(const fastcm_port_attr* from, const fastcm_port_attr* to,
                                 uint8_t packet_life_time, fastcm_path* out) noexcept {
  using fastcm::capi::from_c;
  *out = fastcm::capi::to_c(fastcm::loopback::path_record(from_c(*from), from_c(*to), packet_life_time));
}

}  // extern "C"
