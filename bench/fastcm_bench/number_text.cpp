#include "bench/fastcm_bench/number_text.h"

namespace fastcm::bench {

std::string grouped(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string text;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text.push_back(',');
    text.push_back(digits[i]);
  }
  return text;
}

std::string grouped(double x) { return grouped(static_cast<std::uint64_t>(x + 0.5)); }

}  // namespace fastcm::bench
