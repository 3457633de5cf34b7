// Numbers as the table and the progress line print them.
#pragma once

#include <cstdint>
#include <string>

namespace fastcm::bench {

// 1234567 as "1,234,567". Thread contract: pure.
[[nodiscard]] std::string grouped(std::uint64_t n);
// Rounded to the nearest integer, then grouped.
[[nodiscard]] std::string grouped(double x);

}  // namespace fastcm::bench
