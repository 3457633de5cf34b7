#include "config/settings_loopback.h"

namespace fastcm::config {

std::unique_ptr<loopback::LoopbackFabric> make_loopback(const LoopbackSettings& settings, const Clock& clock) {
  loopback::LoopbackConfig config = loopback::LoopbackConfig::make(settings.hcas, settings.ports_per_hca);
  config.rx_queue_depth = settings.rx_queue_depth;
  config.fault_seed = settings.fault_seed;
  auto fabric = std::make_unique<loopback::LoopbackFabric>(config, clock);
  if (settings.loss_pct > 0 || settings.dup_pct > 0 || settings.reorder_pct > 0) {
    fabric->set_fault(loopback::FaultRule{
        .loss_pct = settings.loss_pct, .dup_pct = settings.dup_pct, .reorder_pct = settings.reorder_pct});
  }
  return fabric;
}

}  // namespace fastcm::config
