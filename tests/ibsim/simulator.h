// A private simulated InfiniBand subnet for one test: ibsim with a net file of its own (one
// switch, six single-port HCAs), its own IBSIM_SOCKNAME (abstract socket: tests run in parallel),
// ports brought up by opensm, which then stops (the LIDs stay, and a running SM's SMInfo would
// reach umad2sim processes that set IsSM). Processes run under umad2sim from a scratch directory
// (umad2sim makes ./sys-<pid> there), each attached to one HCA.
//
// Everything is cleaned up by the destructor: processes killed, the scratch directory (with any
// sys-<pid> a crash left) removed. Thread contract: one test thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace fastcm::ibsim {

// A process started by Simulator, with its output (stdout and stderr) in a file.
struct Process {
  pid_t pid = -1;
  std::string output_path;
  int exit_status = -1;  // set by Simulator::wait_exit
};

class Simulator {
 public:
  // HCA "Hca1" ran opensm: its node keeps the SM LID (traps go there) and its one IsSM slot may
  // stay taken, so CMs run on the others. "Hca6" runs nothing: a port nobody listens on.
  static constexpr int kHcas = 6;

  Simulator() = default;
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Starts ibsim, brings the ports up with opensm, stops opensm. False with `error` (including
  // the simulator's log) when any step fails within its bound.
  [[nodiscard]] bool start(std::string& error);

  // Runs `argv` under umad2sim attached to HCA `hca` (1-based), with IsSM set (ibsim delivers a
  // request to QP1 only to an IsSM client). Sanitizer builds preload the sanitizer runtime first.
  Process spawn_on(int hca, const std::vector<std::string>& argv);

  // Polls until `p` exits or `timeout` passes; true when it exited (exit_status set).
  bool wait_exit(Process& p, std::chrono::milliseconds timeout);
  // Polls until a line of `p`'s output starts with `prefix`; returns that line, or "" at the timeout.
  std::string wait_line(const Process& p, const std::string& prefix, std::chrono::milliseconds timeout);
  // SIGTERM, then waits (bounded) for the exit.
  bool terminate(Process& p, std::chrono::milliseconds timeout);
  [[nodiscard]] static std::string output(const Process& p);
  // The base LID opensm gave HCA `hca` (2..kHcas), as ibstat reported it; "" before start().
  [[nodiscard]] std::string lid_of(int hca) const;

 private:
  Process spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log);
  [[nodiscard]] std::vector<std::string> sim_env(int hca, bool preload_sanitizer) const;
  bool all_ports_active(std::string& last_output);

  std::string dir_;
  std::string sockname_;
  Process ibsim_;
  std::vector<pid_t> children_;
  std::string lids_[kHcas + 1];
  int spawned_ = 0;
};

}  // namespace fastcm::ibsim
