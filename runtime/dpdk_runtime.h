// The DPDK EAL for the sharded engine, in one of two explicit modes.
//
// Engine-owned: the engine initialises EAL itself, without hugepages, shared config, PCI or
// telemetry, with EAL's log routed to a fastcm log sink, and gives the calling thread back its CPU
// affinity (EAL pins it to the main lcore). Application-owned: an embedding host (SPDK-style) has
// initialised EAL already; the runtime only checks that and never calls rte_eal_init.
//
// EAL can be initialised once per process, and a failed initialisation cannot be retried
// (DPDK 22.11 keeps its once-only flag set after a failure): start_owned() makes one attempt per process and reports every later call
// as an error. Nothing here throws; errors come back as a DpdkStatus.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace fastcm::shards {

enum class DpdkErrc : std::uint8_t {
  ok,
  already_initialized,  // EAL is up already: the host owns it, use attach_hosted()
  init_failed,          // rte_eal_init failed now or earlier in this process (fatal, no retry)
  not_initialized,      // application-owned mode, but the host has not initialised EAL
  invalid_argument,     // a configuration value out of range
  system_error,         // an OS call (affinity, log stream) failed
  register_failed,      // rte_thread_register failed (no free lcore id)
  pool_create_failed,   // rte_mempool creation failed
};

[[nodiscard]] std::string_view to_string(DpdkErrc code) noexcept;

// The outcome of a DPDK call: `code` and, when not ok, a message naming the cause.
struct DpdkStatus {
  DpdkErrc code = DpdkErrc::ok;
  std::string message;
  [[nodiscard]] bool ok() const noexcept { return code == DpdkErrc::ok; }
};

// Where engine-owned EAL log text goes. `write` gets EAL's text in line-sized chunks (not
// NUL-terminated) from whichever thread logs, one call at a time (the stdio stream's lock
// serialises them); it must not call into DPDK. A null `write` leaves EAL logging to stderr.
struct DpdkLogSink {
  void (*write)(void* ctx, std::string_view text) = nullptr;
  void* ctx = nullptr;
};

// EAL's text into fastcm's log (logging/log.h), each message at the level DPDK gave it.
[[nodiscard]] DpdkLogSink fastcm_log_sink() noexcept;

struct DpdkOwnedConfig {
  std::uint32_t memory_mb = 64;            // EAL heap (-m), from plain pages
  // --log-level value, e.g. "error" or "lib.eal:info"; empty: fastcm's level (fastcm/log.h) as
  // it is when EAL starts.
  std::string log_level;
  DpdkLogSink log = fastcm_log_sink();
};

class DpdkRuntime {
 public:
  enum class Mode : std::uint8_t { engine_owned, application_owned };

  // Engine-owned mode: initialises EAL with --no-huge --no-shconf --no-pci --no-telemetry, one
  // lcore (lcore 0 on the first CPU of the caller's affinity), `config.memory_mb` and
  // `config.log_level`; restores the calling thread's affinity afterwards, also on failure.
  // Thread: call from one thread, before any other DPDK use in the process.
  // Ownership: on success `*out` holds the runtime; it must outlive every DPDK object of the engine.
  // Errors: already_initialized when EAL is up (the host owns it: use attach_hosted()),
  // init_failed when rte_eal_init fails or failed before in this process (never retried),
  // invalid_argument for memory_mb == 0, system_error when reading the affinity or opening the
  // log stream fails (EAL untouched, may be retried), or when restoring the affinity fails after
  // a successful init (EAL stays up: attach_hosted() then gives a runtime).
  [[nodiscard]] static DpdkStatus start_owned(const DpdkOwnedConfig& config,
                                              std::unique_ptr<DpdkRuntime>* out) noexcept;

  // Application-owned mode: uses the host's EAL and never initialises it.
  // Thread: any thread, after the host's rte_eal_init returned success.
  // Errors: not_initialized when EAL has no lcore yet (the host has not initialised it).
  [[nodiscard]] static DpdkStatus attach_hosted(std::unique_ptr<DpdkRuntime>* out) noexcept;

  DpdkRuntime(const DpdkRuntime&) = delete;
  DpdkRuntime& operator=(const DpdkRuntime&) = delete;
  // Engine-owned: gives EAL's log back to stderr and closes the sink stream. EAL itself stays up
  // for the rest of the process (it cannot be initialised again, so cleanup would gain nothing).
  ~DpdkRuntime();

  [[nodiscard]] Mode mode() const noexcept { return mode_; }

  // Gives the calling non-EAL thread (a shard or poller std::thread) an lcore id, so it gets
  // per-lcore mempool caches. Thread: the thread to register, once, before its first pool use.
  // Errors: register_failed when every lcore id (RTE_MAX_LCORE) is taken.
  [[nodiscard]] DpdkStatus register_thread() const noexcept;
  // Frees the calling thread's lcore id for reuse; its cached pool objects stay in that lcore's
  // cache for the next owner. Thread: a thread that registered, after its last pool use.
  void unregister_thread() const noexcept;

 private:
  explicit DpdkRuntime(Mode mode) noexcept : mode_(mode) {}

  Mode mode_;
  std::FILE* log_stream_ = nullptr;  // engine-owned with a sink: the fopencookie stream EAL writes
  DpdkLogSink log_sink_;
};

}  // namespace fastcm::shards
