// What Engine::create makes of an EngineConfig: the one check of every field (the rules listed at
// fastcm::ConfigField), and the sizes of the tables, rings and pool derived from a valid one. The
// check computes every derived size in 64 bits and compares it with the limit of what it sizes,
// so no sum or product can wrap into a small, accepted value.
// Thread contract: pure functions, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "fastcm/engine.h"

namespace fastcm::shards {

struct EngineSizing {
  std::uint32_t endpoints_per_shard = 0;  // each shard's table (see endpoint_budget.h)
  std::uint32_t half_open_source_slots = 0;  // source words of the half-open table
  std::uint32_t sent_per_shard = 0;       // the handshake part's halves, per shard
  std::uint32_t kept_per_shard = 0;
  std::uint32_t answers_per_shard = 0;    // the answer reserve, per shard
  std::uint32_t pool_capacity = 0;        // MAD buffers in the engine's pool
  std::uint32_t pool_cache = 0;           // the pool's cache (per lcore with worker threads)
};

// Why `config` over a fabric with `ports` ports cannot make an engine, or nullopt when it can.
[[nodiscard]] std::optional<ConfigError> check_config(const EngineConfig& config, std::size_t ports) noexcept;

// The calls posted to shards (EngineConfig::posted_calls, fastcm/engine.h): 0 when calls wait,
// which a caller-driven engine always does (its calls run inline).
[[nodiscard]] constexpr std::uint32_t posted_calls(const EngineConfig& config) noexcept {
  return config.threading == Threading::workers ? config.posted_calls : 0;
}

// The sizes for a configuration check_config() accepted.
[[nodiscard]] EngineSizing engine_sizing(const EngineConfig& config, std::size_t ports) noexcept;

}  // namespace fastcm::shards
