// main() for fuzz targets in builds without libFuzzer (gcc, and the gcc ASan and TSan builds), so
// every build exercises them. It runs LLVMFuzzerTestOneInput over every file named on the command
// line (directories are read recursively, as libFuzzer reads corpus directories), then over -runs=N
// inputs mutated from those files by a generator seeded with -seed=S. A crash file that libFuzzer
// saved replays the same way: `fastcm_fuzz_mad_decode crash-<sha1>`.
//
// Usage: <target> [-runs=N] [-seed=S] file-or-dir...   (defaults: -runs=0, -seed=1)
// Each input is handed over in a heap buffer of exactly its size, so ASan sees a read past its end.
// Exit status: 0 when every input ran (a violated property aborts instead); 1 when no input file
// was found, as a missing corpus must not pass for a clean run; 2 on bad usage or an unreadable
// file.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tests/fuzz/fuzz_entry_point.h"

namespace {

namespace fs = std::filesystem;
using Input = std::vector<std::uint8_t>;

struct Options {
  std::uint64_t runs = 0;
  std::uint64_t seed = 1;
  std::vector<fs::path> paths;
};

// Parses "-name=value" into `out` when `arg` starts with "-name="; false when it does not.
bool parse_flag(std::string_view arg, std::string_view name, std::uint64_t& out, bool& bad) {
  if (!arg.starts_with(name)) return false;
  const std::string_view value = arg.substr(name.size());
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  bad = ec != std::errc{} || end != value.data() + value.size() || value.empty();
  return true;
}

bool parse_options(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    bool bad = false;
    if (parse_flag(arg, "-runs=", options.runs, bad) ||
        parse_flag(arg, "-seed=", options.seed, bad)) {
      if (bad) return false;
    } else if (arg.starts_with("-")) {
      return false;
    } else {
      options.paths.emplace_back(arg);
    }
  }
  return true;
}

bool read_file(const fs::path& path, std::vector<Input>& inputs) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  Input bytes(ec ? 0 : static_cast<std::size_t>(size));
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(bytes.data()),  // ifstream reads chars
          static_cast<std::streamsize>(bytes.size()));
  if (ec || !in) {
    std::fprintf(stderr, "standalone_fuzz_main: cannot read %s\n", path.c_str());
    return false;
  }
  inputs.push_back(std::move(bytes));
  return true;
}

// Reads every regular file under `paths`, in sorted order so runs are reproducible.
bool read_corpus(const std::vector<fs::path>& paths, std::vector<Input>& inputs) {
  for (const fs::path& path : paths) {
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(path, ec)) {
      for (const fs::directory_entry& entry : fs::recursive_directory_iterator(path, ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(path);
    }
    if (ec) {
      std::fprintf(stderr, "standalone_fuzz_main: cannot read %s: %s\n", path.c_str(),
                   ec.message().c_str());
      return false;
    }
    for (const fs::path& file : files) {
      if (!read_file(file, inputs)) return false;
    }
  }
  return true;
}

void run_one(const Input& input) {
  // A fresh allocation of exactly the input's size, so ASan flags any read past it.
  const std::vector<std::uint8_t> exact(input.begin(), input.end());
  LLVMFuzzerTestOneInput(exact.data(), exact.size());
}

// A few of libFuzzer's mutations: bit flips, random and boundary bytes, resizing, splicing two
// inputs, and wholly random inputs; one to three of them stacked on a corpus input.
class Mutator {
 public:
  Mutator(const std::vector<Input>& corpus, std::uint64_t seed) : corpus_(corpus), rng_(seed) {
    for (const Input& input : corpus_) max_size_ = std::max(max_size_, input.size() + 64);
  }

  Input next() {
    Input out = corpus_[below(corpus_.size())];
    for (std::size_t ops = 1 + below(3); ops > 0; --ops) mutate(out);
    return out;
  }

 private:
  static constexpr std::array<std::uint8_t, 5> kBoundaryBytes = {0x00, 0x01, 0x7f, 0x80, 0xff};

  std::size_t below(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  std::uint8_t random_byte() { return static_cast<std::uint8_t>(rng_()); }

  void mutate(Input& out) {
    switch (below(6)) {
      case 0:
        for (std::size_t n = 1 + below(8); n > 0 && !out.empty(); --n) {
          out[below(out.size())] ^= static_cast<std::uint8_t>(1U << below(8));
        }
        break;
      case 1:
        for (std::size_t n = 1 + below(4); n > 0 && !out.empty(); --n) {
          out[below(out.size())] = random_byte();
        }
        break;
      case 2:
        if (!out.empty()) out[below(out.size())] = kBoundaryBytes[below(kBoundaryBytes.size())];
        break;
      case 3: resize(out, below(max_size_ + 1)); break;
      case 4: {
        const Input& other = corpus_[below(corpus_.size())];
        const std::size_t cut = below(std::min(out.size(), other.size()) + 1);
        out.resize(cut);
        out.insert(out.end(), other.begin() + static_cast<std::ptrdiff_t>(cut), other.end());
        break;
      }
      default:
        out.clear();
        resize(out, below(max_size_ + 1));
        break;
    }
  }

  void resize(Input& out, std::size_t size) {
    const std::size_t old = out.size();
    out.resize(size);
    for (std::size_t i = old; i < size; ++i) out[i] = random_byte();
  }

  const std::vector<Input>& corpus_;
  std::mt19937_64 rng_;
  std::size_t max_size_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, options) || options.paths.empty()) {
    std::fprintf(stderr, "usage: %s [-runs=N] [-seed=S] file-or-dir...\n", argv[0]);
    return 2;
  }
  std::vector<Input> corpus;
  if (!read_corpus(options.paths, corpus)) return 2;
  if (corpus.empty()) {
    std::fprintf(stderr, "standalone_fuzz_main: no input file found\n");
    return 1;
  }
  for (const Input& input : corpus) run_one(input);
  Mutator mutator(corpus, options.seed);
  for (std::uint64_t run = 0; run < options.runs; ++run) run_one(mutator.next());
  std::printf("standalone_fuzz_main: ran %zu corpus inputs and %llu mutated inputs (seed %llu)\n",
              corpus.size(), static_cast<unsigned long long>(options.runs),
              static_cast<unsigned long long>(options.seed));
  return 0;
}
