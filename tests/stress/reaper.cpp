#include "tests/stress/reaper.h"

namespace fastcm::stress {

Reaper::Reaper(Engine& engine)
    : engine_(engine),
      checker_([this](Probe& probe) { finish_destroy(engine_, probe, Caller::other_thread); }),
      destroyer_([this](Probe& probe) {
        if (start_destroy(engine_, probe)) checker_.push(probe);
      }) {}

Reaper::~Reaper() { stop(); }

void Reaper::hand(Probe& probe) { destroyer_.push(probe); }

void Reaper::stop() {
  destroyer_.stop();  // first: it feeds the checker
  checker_.stop();
}

void Reaper::Stage::push(Probe& probe) {
  {
    const std::scoped_lock guard(lock_);
    queue_.push_back(&probe);
  }
  wake_.notify_one();
}

void Reaper::Stage::stop() {
  {
    const std::scoped_lock guard(lock_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

template <class Step>
void Reaper::Stage::run(Step step) {
  std::unique_lock lock(lock_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Probe* probe = queue_.front();
    queue_.pop_front();
    lock.unlock();
    step(*probe);
    lock.lock();
  }
}

}  // namespace fastcm::stress
