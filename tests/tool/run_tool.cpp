#include "tests/tool/run_tool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

extern char** environ;  // NOLINT: POSIX declares it nowhere in a header

namespace fastcm::tools::test {

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

// Starts `program` with standard input, output and error on the three files.
pid_t spawn(const std::string& program, const std::vector<std::string>& args,
            const std::filesystem::path& in_path, const std::filesystem::path& out_path,
            const std::filesystem::path& err_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);

  std::vector<std::string> argv_text{program};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "posix_spawn " + program);
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

}  // namespace

ScratchDir::ScratchDir() {
  std::string pattern =
      (std::filesystem::path(::testing::TempDir()) / "fastcm-tool-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

RunningTool::RunningTool(const std::string& program, const std::vector<std::string>& args) {
  std::ofstream(dir_.path() / "stdin", std::ios::binary).flush();
  pid_ = spawn(program, args, dir_.path() / "stdin", dir_.path() / "stdout",
               dir_.path() / "stderr");
}

RunningTool::~RunningTool() {
  if (waited_) return;
  ::kill(pid_, SIGKILL);
  (void)wait_status(pid_);
}

bool RunningTool::wait_for_stderr(const std::string& text, std::chrono::milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < give_up) {
    if (err().find(text) != std::string::npos) return true;
    if (waitpid(pid_, nullptr, WNOHANG | WNOWAIT) == pid_) return false;  // ended: look no more
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return err().find(text) != std::string::npos;
}

void RunningTool::signal(int signal) const { ::kill(pid_, signal); }

std::string RunningTool::err() const { return read_file(dir_.path() / "stderr"); }

ToolRun RunningTool::wait() {
  ToolRun run;
  run.exit_code = wait_status(pid_);
  waited_ = true;
  run.out = read_file(dir_.path() / "stdout");
  run.err = err();
  return run;
}

ToolRun run_tool(const std::string& program, const std::vector<std::string>& args,
                 const std::string& input) {
  const ScratchDir dir;
  const std::filesystem::path in_path = dir.path() / "stdin";
  std::ofstream(in_path, std::ios::binary) << input;
  const pid_t pid = spawn(program, args, in_path, dir.path() / "stdout", dir.path() / "stderr");
  ToolRun run;
  run.exit_code = wait_status(pid);
  run.out = read_file(dir.path() / "stdout");
  run.err = read_file(dir.path() / "stderr");
  return run;
}

}  // namespace fastcm::tools::test
