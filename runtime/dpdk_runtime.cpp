#include "runtime/dpdk_runtime.h"

#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <cstring>
#include <vector>

#include "logging/log.h"

namespace fastcm::shards {
namespace {

// One engine-owned rte_eal_init attempt per process: EAL cannot be initialised twice, and after a
// failed attempt a retry fails too. Only start_owned() touches it, with acq_rel exchanges.
enum class OwnedAttempt : std::uint8_t { none, started, succeeded, failed };
std::atomic<OwnedAttempt> g_owned_attempt{OwnedAttempt::none};

DpdkStatus error(DpdkErrc code, std::string message) {
  return DpdkStatus{code, std::move(message)};
}

std::string errno_text(int err) { return std::string(std::strerror(err)); }

ssize_t write_to_sink(void* cookie, const char* buf, std::size_t size) {
  const auto* sink = static_cast<const DpdkLogSink*>(cookie);
  sink->write(sink->ctx, std::string_view(buf, size));
  return static_cast<ssize_t>(size);
}

// DPDK's level of the message being written: rte_vlog records it just before it formats into the
// log stream and flushes, which runs the sink on the same thread.
LogLevel current_dpdk_level() noexcept {
  switch (rte_log_cur_msg_loglevel()) {
    case RTE_LOG_EMERG:
    case RTE_LOG_ALERT:
    case RTE_LOG_CRIT:
    case RTE_LOG_ERR: return LogLevel::error;
    case RTE_LOG_WARNING: return LogLevel::warning;
    case RTE_LOG_NOTICE: return LogLevel::notice;
    case RTE_LOG_INFO: return LogLevel::info;
    default: return LogLevel::debug;
  }
}

void write_to_fastcm_log(void* /*ctx*/, std::string_view text) {
  const LogLevel level = current_dpdk_level();
  if (logging::enabled(level)) logging::write_text(level, text);
}

// The --log-level that lets through what fastcm's level would write (DPDK's numbers: 1 emergency
// ... 8 debug); at LogLevel::off only EAL's critical messages.
std::string dpdk_log_level(LogLevel level) {
  switch (level) {
    case LogLevel::off: return "2";
    case LogLevel::error: return "4";
    case LogLevel::warning: return "5";
    case LogLevel::notice: return "6";
    case LogLevel::info: return "7";
    case LogLevel::debug: return "8";
  }
  return "4";
}

// A line-buffered stdio stream whose text goes to `sink`, for rte_openlog_stream.
std::FILE* open_sink_stream(DpdkLogSink* sink) {
  cookie_io_functions_t io{};
  io.write = write_to_sink;
  std::FILE* stream = fopencookie(sink, "w", io);
  if (stream != nullptr) std::setvbuf(stream, nullptr, _IOLBF, 0);
  return stream;
}

// The first CPU the calling thread may run on, for EAL's main lcore.
std::size_t first_cpu(const cpu_set_t& set) {
  for (std::size_t cpu = 0; cpu < static_cast<std::size_t>(CPU_SETSIZE); ++cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  return 0;
}

}  // namespace

DpdkLogSink fastcm_log_sink() noexcept { return DpdkLogSink{write_to_fastcm_log, nullptr}; }

std::string_view to_string(DpdkErrc code) noexcept {
  switch (code) {
    case DpdkErrc::ok: return "ok";
    case DpdkErrc::already_initialized: return "already_initialized";
    case DpdkErrc::init_failed: return "init_failed";
    case DpdkErrc::not_initialized: return "not_initialized";
    case DpdkErrc::invalid_argument: return "invalid_argument";
    case DpdkErrc::system_error: return "system_error";
    case DpdkErrc::register_failed: return "register_failed";
    case DpdkErrc::pool_create_failed: return "pool_create_failed";
  }
  return "unknown";
}

DpdkStatus DpdkRuntime::start_owned(const DpdkOwnedConfig& config,
                                    std::unique_ptr<DpdkRuntime>* out) noexcept {
  constexpr const char* kHostHint =
      "EAL is already initialised in this process: when the application owns EAL, use "
      "DpdkRuntime::attach_hosted (application-owned mode)";
  if (config.memory_mb == 0) return error(DpdkErrc::invalid_argument, "memory_mb must be > 0");
  // A host's EAL is detected before touching its log stream; rte_eal_init's own EALREADY check
  // below covers a host that initialises concurrently.
  if (rte_lcore_count() > 0) return error(DpdkErrc::already_initialized, kHostHint);
  OwnedAttempt expected = OwnedAttempt::none;
  if (!g_owned_attempt.compare_exchange_strong(expected, OwnedAttempt::started,
                                               std::memory_order_acq_rel)) {
    if (expected == OwnedAttempt::failed) {
      return error(DpdkErrc::init_failed,
                   "EAL initialisation failed earlier in this process and cannot be retried");
    }
    return error(DpdkErrc::already_initialized,
                 "EAL was already initialised by DpdkRuntime::start_owned in this process");
  }

  std::unique_ptr<DpdkRuntime> runtime(new DpdkRuntime(Mode::engine_owned));
  cpu_set_t saved_affinity;
  CPU_ZERO(&saved_affinity);
  if (const int rc = pthread_getaffinity_np(pthread_self(), sizeof(saved_affinity), &saved_affinity);
      rc != 0) {
    g_owned_attempt.store(OwnedAttempt::none, std::memory_order_release);  // EAL untouched
    return error(DpdkErrc::system_error, "pthread_getaffinity_np: " + errno_text(rc));
  }
  if (config.log.write != nullptr) {
    runtime->log_sink_ = config.log;
    runtime->log_stream_ = open_sink_stream(&runtime->log_sink_);
    if (runtime->log_stream_ == nullptr) {
      g_owned_attempt.store(OwnedAttempt::none, std::memory_order_release);  // EAL untouched
      return error(DpdkErrc::system_error, "fopencookie for the EAL log sink failed");
    }
    // Before init, so EAL's initialisation messages reach the sink too.
    rte_openlog_stream(runtime->log_stream_);
  }

  std::string memory = std::to_string(config.memory_mb);
  std::string lcores = "0@" + std::to_string(first_cpu(saved_affinity));
  std::string log_level =
      "--log-level=" + (config.log_level.empty() ? dpdk_log_level(fastcm::log_level()) : config.log_level);
  std::array<std::string, 10> args = {"fastcm", "--no-huge", "--no-shconf",   "--no-pci",
                                      "--no-telemetry", "-m", memory, "--lcores",
                                      lcores,   log_level};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  const int rc = rte_eal_init(static_cast<int>(args.size()), argv.data());
  const int init_errno = rte_errno;
  // EAL pinned this thread to the main lcore's CPU; threads created later would inherit that.
  const int affinity_rc =
      pthread_setaffinity_np(pthread_self(), sizeof(saved_affinity), &saved_affinity);
  if (rc < 0) {
    g_owned_attempt.store(OwnedAttempt::failed, std::memory_order_release);
    if (init_errno == EALREADY) return error(DpdkErrc::already_initialized, kHostHint);
    return error(DpdkErrc::init_failed, "rte_eal_init failed (fatal for the process, not retried): " +
                                            std::string(rte_strerror(init_errno)));
  }
  g_owned_attempt.store(OwnedAttempt::succeeded, std::memory_order_release);
  if (affinity_rc != 0) {
    return error(DpdkErrc::system_error,
                 "EAL is initialised but restoring the caller's CPU affinity failed: " +
                     errno_text(affinity_rc));
  }
  *out = std::move(runtime);
  return {};
}

DpdkStatus DpdkRuntime::attach_hosted(std::unique_ptr<DpdkRuntime>* out) noexcept {
  if (rte_lcore_count() == 0) {
    return error(DpdkErrc::not_initialized,
                 "application-owned mode: the host must call rte_eal_init before the engine starts "
                 "(or use DpdkRuntime::start_owned to let the engine initialise EAL)");
  }
  out->reset(new DpdkRuntime(Mode::application_owned));
  return {};
}

DpdkRuntime::~DpdkRuntime() {
  if (log_stream_ != nullptr) {
    rte_openlog_stream(nullptr);  // back to EAL's default (stderr) before the sink goes away
    std::fclose(log_stream_);
  }
}

DpdkStatus DpdkRuntime::register_thread() const noexcept {
  if (rte_thread_register() != 0) {
    return error(DpdkErrc::register_failed,
                 "rte_thread_register: " + std::string(rte_strerror(rte_errno)));
  }
  return {};
}

void DpdkRuntime::unregister_thread() const noexcept { rte_thread_unregister(); }

}  // namespace fastcm::shards
