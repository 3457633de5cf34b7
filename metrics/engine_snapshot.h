// One reading of an engine for the metrics renderers: its levels and every shard's per-port
// counters, read once so that a rendering is one moment's view.
// Thread contract: any thread (the Engine calls are snapshots).
#pragma once

#include <string>
#include <vector>

#include "fastcm/counters.h"
#include "fastcm/engine.h"
#include "fastcm/metrics.h"

namespace fastcm::metrics {

struct EngineSnapshot {
  std::string name;
  EngineLevels levels;
  // counters[shard][i]: port levels.port_numbers[i] of that shard.
  std::vector<std::vector<PortCounters>> counters;
};

[[nodiscard]] std::vector<EngineSnapshot> take_snapshots(std::span<const MetricsSource> sources);

[[nodiscard]] std::string prometheus_text(const std::vector<EngineSnapshot>& engines);
[[nodiscard]] std::string metrics_json(const std::vector<EngineSnapshot>& engines);

}  // namespace fastcm::metrics
