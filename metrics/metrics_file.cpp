#include "metrics/metrics_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace fastcm::metrics {

MetricsFormat format_for(const std::string& path) noexcept {
  constexpr std::string_view kJson = ".json";
  return path.size() >= kJson.size() && path.compare(path.size() - kJson.size(), kJson.size(), kJson) == 0
             ? MetricsFormat::json
             : MetricsFormat::prometheus;
}

std::string replace_file(const std::string& path, const std::string& text) {
  // Beside the target, so the rename stays in one file system (and so is atomic).
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) return temporary + ": " + std::strerror(errno);
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const int write_errno = errno;
  if (std::fclose(file) != 0 || !written) {
    std::remove(temporary.c_str());
    return temporary + ": " + std::strerror(written ? errno : write_errno);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(temporary.c_str());
    return path + ": " + std::strerror(rename_errno);
  }
  return {};
}

MetricsFile::MetricsFile(std::string path, std::vector<MetricsSource> sources, std::chrono::milliseconds interval)
    : path_(std::move(path)), sources_(std::move(sources)), interval_(interval) {
  names_.reserve(sources_.size());
  for (MetricsSource& source : sources_) {
    names_.emplace_back(source.name);
    source.name = names_.back();  // reserved: the strings do not move
  }
  if (const std::string error = write(); !error.empty()) throw std::runtime_error("metrics file " + error);
  thread_ = std::thread([this] { run(); });
}

MetricsFile::~MetricsFile() {
  {
    const std::scoped_lock guard(lock_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  (void)write();
}

std::string MetricsFile::write() {
  const std::string text = render_metrics(sources_, format_for(path_));
  const std::scoped_lock guard(lock_);
  return replace_file(path_, text);
}

std::string MetricsFile::last_error() const {
  const std::scoped_lock guard(lock_);
  return last_error_;
}

void MetricsFile::run() {
  std::unique_lock guard(lock_);
  while (!wake_.wait_for(guard, interval_, [this] { return stop_; })) {
    guard.unlock();
    std::string error = write();
    guard.lock();
    if (!error.empty()) last_error_ = std::move(error);
  }
}

}  // namespace fastcm::metrics
