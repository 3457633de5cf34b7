#include "examples/rping_common/event_loop.h"

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstring>

namespace fastcm::examples {

namespace {

constexpr std::uint64_t kSignalTag = ~std::uint64_t{0};

sigset_t stop_signals() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void EventLoop::block_stop_signals() noexcept {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

EventLoop::EventLoop() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {
  const sigset_t set = stop_signals();
  signal_fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kSignalTag;
  if (epoll_fd_ >= 0 && signal_fd_ >= 0 && epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, signal_fd_, &ev) != 0) {
    close(signal_fd_);
    signal_fd_ = -1;
  }
}

EventLoop::~EventLoop() {
  if (signal_fd_ >= 0) close(signal_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

bool EventLoop::watch(int fd, std::uint32_t tag) noexcept {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

std::size_t EventLoop::wait(int timeout_ms, std::span<std::uint32_t> ready) noexcept {
  std::array<epoll_event, 8> events{};
  const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms);
  std::size_t count = 0;
  for (int i = 0; i < n; ++i) {
    const epoll_event& ev = events[static_cast<std::size_t>(i)];
    if (ev.data.u64 == kSignalTag) {
      signalfd_siginfo info{};
      while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        stop_requested_ = true;
        stop_signal_ = sigabbrev_np(static_cast<int>(info.ssi_signo)) != nullptr
                           ? std::string("SIG") + sigabbrev_np(static_cast<int>(info.ssi_signo))
                           : "a signal";
      }
    } else if (count < ready.size()) {
      ready[count++] = static_cast<std::uint32_t>(ev.data.u64);
    }
  }
  return count;
}

}  // namespace fastcm::examples
