// What became of the CM MADs a pcap capture saw (fastcm/opened_fabrics.h: a settings file's
// [pcap]). Plain data.
#pragma once

#include <cstdint>

namespace fastcm {

// Each field a snapshot of its own counter, read while MADs flow.
struct CaptureCounters {
  std::uint64_t written = 0;             // MADs in the file
  std::uint64_t dropped_queue_full = 0;  // not recorded: the writer was behind (the disk is slow)
  std::uint64_t dropped_limit = 0;       // not recorded: the file had reached its limit
  std::uint64_t write_errors = 0;        // lost to a failed write(2) (the file stays readable)
};

}  // namespace fastcm
