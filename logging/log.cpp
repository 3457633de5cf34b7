#include "logging/log.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace fastcm::logging {

std::atomic<LogLevel> g_level{LogLevel::warning};

namespace {

// Lock: around the sink (the log's only shared state besides the level) so that messages never
// interleave and set_log_sink never races a write; taken only by messages whose level is on.
std::mutex g_sink_lock;
LogSink g_sink;

void to_sink(LogLevel level, std::string_view line) noexcept {
  const std::scoped_lock guard(g_sink_lock);
  if (g_sink.write != nullptr) {
    g_sink.write(g_sink.ctx, level, line);
    return;
  }
  const std::string_view name = to_string(level);
  std::fprintf(stderr, "fastcm: %.*s: %.*s\n", static_cast<int>(name.size()), name.data(),
               static_cast<int>(line.size()), line.data());
}

}  // namespace

void write(LogLevel level, const char* format, ...) noexcept {
  char text[kMaxLogText];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  if (n < 0) return;
  write_text(level, std::string_view(text, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof text - 1)));
}

void write_text(LogLevel level, std::string_view text) noexcept {
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    if (!line.empty()) to_sink(level, line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

}  // namespace fastcm::logging

namespace fastcm {

void set_log_sink(LogSink sink) noexcept {
  const std::scoped_lock guard(logging::g_sink_lock);
  logging::g_sink = sink;
}

void set_log_level(LogLevel level) noexcept { logging::g_level.store(level, std::memory_order_relaxed); }

LogLevel log_level() noexcept { return logging::g_level.load(std::memory_order_relaxed); }

}  // namespace fastcm
