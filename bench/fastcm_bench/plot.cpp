#include "bench/fastcm_bench/plot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace fastcm::bench {

namespace {

// A gnuplot single-quoted string: a quote inside is written twice.
std::string quoted(const std::string& text) {
  std::string q = "'";
  for (const char c : text) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

std::string script(const std::string& svg_path, const std::string& title,
                   const std::vector<ProgressSample>& samples, const LatencySummary& latency) {
  std::ostringstream s;
  s << "set terminal svg size 1200,480 dynamic noenhanced font 'sans,12' background rgb 'white'\n"
    << "set output " << quoted(svg_path) << "\n";
  // Each interval's rate, drawn as a step from the interval's start to its end.
  s << "$rate << EOD\n";
  double t0 = 0;
  std::uint64_t n0 = 0;
  double last_rate = 0;
  for (const ProgressSample& p : samples) {
    if (p.t_s <= t0) continue;
    last_rate = static_cast<double>(p.established - n0) / (p.t_s - t0);
    s << t0 << ' ' << last_rate << '\n';
    t0 = p.t_s;
    n0 = p.established;
  }
  s << t0 << ' ' << last_rate << "\nEOD\n";
  s << "$cdf << EOD\n";
  for (const LatencySummary::CdfPoint& c : latency.cdf) {
    s << static_cast<double>(c.ns) / 1e3 << ' ' << c.fraction << '\n';
  }
  s << "EOD\n";
  s << "set multiplot layout 1,2 title " << quoted(title) << "\n"
    << "set grid\nunset key\nset format y '%.0s%c'\n"
    << "set title 'Connections established per second (250 ms samples)'\n"
    << "set xlabel 'time since the first REQ (s)'\nset ylabel 'connections/s'\n"
    << "set xrange [0:*]\nset yrange [0:*]\n"
    << "plot $rate using 1:2 with steps linewidth 2 linecolor rgb '#1f77b4'\n"
    << "set title 'Handshake latency CDF (REQ sent to REP received)'\n"
    << "set xlabel 'latency (us)'\nset ylabel 'fraction of connections'\n"
    << "set logscale x\nset format y '%.2f'\nset yrange [0:1]\n"
    << "plot $cdf using 1:2 with steps linewidth 2 linecolor rgb '#d62728'\n"
    << "unset multiplot\n";
  return s.str();
}

}  // namespace

bool gnuplot_available() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool plot_path_writable(const std::string& svg_path) {
  const std::size_t slash = svg_path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : svg_path.substr(0, slash + 1);
  return ::access(folder.c_str(), W_OK | X_OK) == 0;
}

std::string draw_plot(const std::string& svg_path, const std::string& title,
                      const std::vector<ProgressSample>& samples, const LatencySummary& latency) {
  char script_path[] = "/tmp/fastcm-bench-plot-XXXXXX";
  const int fd = ::mkstemp(script_path);
  if (fd < 0) return std::string("cannot create the gnuplot script: ") + std::strerror(errno);
  ::close(fd);
  {
    std::ofstream out(script_path);
    out << script(svg_path, title, samples, latency);
    if (!out.flush()) {
      ::unlink(script_path);
      return std::string("cannot write the gnuplot script ") + script_path;
    }
  }
  char program[] = "gnuplot";
  char* argv[] = {program, script_path, nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, program, nullptr, nullptr, argv, environ);
  std::string error;
  if (spawned != 0) {
    error = std::string("cannot run gnuplot (") + std::strerror(spawned) +
            "); install it with: apt-get install gnuplot-nox";
  } else {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      error = "gnuplot failed (its messages are above)";
    }
  }
  ::unlink(script_path);
  return error;
}

}  // namespace fastcm::bench
