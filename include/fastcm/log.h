// fastcm's log: levels, and a sink the embedding application sets.
//
// The log is process-wide, like DPDK's: every engine of the process writes to the one sink. By
// default messages of level warning and above go to stderr, one line each. When an engine starts
// DPDK's EAL itself (EalOwner::engine), EAL's own log is routed here too, each message with the
// level DPDK gave it; an application that owns EAL keeps DPDK's log to itself.
//
// Cost: a message below the level is a single relaxed load and a compare: its text is never
// formatted. The per-MAD path logs only at LogLevel::debug (each dropped MAD, with its reason).
#pragma once

#include <cstdint>
#include <string_view>

namespace fastcm {

// Most to least severe; a message is written when its level is at most the level set. `off`
// writes nothing.
enum class LogLevel : std::uint8_t { off, error, warning, notice, info, debug };

// The level's name ("warning"), static storage, NUL-terminated; "unknown" outside the enum.
[[nodiscard]] constexpr std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::off: return "off";
    case LogLevel::error: return "error";
    case LogLevel::warning: return "warning";
    case LogLevel::notice: return "notice";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
  }
  return "unknown";
}

// Receives one message: `text` is one line without its newline, valid for the call only. Called
// from whichever thread logs (a shard, a poller, EAL's, an API caller), one call at a time (the
// log holds its lock around it), so the sink itself needs no lock; it must not call back into the
// log or into an engine, and should return quickly: shards wait for it.
using LogWriteFn = void (*)(void* ctx, LogLevel level, std::string_view text);

struct LogSink {
  LogWriteFn write = nullptr;  // null: stderr, as "fastcm: <level>: <text>"
  void* ctx = nullptr;
};

// Sets the sink (a null `write` restores stderr). A message being written meanwhile goes whole to
// the old sink or the new one; after it returns the old sink is never called again.
// Threads: any but the sink's own, at any time. Blocks: on the log's lock, while a message is
//   being written. Errors: none.
void set_log_sink(LogSink sink) noexcept;

// Sets the level (LogLevel::warning until the first call). Messages of threads that have not yet
// seen the store may still be judged by the old level.
// Threads: any. Blocks: no. Errors: none.
void set_log_level(LogLevel level) noexcept;

// The level set. Threads: any. Blocks: no. Errors: none.
[[nodiscard]] LogLevel log_level() noexcept;

}  // namespace fastcm
