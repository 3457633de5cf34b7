#include "bench/fastcm_bench/contenders.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace fastcm::bench {

namespace {

[[noreturn]] void spin_until_killed() {
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // A multiply-xorshift chain: pure CPU, no memory traffic. The empty asm makes x observable, so
  // the compiler keeps the loop.
  std::uint64_t x = static_cast<std::uint64_t>(::getpid()) | 1;
  for (;;) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x *= 0x9E37'79B9'7F4A'7C15ull;
    asm volatile("" : "+r"(x));
  }
}

double reaped_children_cpu_seconds() noexcept {
  rusage usage{};
  (void)::getrusage(RUSAGE_CHILDREN, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

Contenders::Contenders(std::uint32_t count) : children_cpu_before_(reaped_children_cpu_seconds()) {
  children_.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) spin_until_killed();
    if (pid < 0) {
      const int e = errno;
      (void)stop();
      throw std::system_error(e, std::generic_category(), "fork (--contend)");
    }
    children_.push_back(pid);
  }
}

Contenders::~Contenders() { (void)stop(); }

double Contenders::stop() noexcept {
  if (children_.empty()) return 0;
  for (const pid_t pid : children_) (void)::kill(pid, SIGKILL);
  for (const pid_t pid : children_) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  children_.clear();
  return reaped_children_cpu_seconds() - children_cpu_before_;
}

}  // namespace fastcm::bench
