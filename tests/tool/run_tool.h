// Runs the project's command-line tools (fastcm-mad, fastcm-bench) as subprocesses, the way a
// person or a script does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace fastcm::tools::test {

// A fresh directory under the test temp dir, removed with everything in it on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct ToolRun {
  int exit_code = -1;  // the exit status, or minus the signal number that ended the process
  std::string out;     // everything written to standard output
  std::string err;     // everything written to standard error
};

// A tool started in the background, its standard output and error going to files of its own
// (standard input is empty), so a test can wait for what it prints while it runs.
class RunningTool {
 public:
  // Starts `program` with `args`. Throws std::system_error when the process cannot be started.
  RunningTool(const std::string& program, const std::vector<std::string>& args);
  // Kills the process (SIGKILL) if it has not been waited for.
  ~RunningTool();
  RunningTool(const RunningTool&) = delete;
  RunningTool& operator=(const RunningTool&) = delete;

  // Polls standard error every 10 ms until it contains `text` (true), the process has ended or
  // `limit` has passed (false).
  [[nodiscard]] bool wait_for_stderr(const std::string& text, std::chrono::milliseconds limit);
  // Sends `signal` to the process.
  void signal(int signal) const;
  // Waits for the process to end and returns its exit status and output.
  ToolRun wait();
  [[nodiscard]] std::string err() const;

 private:
  ScratchDir dir_;
  pid_t pid_ = -1;
  bool waited_ = false;
};

// Runs `program` with `args`, `input` as its standard input, and waits for it to end. Throws
// std::system_error when the process cannot be started.
ToolRun run_tool(const std::string& program, const std::vector<std::string>& args,
                 const std::string& input = "");

}  // namespace fastcm::tools::test
