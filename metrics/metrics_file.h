// Metrics written to a file at an interval, the file replaced atomically (written beside it, then
// renamed over it), so a reader (a node exporter's textfile collector, a script) never sees a
// half-written file. The format follows the file name: ".json" JSON, else Prometheus text.
//
// Thread contract: the constructor and destructor on one thread; the writer thread calls
// render_metrics on the sources, which must outlive the MetricsFile.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fastcm/metrics.h"

namespace fastcm::metrics {

// The format a metrics file's name asks for.
[[nodiscard]] MetricsFormat format_for(const std::string& path) noexcept;

// Writes `text` to `path` through a temporary file in the same folder and a rename. Returns the
// failure in words (the OS's reason and the file), empty on success. Blocks on the file system.
[[nodiscard]] std::string replace_file(const std::string& path, const std::string& text);

class MetricsFile {
 public:
  // Writes once at once (so a bad path fails here: std::runtime_error naming it), then every
  // `interval` on a thread of its own until destroyed. Names of the sources are copied.
  MetricsFile(std::string path, std::vector<MetricsSource> sources, std::chrono::milliseconds interval);
  // Stops the thread (waits for a write in progress) and writes a last time.
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  // Writes now. Returns the failure in words, empty on success. Any thread; one write at a time.
  [[nodiscard]] std::string write();
  // The last failure of the writer thread (empty: none). Any thread.
  [[nodiscard]] std::string last_error() const;

 private:
  void run();

  std::string path_;
  std::vector<std::string> names_;  // the sources' names, owned here
  std::vector<MetricsSource> sources_;
  std::chrono::milliseconds interval_;
  // Lock: the writer thread's sleep and stop flag, and one write at a time (a control path: a few
  // writes per second at most).
  mutable std::mutex lock_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace fastcm::metrics
