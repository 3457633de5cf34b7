// Writing to fastcm's log (the public side, sink and level, is fastcm/log.h).
//
// FASTCM_LOG(level, format, ...) formats only when the level is on: below it a message costs one
// relaxed load and a compare, so the per-MAD path may log at LogLevel::debug. Formatting is
// printf's, into a bounded buffer on the stack (no allocation; a longer message is cut at
// kMaxLogText bytes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fastcm/log.h"

namespace fastcm::logging {

inline constexpr std::size_t kMaxLogText = 512;

// The level set_log_level stored. Relaxed everywhere: it publishes no other data, and a thread
// that sees a level change late judges a few messages by the old one (fastcm/log.h says so).
extern std::atomic<LogLevel> g_level;

[[nodiscard]] inline bool enabled(LogLevel level) noexcept {
  return level != LogLevel::off && level <= g_level.load(std::memory_order_relaxed);
}

// Formats and writes one message (enabled() is not checked again). Any thread; takes the log's
// lock around the sink.
void write(LogLevel level, const char* format, ...) noexcept __attribute__((format(printf, 2, 3)));

// Writes `text` as it is, one message per line in it (a trailing newline is dropped). For text
// formatted elsewhere (DPDK's log). Any thread; takes the log's lock around the sink.
void write_text(LogLevel level, std::string_view text) noexcept;

}  // namespace fastcm::logging

#define FASTCM_LOG(level, ...)                                                     \
  do {                                                                             \
    if (::fastcm::logging::enabled(level)) ::fastcm::logging::write(level, __VA_ARGS__); \
  } while (false)
