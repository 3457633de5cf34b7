#include "tests/ibsim/simulator.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

extern char** environ;

namespace fastcm::ibsim {

namespace {

constexpr auto kPollStep = std::chrono::milliseconds(10);
constexpr auto kPortsUpBound = std::chrono::seconds(30);

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// One switch, HCAs Hca1..Hca6 on its ports 1..6 (the syntax of ibsim's shipped examples).
std::string net_file() {
  std::ostringstream net;
  net << "Switch\t8 \"Switch1\"\n";
  for (int i = 1; i <= Simulator::kHcas; ++i) net << "[" << i << "]\t\"Hca" << i << "\"[1]\n";
  for (int i = 1; i <= Simulator::kHcas; ++i) net << "\nHca\t1 \"Hca" << i << "\"\n[1]\t\"Switch1\"[" << i << "]\n";
  return net.str();
}

}  // namespace

Simulator::~Simulator() {
  for (const pid_t pid : children_) {
    if (::kill(pid, SIGKILL) == 0) (void)::waitpid(pid, nullptr, 0);
  }
  if (ibsim_.pid > 0 && ::kill(ibsim_.pid, SIGKILL) == 0) (void)::waitpid(ibsim_.pid, nullptr, 0);
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);  // the sys-<pid> folders of crashed processes too
  }
}

Process Simulator::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& log) {
  Process p;
  p.output_path = dir_ + "/" + log;
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  envs.insert(envs.end(), env.begin(), env.end());  // later entries win in getenv
  // setpriv (util-linux) makes the child die with this process, so that a test killed by
  // ctest's timeout leaves no simulator or peer behind (the destructor does not run then).
  std::vector<std::string> args{"setpriv", "--pdeathsig", "KILL"};
  args.insert(args.end(), argv.begin(), argv.end());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, dir_.c_str());
  posix_spawn_file_actions_addopen(&actions, 1, p.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(envs);
  if (posix_spawnp(&p.pid, c_args[0], &actions, nullptr, c_args.data(), c_env.data()) != 0) p.pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  if (p.pid > 0) children_.push_back(p.pid);
  return p;
}

std::vector<std::string> Simulator::sim_env(int hca, bool preload_sanitizer) const {
  std::string preload = FASTCM_UMAD2SIM;
  // The sanitizer runtime must be the first library loaded, or it aborts.
  if (preload_sanitizer && std::string_view(FASTCM_SANITIZER_RUNTIME) != "") {
    preload = std::string(FASTCM_SANITIZER_RUNTIME) + ":" + preload;
  }
  std::vector<std::string> env{"IBSIM_SOCKNAME=" + sockname_, "SIM_HOST=Hca" + std::to_string(hca),
                               "LD_PRELOAD=" + preload};
  if (preload_sanitizer && std::string_view(FASTCM_SANITIZER_OPTIONS) != "") env.emplace_back(FASTCM_SANITIZER_OPTIONS);
  return env;
}

bool Simulator::all_ports_active(std::string& last_output) {
  for (int hca = 2; hca <= kHcas; ++hca) {
    Process stat = spawn({"ibstat"}, sim_env(hca, false), "ibstat.log");
    if (!wait_exit(stat, std::chrono::seconds(10))) return false;
    last_output = output(stat);
    if (stat.exit_status != 0 || last_output.find("State: Active") == std::string::npos) return false;
    const std::size_t at = last_output.find("Base lid: ");
    if (at == std::string::npos) return false;
    lids_[hca] = last_output.substr(at + 10, last_output.find('\n', at) - at - 10);
  }
  return true;
}

bool Simulator::start(std::string& error) {
  if (std::string_view(FASTCM_UMAD2SIM).empty()) {
    error = "libumad2sim.so was not found when the build was configured: install libumad2sim0 (scripts/setup) "
            "and configure again";
    return false;
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "fastcm-ibsim-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    error = "cannot create the scratch directory " + pattern;
    return false;
  }
  dir_ = pattern;
  sockname_ = "fastcm-" + std::filesystem::path(dir_).filename().string();
  std::ofstream(dir_ + "/net") << net_file();

  ibsim_ = spawn({"ibsim", "-s", "-n", "net"}, {"IBSIM_SOCKNAME=" + sockname_}, "ibsim.log");
  if (ibsim_.pid < 0) {
    error = "cannot run ibsim (install ibsim-utils: scripts/setup)";
    return false;
  }
  std::vector<std::string> osm_env = sim_env(1, false);
  osm_env.push_back("OSM_TMP_DIR=" + dir_);
  osm_env.push_back("OSM_CACHE_DIR=" + dir_);
  Process opensm = spawn({"opensm", "-f", dir_ + "/osm.log"}, osm_env, "opensm.out");
  if (opensm.pid < 0) {
    error = "cannot run opensm (install opensm: scripts/setup)";
    return false;
  }
  // Poll ibstat (opensm's log is buffered and tells nothing in time) until every CM port is Active.
  std::string last;
  bool up = false;
  for (auto deadline = std::chrono::steady_clock::now() + kPortsUpBound; std::chrono::steady_clock::now() < deadline;) {
    Process probe = ibsim_;
    if (wait_exit(probe, std::chrono::milliseconds(0))) {
      error = "ibsim exited (status " + std::to_string(probe.exit_status) + "): " + output(ibsim_);
      return false;
    }
    if ((up = all_ports_active(last))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  (void)terminate(opensm, std::chrono::seconds(10));
  if (!up) {
    error = "the simulated ports did not become Active within 30 s; ibstat said: " + last + "; ibsim log: " +
            output(ibsim_) + "; opensm: " + output(opensm);
    return false;
  }
  return true;
}

Process Simulator::spawn_on(int hca, const std::vector<std::string>& argv) {
  std::vector<std::string> env = sim_env(hca, true);
  env.emplace_back("SIM_SET_ISSM=1");
  return spawn(argv, env, "peer" + std::to_string(++spawned_) + "-Hca" + std::to_string(hca) + ".log");
}

bool Simulator::wait_exit(Process& p, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
      p.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      std::erase(children_, p.pid);
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollStep);
  }
}

std::string Simulator::wait_line(const Process& p, const std::string& prefix, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::istringstream lines(output(p));
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with(prefix)) return line;
    }
    if (std::chrono::steady_clock::now() >= deadline) return {};
    std::this_thread::sleep_for(kPollStep);
  }
}

bool Simulator::terminate(Process& p, std::chrono::milliseconds timeout) {
  if (p.pid <= 0) return false;
  (void)::kill(p.pid, SIGTERM);
  return wait_exit(p, timeout);
}

std::string Simulator::lid_of(int hca) const { return hca >= 1 && hca <= kHcas ? lids_[hca] : std::string{}; }

std::string Simulator::output(const Process& p) {
  std::ifstream in(p.output_path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace fastcm::ibsim
