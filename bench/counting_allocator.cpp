// See counting_allocator.h. The replacements forward to glibc's __libc_* entry points, so
// nothing here allocates by itself; a thread-local guard keeps backtrace() (which may allocate on
// its first use) from counting or tracing itself.
#include "bench/counting_allocator.h"

#include <execinfo.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

extern "C" {
void* __libc_malloc(std::size_t size) noexcept;
void* __libc_calloc(std::size_t count, std::size_t size) noexcept;
void* __libc_realloc(void* ptr, std::size_t size) noexcept;
void* __libc_memalign(std::size_t alignment, std::size_t size) noexcept;
void __libc_free(void* ptr) noexcept;
}

namespace {

// Relaxed throughout: the window is opened and closed by the thread whose work is measured, and
// other threads' allocations are counted on a best-effort basis (a count, no data behind it).
std::atomic<bool> g_counting{false};
std::atomic<std::uint64_t> g_count{0};
std::atomic<std::uint32_t> g_traces_left{0};
thread_local bool t_in_hook = false;

constexpr int kTraceDepth = 24;

void count() noexcept {
  if (!g_counting.load(std::memory_order_relaxed) || t_in_hook) return;
  g_count.fetch_add(1, std::memory_order_relaxed);
  std::uint32_t left = g_traces_left.load(std::memory_order_relaxed);
  while (left != 0 &&
         !g_traces_left.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
  }
  if (left == 0) return;
  t_in_hook = true;
  void* frames[kTraceDepth];
  const int depth = backtrace(frames, kTraceDepth);
  static constexpr char kHeader[] = "--- allocation in the counting window:\n";
  static_cast<void>(write(STDERR_FILENO, kHeader, sizeof(kHeader) - 1));
  backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  t_in_hook = false;
}

void* counted_new(std::size_t size) {
  count();
  void* p = __libc_malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* counted_new_aligned(std::size_t size, std::align_val_t align) {
  count();
  void* p = __libc_memalign(static_cast<std::size_t>(align), size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace fastcm::bench {

void start_counting(std::uint32_t traces) noexcept {
  // Loads libgcc's unwinder now, outside any window: backtrace() allocates on its first call.
  static const bool unwinder_loaded = [] {
    void* frame = nullptr;
    return backtrace(&frame, 1) >= 0;
  }();
  static_cast<void>(unwinder_loaded);
  g_count.store(0, std::memory_order_relaxed);
  g_traces_left.store(traces, std::memory_order_relaxed);
  g_counting.store(true, std::memory_order_relaxed);
}

std::uint64_t stop_counting() noexcept {
  g_counting.store(false, std::memory_order_relaxed);
  return g_count.load(std::memory_order_relaxed);
}

}  // namespace fastcm::bench

extern "C" {

void* malloc(std::size_t size) noexcept {
  count();
  return __libc_malloc(size);
}
void* calloc(std::size_t n, std::size_t size) noexcept {
  count();
  return __libc_calloc(n, size);
}
void* realloc(void* ptr, std::size_t size) noexcept {
  count();
  return __libc_realloc(ptr, size);
}
void free(void* ptr) noexcept { __libc_free(ptr); }
void* memalign(std::size_t alignment, std::size_t size) noexcept {
  count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  count();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

void* operator new(std::size_t size) { return counted_new(size); }
void* operator new[](std::size_t size) { return counted_new(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  return counted_new_aligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return counted_new_aligned(size, align);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  count();
  return __libc_malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  count();
  return __libc_malloc(size == 0 ? 1 : size);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  count();
  return __libc_memalign(static_cast<std::size_t>(align), size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  count();
  return __libc_memalign(static_cast<std::size_t>(align), size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  __libc_free(p);
}
