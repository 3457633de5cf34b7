// The metrics as one JSON object (fastcm/metrics.h gives its shape).
#include <nlohmann/json.hpp>

#include "metrics/engine_snapshot.h"

namespace fastcm::metrics {

namespace {

nlohmann::json level_json(const Level& l) {
  return {{"now", l.now}, {"high_water", l.high_water}, {"limit", l.limit}};
}

nlohmann::json port_json(std::uint8_t port, const PortCounters& c) {
  nlohmann::json messages = nlohmann::json::object();
  for (std::size_t k = 0; k < kCmMessageKinds; ++k) {
    const MessageCounters& m = c.messages[k];
    messages[std::string(to_string(static_cast<CmMessageKind>(k)))] = {
        {"sent", m.sent}, {"received", m.received}, {"retried", m.retried}, {"duplicate", m.duplicate},
        {"timed_out", m.timed_out}};
  }
  nlohmann::json drops = nlohmann::json::object();
  for (std::size_t r = 0; r < kDropReasons; ++r) drops[std::string(to_string(static_cast<DropReason>(r)))] = c.drops[r];
  return {{"port", port}, {"messages", std::move(messages)}, {"drops", std::move(drops)}};
}

}  // namespace

std::string metrics_json(const std::vector<EngineSnapshot>& engines) {
  nlohmann::json all = nlohmann::json::array();
  for (const EngineSnapshot& e : engines) {
    nlohmann::json shards = nlohmann::json::array();
    for (std::size_t s = 0; s < e.levels.shards.size(); ++s) {
      nlohmann::json ports = nlohmann::json::array();
      for (std::size_t p = 0; p < e.levels.port_numbers.size(); ++p) {
        ports.push_back(port_json(e.levels.port_numbers[p], e.counters[s][p]));
      }
      shards.push_back({{"shard", s},
                        {"inbox", level_json(e.levels.shards[s].inbox)},
                        {"mad_sent", level_json(e.levels.shards[s].mad_sent)},
                        {"mad_kept", level_json(e.levels.shards[s].mad_kept)},
                        {"ports", std::move(ports)}});
    }
    nlohmann::json queues = nlohmann::json::array();
    for (std::size_t q = 0; q < e.levels.event_queues.size(); ++q) {
      nlohmann::json level = level_json(e.levels.event_queues[q]);
      level["queue"] = q;
      queues.push_back(std::move(level));
    }
    all.push_back({{"name", e.name}, {"endpoints", level_json(e.levels.endpoints)}, {"shards", std::move(shards)},
                   {"event_queues", std::move(queues)}});
  }
  return nlohmann::json{{"engines", std::move(all)}}.dump(1) + "\n";
}

}  // namespace fastcm::metrics
