// --plot: the rate over time and the latency CDF as an SVG, drawn by gnuplot (Debian's
// gnuplot-nox) run as a child process with a generated script.
#pragma once

#include <string>
#include <vector>

#include "bench/fastcm_bench/latency_histogram.h"
#include "bench/fastcm_bench/progress.h"

namespace fastcm::bench {

// Whether an executable `gnuplot` is on PATH. Thread contract: any thread.
[[nodiscard]] bool gnuplot_available();

// Whether the SVG can be created at `svg_path`: its folder exists and is writable. Any thread.
[[nodiscard]] bool plot_path_writable(const std::string& svg_path);

// Writes the plot to `svg_path`. Returns an empty string on success, else what failed (gnuplot
// missing or failing, the script not writable). Thread contract: any thread; spawns and waits
// for one child process.
[[nodiscard]] std::string draw_plot(const std::string& svg_path, const std::string& title,
                                    const std::vector<ProgressSample>& samples,
                                    const LatencySummary& latency);

}  // namespace fastcm::bench
