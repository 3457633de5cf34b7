#include "tests/wire/tshark_decode.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

extern char** environ;  // NOLINT: POSIX declares it for posix_spawn callers

namespace fastcm::wire_test {

namespace {

using nlohmann::json;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs argv with stdout and stderr sent to files; returns the wait status.
int run_to_files(const std::vector<std::string>& argv, const std::filesystem::path& out,
                 const std::filesystem::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv.front().c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw std::runtime_error("cannot start " + argv.front() + ": " + std::strerror(rc));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  return status;
}

// Appends the items of a tshark JSON subtree to `items`, descending into nested "_tree" objects.
void flatten(const json& tree, ItemMap& items) {
  for (const auto& [key, value] : tree.items()) {
    const bool subtree = key.size() > 5 && key.compare(key.size() - 5, 5, "_tree") == 0;
    if (subtree) {
      if (value.is_object()) {
        flatten(value, items);
      } else if (value.is_array()) {
        for (const json& t : value) flatten(t, items);
      } else {
        throw std::runtime_error("tshark JSON: subtree " + key + " is not an object");
      }
      continue;
    }
    std::vector<std::string>& values = items[key];
    if (value.is_string()) {
      values.push_back(value.get<std::string>());
    } else if (value.is_array()) {
      for (const json& v : value) {
        if (!v.is_string()) throw std::runtime_error("tshark JSON: item " + key + " is not text");
        values.push_back(v.get<std::string>());
      }
    } else {
      throw std::runtime_error("tshark JSON: item " + key + " is neither text nor a list");
    }
  }
}

std::string text_of(const json& layer, const char* key) {
  const auto it = layer.find(key);
  return it != layer.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace

std::vector<std::string> tshark_arguments(const std::filesystem::path& pcap) {
  std::vector<std::string> args{"-r", pcap.string(), "-n", "-T", "json", "--no-duplicate-keys"};
  for (const char* heuristic : {"infiniband_sdp", "iser", "nvme-rdma", "lnet"}) {
    args.emplace_back("--disable-protocol");
    args.emplace_back(heuristic);
  }
  return args;
}

std::vector<TsharkFrame> decode_with_tshark(const std::string& tshark,
                                            const std::filesystem::path& pcap,
                                            const std::filesystem::path& json_out) {
  if (tshark.empty() || tshark.ends_with("NOTFOUND")) {
    throw std::runtime_error(
        "tshark was not found when CMake configured the build: install it "
        "(DEBIAN_FRONTEND=noninteractive apt-get install -y tshark) and re-run cmake");
  }
  std::vector<std::string> argv{tshark};
  for (std::string& a : tshark_arguments(pcap)) argv.push_back(std::move(a));
  std::filesystem::path err = json_out;
  err += ".stderr";
  const int status = run_to_files(argv, json_out, err);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ostringstream msg;
    msg << tshark << " failed (wait status " << status << ") on " << pcap << ": " << read_file(err);
    throw std::runtime_error(msg.str());
  }
  return parse_tshark_json(read_file(json_out));
}

std::vector<TsharkFrame> parse_tshark_json(std::string_view text) {
  const json packets = json::parse(text);
  if (!packets.is_array()) throw std::runtime_error("tshark JSON: not a list of packets");
  std::vector<TsharkFrame> frames;
  for (const json& packet : packets) {
    const json& layers = packet.at("_source").at("layers");
    TsharkFrame frame;
    frame.number = std::stoul(layers.at("frame").at("frame.number").get<std::string>());
    const auto ib = layers.find("infiniband");
    if (ib == layers.end()) {
      throw std::runtime_error("tshark JSON: frame " + std::to_string(frame.number) +
                               " was not dissected as InfiniBand");
    }
    if (const auto mad = ib->find("infiniband.mad_tree"); mad != ib->end()) {
      flatten(*mad, frame.mad_header);
    }
    if (const auto cm = ib->find("infiniband.smplid.smpdata_tree"); cm != ib->end()) {
      frame.cm_body.emplace();
      flatten(*cm, *frame.cm_body);
    }
    frame.mad_bytes = text_of(*ib, "infiniband.mad");
    frame.cm_data_bytes = text_of(*ib, "infiniband.smplid.smpdata");
    frames.push_back(std::move(frame));
  }
  return frames;
}

}  // namespace fastcm::wire_test
