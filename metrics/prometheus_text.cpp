// The Prometheus text exposition format (0.0.4): "# HELP name text", "# TYPE name counter|gauge",
// then one "name{label="value",...} number" line per sample, all samples of a family together.
#include <cinttypes>
#include <cstdio>
#include <functional>

#include "metrics/engine_snapshot.h"

namespace fastcm::metrics {

namespace {

class Exposition {
 public:
  // Starts a family. `help` must not hold a backslash or newline (ours are fixed text).
  void family(const char* name, const char* type, const char* help) {
    name_ = name;
    text_ += "# HELP " + name_ + " " + help + "\n# TYPE " + name_ + " " + type + "\n";
  }
  // One sample of the current family; labels are pairs of name and value (values are our names
  // and numbers: no character needs escaping).
  void sample(std::initializer_list<std::pair<const char*, std::string>> labels, std::uint64_t value) {
    text_ += name_;
    char sep = '{';
    for (const auto& [label, v] : labels) {
      if (v.empty()) continue;  // an unnamed engine has no engine label
      text_ += sep;
      text_ += label;
      text_ += "=\"" + v + "\"";
      sep = ',';
    }
    if (sep == ',') text_ += '}';
    char number[24];
    std::snprintf(number, sizeof number, " %" PRIu64 "\n", value);
    text_ += number;
  }
  [[nodiscard]] std::string take() { return std::move(text_); }

 private:
  std::string name_;
  std::string text_;
};

using MessageField = std::uint64_t MessageCounters::*;

// Calls fn(engine, shard label, port label, counters) for every shard and port of every engine.
template <typename Fn>
void each_port(const std::vector<EngineSnapshot>& engines, Fn&& fn) {
  for (const EngineSnapshot& e : engines) {
    for (std::size_t shard = 0; shard < e.counters.size(); ++shard) {
      for (std::size_t p = 0; p < e.counters[shard].size(); ++p) {
        fn(e, std::to_string(shard), std::to_string(e.levels.port_numbers[p]), e.counters[shard][p]);
      }
    }
  }
}

void message_family(Exposition& out, const std::vector<EngineSnapshot>& engines, const char* name, const char* help,
                    MessageField field) {
  out.family(name, "counter", help);
  each_port(engines, [&](const EngineSnapshot& e, const std::string& shard, const std::string& port, const PortCounters& c) {
    for (std::size_t k = 0; k < kCmMessageKinds; ++k) {
      out.sample({{"engine", e.name}, {"shard", shard}, {"port", port},
                  {"message", std::string(to_string(static_cast<CmMessageKind>(k)))}},
                 c.messages[k].*field);
    }
  });
}

// The three gauges of a Level (now, high-water mark, bound), each a family.
void level_families(Exposition& out, const std::vector<EngineSnapshot>& engines, const std::string& name,
                    const std::string& what,
                    const std::function<void(const EngineSnapshot&, const std::function<void(
                                                 std::initializer_list<std::pair<const char*, std::string>>,
                                                 const Level&)>&)>& each) {
  const struct {
    const char* suffix;
    const char* help;
    std::uint64_t Level::*field;
  } parts[] = {{"", " in use now", &Level::now},
               {"_high_water", ": the most in use at once since the engine was created", &Level::high_water},
               {"_limit", ": the bound", &Level::limit}};
  for (const auto& part : parts) {
    out.family((name + part.suffix).c_str(), "gauge", (what + part.help).c_str());
    for (const EngineSnapshot& e : engines) {
      each(e, [&](std::initializer_list<std::pair<const char*, std::string>> labels, const Level& level) {
        out.sample(labels, level.*part.field);
      });
    }
  }
}

}  // namespace

std::string prometheus_text(const std::vector<EngineSnapshot>& engines) {
  Exposition out;
  message_family(out, engines, "fastcm_messages_sent_total", "CM MADs sent, retransmissions included",
                 &MessageCounters::sent);
  message_family(out, engines, "fastcm_messages_received_total", "CM MADs received and handled",
                 &MessageCounters::received);
  message_family(out, engines, "fastcm_retransmissions_total", "CM MADs sent again after a timeout",
                 &MessageCounters::retried);
  message_family(out, engines, "fastcm_duplicates_received_total", "retransmissions received from peers",
                 &MessageCounters::duplicate);
  message_family(out, engines, "fastcm_timeouts_total", "messages sent whose every retransmission went unanswered",
                 &MessageCounters::timed_out);
  out.family("fastcm_drops_total", "counter", "received MADs that changed nothing but this counter, by reason");
  each_port(engines, [&](const EngineSnapshot& e, const std::string& shard, const std::string& port, const PortCounters& c) {
    for (std::size_t r = 0; r < kDropReasons; ++r) {
      out.sample({{"engine", e.name}, {"shard", shard}, {"port", port},
                  {"reason", std::string(to_string(static_cast<DropReason>(r)))}},
                 c.drops[r]);
    }
  });
  level_families(out, engines, "fastcm_endpoints", "connection endpoints (time-wait included)",
                 [](const EngineSnapshot& e, const auto& sample) { sample({{"engine", e.name}}, e.levels.endpoints); });
  level_families(out, engines, "fastcm_shard_inbox", "items queued to a shard (received MADs and commands)",
                 [](const EngineSnapshot& e, const auto& sample) {
                   for (std::size_t s = 0; s < e.levels.shards.size(); ++s) {
                     sample({{"engine", e.name}, {"shard", std::to_string(s)}}, e.levels.shards[s].inbox);
                   }
                 });
  level_families(out, engines, "fastcm_mad_buffers",
                 "a shard's MAD buffers of the handshake part (half sent: kept to send again; kept: received)",
                 [](const EngineSnapshot& e, const auto& sample) {
                   for (std::size_t s = 0; s < e.levels.shards.size(); ++s) {
                     sample({{"engine", e.name}, {"shard", std::to_string(s)}, {"half", "sent"}},
                            e.levels.shards[s].mad_sent);
                     sample({{"engine", e.name}, {"shard", std::to_string(s)}, {"half", "kept"}},
                            e.levels.shards[s].mad_kept);
                   }
                 });
  level_families(out, engines, "fastcm_event_queue", "events waiting in an event queue for the application's poll",
                 [](const EngineSnapshot& e, const auto& sample) {
                   for (std::size_t q = 0; q < e.levels.event_queues.size(); ++q) {
                     sample({{"engine", e.name}, {"queue", std::to_string(q)}}, e.levels.event_queues[q]);
                   }
                 });
  return out.take();
}

}  // namespace fastcm::metrics
