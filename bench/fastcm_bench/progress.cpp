#include "bench/fastcm_bench/progress.h"

#include <cstdio>
#include <limits>
#include <string>

#include "bench/fastcm_bench/number_text.h"

namespace fastcm::bench {

Progress::Progress(bool live, std::uint64_t limit, double duration_s)
    : live_(live), limit_(limit), duration_s_(duration_s) {
  samples_.reserve(4096);
}

void Progress::update(const ProgressSample& sample, std::uint64_t attempted) {
  samples_.push_back(sample);
  if (!live_) return;
  const double rate = sample.t_s > 0 ? static_cast<double>(sample.established) / sample.t_s : 0;
  const double cores = sample.t_s > 0 ? sample.cpu_s / sample.t_s : 0;
  const std::string goal =
      limit_ != std::numeric_limits<std::uint64_t>::max() ? " of " + grouped(limit_) : "";
  char clock[64];
  if (duration_s_ > 0) {
    std::snprintf(clock, sizeof clock, "%.1f / %.0f s", sample.t_s, duration_s_);
  } else {
    std::snprintf(clock, sizeof clock, "%.1f s", sample.t_s);
  }
  // \r and "erase to end of line": the line is rewritten in place.
  std::fprintf(stderr, "\r\033[K  %s%s established (%s started)  %s/s  %.2f cores  %s",
               grouped(sample.established).c_str(), goal.c_str(), grouped(attempted).c_str(),
               grouped(rate).c_str(), cores, clock);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!live_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace fastcm::bench
