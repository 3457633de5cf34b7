// An engine's counters and resource levels as metrics: the Prometheus text exposition format
// (version 0.0.4) or JSON, for a metrics stack to scrape or a file to be read.
//
// Prometheus families, each with its HELP and TYPE lines and every sample of it together; labels
// `engine` (the source's name, when it has one), `shard`, `port` (the HCA port number) and
// `message` (a CM message, cm_enums.h) or `reason` (DropReason):
//   fastcm_messages_sent_total, fastcm_messages_received_total     counters, by message
//   fastcm_retransmissions_total       MADs sent again after a timeout, by message
//   fastcm_duplicates_received_total   retransmissions received, by message
//   fastcm_timeouts_total              messages whose every retransmission went unanswered
//   fastcm_drops_total                 received MADs dropped, by reason
//   fastcm_endpoints, fastcm_endpoints_high_water, fastcm_endpoints_limit          gauges, per engine
//   fastcm_shard_inbox, _high_water, _limit                                          gauges, per shard
//   fastcm_mad_buffers, _high_water, _limit  gauges, per shard and `half` (sent, kept: engine.h)
//   fastcm_event_queue, _high_water, _limit  gauges, per event queue (`queue`: its index in
//                                            create_event_queue order)
// Counters are per shard and port: a port's total is their sum over shards, a shard's over ports.
//
// JSON: {"engines": [{"name", "endpoints": {now, high_water, limit}, "shards": [{"shard", "inbox",
// "mad_sent", "mad_kept", "ports": [{"port", "messages": {"req": {"sent", "received", "retried",
// "duplicate", "timed_out"}, ...}, "drops": {"malformed": n, ...}}]}], "event_queues": [{"queue",
// now, high_water, limit}]}]}.
//
// Thread contract: any thread, concurrently with the engines' work (Engine::shard_counters and
// Engine::levels are snapshots). Allocates the text; throws std::bad_alloc.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fastcm/engine.h"

namespace fastcm {

enum class MetricsFormat : std::uint8_t { prometheus, json };

// One engine to export. `name` becomes the `engine` label (and the JSON "name"); empty: no label,
// for a process with one engine. Names of several sources should differ.
struct MetricsSource {
  const Engine* engine = nullptr;
  std::string_view name;
};

// The metrics of every source (null engines are skipped) in `format`.
// Threads: any, without stopping the engines' shards. Blocks: while it allocates the text.
// Errors: throws std::bad_alloc.
[[nodiscard]] std::string render_metrics(std::span<const MetricsSource> sources, MetricsFormat format);

}  // namespace fastcm
