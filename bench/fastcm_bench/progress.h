// The storm's course over time: a sample every tick for the rate plot, and on a terminal a live
// progress line (rewritten in place on standard error, so standard output stays clean for the
// table or the JSON).
#pragma once

#include <cstdint>
#include <vector>

namespace fastcm::bench {

struct ProgressSample {
  double t_s;                 // since the storm started
  std::uint64_t established;  // so far
  double cpu_s;               // process CPU time since the storm started
};

class Progress {
 public:
  // `limit`: connections the run may open (UINT64_MAX: none); `duration_s`: 0 when none.
  // `live`: draw the progress line (the caller checks that standard error is a terminal).
  Progress(bool live, std::uint64_t limit, double duration_s);

  // Records a sample and redraws the line. Thread contract: one thread (the storm's main loop).
  // Samples are kept in a vector that grows (4 per second of storm), off the connection path.
  void update(const ProgressSample& sample, std::uint64_t attempted);
  // Clears the progress line. Same thread.
  void finish();

  [[nodiscard]] const std::vector<ProgressSample>& samples() const noexcept { return samples_; }

 private:
  bool live_;
  std::uint64_t limit_;
  double duration_s_;
  std::vector<ProgressSample> samples_;
};

}  // namespace fastcm::bench
