// Runs the fastcm-mad binary as a subprocess, the way a person or a script does.
#pragma once

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

// Runs fastcm-mad (FASTCM_MAD_TOOL, set by CMake) with `args`, `input` as its standard input, and
// waits for it to end. Throws std::runtime_error when the process cannot be started.
ToolRun run_fastcm_mad(const std::vector<std::string>& args, const std::string& input = "");

}  // namespace fastcm::tools::test
