#include "metrics/engine_snapshot.h"

#include <algorithm>

namespace fastcm::metrics {

std::vector<EngineSnapshot> take_snapshots(std::span<const MetricsSource> sources) {
  std::vector<EngineSnapshot> snapshots;
  for (const MetricsSource& source : sources) {
    if (source.engine == nullptr) continue;
    EngineSnapshot& s = snapshots.emplace_back();
    s.name = std::string(source.name);
    source.engine->levels(s.levels);
    // Engine::shard_counters is indexed by port number (index 0 unused).
    std::uint8_t max_port = 0;
    for (const std::uint8_t port : s.levels.port_numbers) max_port = std::max(max_port, port);
    std::vector<PortCounters> by_number(std::size_t{max_port} + 1);
    for (std::uint32_t shard = 0; shard < s.levels.shards.size(); ++shard) {
      source.engine->shard_counters(shard, by_number);
      std::vector<PortCounters>& ports = s.counters.emplace_back();
      for (const std::uint8_t port : s.levels.port_numbers) ports.push_back(by_number[port]);
    }
  }
  return snapshots;
}

}  // namespace fastcm::metrics

namespace fastcm {

std::string render_metrics(std::span<const MetricsSource> sources, MetricsFormat format) {
  const std::vector<metrics::EngineSnapshot> snapshots = metrics::take_snapshots(sources);
  return format == MetricsFormat::json ? metrics::metrics_json(snapshots) : metrics::prometheus_text(snapshots);
}

}  // namespace fastcm
