// Writes the seed corpus of the engine-ingress fuzz target (engine_ingress_fuzz.cpp): scripts in
// the format of ingress_script.h, one connection each, that reach every message handler and every
// API call in every setup state, so fuzzing starts from inputs that already get past the engine's
// first checks:
//  - for each setup, endpoint (client or server) and message: that message, unmutated, from the
//    endpoint's peer, then a step to the next timer;
//  - for each setup, endpoint and API call: the call, then a step to the next timer.
//
// Usage: fastcm_fuzz_ingress_seeds <output-dir>   (the directory is created; the output is the
// same on every run). Exits 0 after writing every seed; 1, with a message, when the directory or a
// file cannot be written; 2 on bad usage.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "tests/fuzz/ingress_script.h"

namespace {

namespace fs = std::filesystem;
using fastcm::fuzz::ApiCall;
using fastcm::fuzz::Message;
using fastcm::fuzz::Mutation;
using fastcm::fuzz::Setup;
using fastcm::fuzz::StepKind;

template <typename E>
constexpr std::uint8_t code(E e) {
  return static_cast<std::uint8_t>(e);
}

bool write_seed(const fs::path& path, const std::vector<std::uint8_t>& script) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(script.data()),  // ofstream writes chars
            static_cast<std::streamsize>(script.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fastcm_fuzz_ingress_seeds: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fastcm_fuzz_ingress_seeds <output-dir>\n");
    return 2;
  }
  const fs::path dir(argv[1]);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "fastcm_fuzz_ingress_seeds: cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  constexpr std::uint8_t kClock = code(StepKind::clock);  // then exponent 0: to the next timer
  // Setup tracks the client endpoint first, then the server's.
  for (std::uint8_t setup = 0; setup < code(Setup::count_); ++setup) {
    for (std::uint8_t endpoint = 0; endpoint < 2; ++endpoint) {
      const std::string stem = "setup" + std::to_string(setup) + "-ep" + std::to_string(endpoint);
      for (std::uint8_t message = 0; message < code(Message::count_); ++message) {
        const std::vector<std::uint8_t> script = {
            0, setup, code(StepKind::inject_from_peer), endpoint, message, code(Mutation::none),
            kClock, 0};
        if (!write_seed(dir / (stem + "-msg" + std::to_string(message)), script)) return 1;
      }
      for (std::uint8_t call = 0; call < code(ApiCall::count_); ++call) {
        const std::vector<std::uint8_t> script = {0, setup, code(StepKind::api), endpoint, call,
                                                  0, kClock, 0};
        if (!write_seed(dir / (stem + "-api" + std::to_string(call)), script)) return 1;
      }
    }
  }
  return 0;
}
