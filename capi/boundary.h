// The exception boundary of the C API: no C++ exception leaves a C call.
#pragma once

#include <new>
#include <stdexcept>
#include <system_error>

#include "fastcm/fastcm.h"
#include "fastcm/status.h"

namespace fastcm::capi {

// fastcm::Status and fastcm_status share their numbers (checked in enums.cpp).
[[nodiscard]] inline fastcm_status to_c(Status s) noexcept { return static_cast<fastcm_status>(s); }

// Runs `body` (returning fastcm_status) and turns an escaping exception into its status: bad_alloc
// is FASTCM_ERR_NO_MEMORY, invalid_argument or out_of_range (a C++ constructor rejecting a value)
// FASTCM_ERR_INVALID_ARGUMENT, system_error (a descriptor or ring could not be made)
// FASTCM_ERR_NO_RESOURCES, anything else FASTCM_ERR_INTERNAL.
template <class Body>
[[nodiscard]] fastcm_status guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return FASTCM_ERR_NO_MEMORY;
  } catch (const std::invalid_argument&) {
    return FASTCM_ERR_INVALID_ARGUMENT;
  } catch (const std::out_of_range&) {
    return FASTCM_ERR_INVALID_ARGUMENT;
  } catch (const std::system_error&) {
    return FASTCM_ERR_NO_RESOURCES;
  } catch (...) {
    return FASTCM_ERR_INTERNAL;
  }
}

}  // namespace fastcm::capi
