// The range check every bounded structure makes on its configured size before allocating.
// Thread contract: any thread. Errors: std::invalid_argument naming `what` and the range.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace fastcm::runtime {

// Returns `capacity` when it is 1..max; throws std::invalid_argument otherwise.
inline std::uint32_t checked_capacity(const char* what, std::uint32_t capacity, std::uint32_t max) {
  if (capacity == 0 || capacity > max) {
    throw std::invalid_argument(std::string(what) + " capacity must be 1.." + std::to_string(max));
  }
  return capacity;
}

}  // namespace fastcm::runtime
