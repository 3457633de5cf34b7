// Whether ThreadSanitizer instruments this build (GCC defines __SANITIZE_THREAD__, clang has the
// feature). For orders the hardware and DPDK's rings give but TSan cannot see inside DPDK: code
// repeats them in atomics of its own only where TSan is watching, and pays nothing elsewhere.
#pragma once

namespace fastcm::runtime {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

}  // namespace fastcm::runtime
