// --contend N: N CPU-bound child processes that run beside the storm, so a run measures the engine
// on cores it shares, as a storage appliance's own pollers would share them. Children of the tool
// at its nice value, in its session: the scheduler's autogroups weigh them and the engine alike
// (a `sha256sum /dev/zero` started from another shell would sit in an autogroup of its own and
// take half the machine whatever its count).
//
// Thread contract: one thread creates, stops and destroys a Contenders. Each child only spins (no
// allocation, no locks: it is forked from a process with threads) until it is killed, and dies
// with the tool (PR_SET_PDEATHSIG) if the tool dies first.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace fastcm::bench {

class Contenders {
 public:
  // Starts `count` children (none for 0). Throws std::system_error when fork fails (the children
  // already started are killed first).
  explicit Contenders(std::uint32_t count);
  // Stops them (see stop()).
  ~Contenders();
  Contenders(const Contenders&) = delete;
  Contenders& operator=(const Contenders&) = delete;

  // Kills and reaps every child; returns the CPU seconds they used (user + system), which says
  // how much of the machine they took from the engine. 0 once stopped.
  double stop() noexcept;

 private:
  std::vector<pid_t> children_;
  double children_cpu_before_ = 0;  // this process's reaped children's CPU time at the start
};

}  // namespace fastcm::bench
