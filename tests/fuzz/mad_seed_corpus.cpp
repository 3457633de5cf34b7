// Writes the seed corpus of the MAD fuzz target: valid encoded MADs of every CM attribute, with
// every method the codec allows for it. Each seed comes from the codec's own encoder, for the
// default message and for messages decoded from random bytes (redrawn until the body decodes), so
// the seeds carry varied values in every field and zeroes in every reserved bit.
//
// Usage: fastcm_fuzz_mad_seeds <output-dir>   (the directory is created; the output is the same on
// every run). Exits 0 after writing every seed; 1, with a message, when a file cannot be written or
// a message cannot be drawn or encoded; 2 on bad usage.
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>
#include <type_traits>

#include "engine/mad/codec.h"
#include "tests/fuzz/cm_message_types.h"

namespace {

namespace fs = std::filesystem;
namespace mad = fastcm::mad;
using Mad = std::array<std::uint8_t, mad::kMadSize>;

constexpr int kRandomSeedsPerMethod = 4;
// A REQ body decodes from about 1 in 200 random draws (MTU, two packet rates, transport types).
constexpr int kMaxDraws = 100'000;

template <typename M>
bool draw_message(std::mt19937_64& rng, M& msg) {
  Mad bytes{};
  for (int draw = 0; draw < kMaxDraws; ++draw) {
    for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(rng());
    if (mad::decode_body(mad::ConstMadSpan(bytes), msg).ok()) return true;
  }
  return false;
}

mad::MadHeader draw_header(std::mt19937_64& rng, mad::Method method, mad::AttrId attr) {
  mad::MadHeader header = mad::cm_header(method, attr, rng(), static_cast<std::uint32_t>(rng()));
  header.status = static_cast<std::uint16_t>(rng());
  header.class_specific = static_cast<std::uint16_t>(rng());
  return header;
}

bool write_seed(const fs::path& path, const Mad& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),  // ofstream writes chars
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fastcm_fuzz_mad_seeds: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

template <typename M>
bool write_seeds_of(const fs::path& dir, std::mt19937_64& rng) {
  constexpr mad::AttrId attr = mad::WireLayout<M>::kAttr;
  for (const mad::Method method : fastcm::fuzz::kMethods) {
    if (!mad::method_allowed(attr, method)) continue;
    for (int n = 0; n <= kRandomSeedsPerMethod; ++n) {
      M msg{};
      if (n > 0 && !draw_message(rng, msg)) {
        std::fprintf(stderr, "fastcm_fuzz_mad_seeds: no valid %s body in %d draws\n",
                     std::string(mad::attr_name(attr)).c_str(), kMaxDraws);
        return false;
      }
      const mad::MadHeader header =
          n == 0 ? mad::cm_header(method, attr, 1) : draw_header(rng, method, attr);
      Mad bytes{};
      if (const mad::CodecStatus s = mad::encode(header, msg, bytes); !s.ok()) {
        std::fprintf(stderr, "fastcm_fuzz_mad_seeds: %s does not encode: %s\n",
                     std::string(mad::attr_name(attr)).c_str(), s.describe().c_str());
        return false;
      }
      const std::string name = std::string(mad::attr_name(attr)) + "-method" +
                               std::to_string(static_cast<unsigned>(method)) + "-" +
                               std::to_string(n) + ".mad";
      if (!write_seed(dir / name, bytes)) return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fastcm_fuzz_mad_seeds <output-dir>\n");
    return 2;
  }
  const fs::path dir(argv[1]);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "fastcm_fuzz_mad_seeds: cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  std::mt19937_64 rng(0x5eed'cafe);
  bool ok = true;
  fastcm::fuzz::for_each_message_type([&]<typename M>(std::type_identity<M>) {
    ok = ok && write_seeds_of<M>(dir, rng);
  });
  return ok ? 0 : 1;
}
