#include "config/settings_parser.h"

#include <arpa/inet.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "config/ini_file.h"
#include "fabric/loopback/loopback_config.h"
#include "shards/engine_config.h"

namespace fastcm::config {

namespace {

constexpr std::uint32_t kMinMetricsIntervalMs = 10;
constexpr std::uint32_t kMaxMetricsIntervalMs = 3'600'000;
constexpr std::uint8_t kMaxTimeoutExponent = 31;
constexpr std::uint8_t kMaxCmRetries = 15;  // a 4-bit field of the REQ

// Reads typed values out of an IniFile, keeping the first error; later reads do nothing once one
// failed, so the schema below reads straight through and checks once at the end.
class Reader {
 public:
  explicit Reader(IniFile& file) : file_(file) {}

  [[nodiscard]] bool failed() const noexcept { return error_.has_value(); }
  [[nodiscard]] const IniError& error() const noexcept { return *error_; }
  [[nodiscard]] const std::vector<std::string>& given() const noexcept { return given_; }

  void fail(std::string_view section, std::string_view key, std::string message) {
    if (!error_) error_ = IniError{std::string(section), std::string(key), std::move(message)};
  }

  // An unsigned integer (decimal or 0x hexadecimal; with `sizes`, a k, M or G suffix multiplies by
  // 2^10, 2^20, 2^30) no larger than `max`, which is the field's representable range: the rules
  // of what a value may be live with the code that uses it.
  template <typename T>
  void number(std::string_view section, std::string_view key, T& out, bool sizes = false) {
    const std::optional<std::string_view> text = take(section, key);
    if (!text) return;
    const std::optional<std::uint64_t> value = parse_unsigned(*text, sizes);
    if (!value) return fail(section, key, quote(*text) + " is not " + (sizes ? "a size (bytes, k, M or G)" : "an unsigned integer"));
    if (*value > std::numeric_limits<T>::max()) {
      return fail(section, key, quote(*text) + " is too large: at most " + std::to_string(std::numeric_limits<T>::max()));
    }
    out = static_cast<T>(*value);
  }

  void real(std::string_view section, std::string_view key, double& out) {
    const std::optional<std::string_view> text = take(section, key);
    if (!text) return;
    double value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc{} || end != text->data() + text->size() || !std::isfinite(value)) {
      return fail(section, key, quote(*text) + " is not a number");
    }
    out = value;
  }

  void percent(std::string_view section, std::string_view key, double& out) {
    double value = out;
    real(section, key, value);
    if (failed()) return;
    if (!(value >= 0 && value <= 100)) return fail(section, key, "must be a percentage, 0..100");
    out = value;
  }

  void text(std::string_view section, std::string_view key, std::string& out) {
    if (const std::optional<std::string_view> text = take(section, key)) out = std::string(*text);
  }

  // One of `names`, stored as the matching `values` entry.
  template <typename T, std::size_t N>
  void choice(std::string_view section, std::string_view key, T& out, const std::string_view (&names)[N],
              const T (&values)[N]) {
    const std::optional<std::string_view> text = take(section, key);
    if (!text) return;
    std::string all;
    for (std::size_t i = 0; i < N; ++i) {
      if (*text == names[i]) {
        out = values[i];
        return;
      }
      all += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i]);
    }
    fail(section, key, quote(*text) + " is not one of " + all);
  }

  // Comma-separated items, each with its spaces trimmed; an empty item is an error.
  void list(std::string_view section, std::string_view key, std::vector<std::string>& out) {
    const std::optional<std::string_view> text = take(section, key);
    if (!text) return;
    std::vector<std::string> items;
    std::string_view rest = *text;
    for (;;) {
      const std::size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (item.empty()) return fail(section, key, "has an empty item (items are separated by commas)");
      items.emplace_back(item);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    out = std::move(items);
  }

 private:
  std::optional<std::string_view> take(std::string_view section, std::string_view key) {
    if (failed()) return std::nullopt;
    const std::optional<std::string_view> text = file_.take(section, key);
    if (!text) return std::nullopt;
    given_.push_back(std::string(section) + "." + std::string(key));
    if (text->empty()) {
      fail(section, key, "has no value");
      return std::nullopt;
    }
    return text;
  }

  static std::string quote(std::string_view text) {
    std::string quoted;
    quoted.reserve(text.size() + 2);
    quoted.append(1, '"').append(text).append(1, '"');
    return quoted;
  }

  static std::optional<std::uint64_t> parse_unsigned(std::string_view text, bool sizes) {
    std::uint64_t scale = 1;
    if (sizes && !text.empty()) {
      switch (text.back()) {
        case 'k': case 'K': scale = std::uint64_t{1} << 10; break;
        case 'm': case 'M': scale = std::uint64_t{1} << 20; break;
        case 'g': case 'G': scale = std::uint64_t{1} << 30; break;
        default: break;
      }
      if (scale != 1) text.remove_suffix(1);
    }
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      base = 16;
      text.remove_prefix(2);
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    if (value > std::numeric_limits<std::uint64_t>::max() / scale) return std::nullopt;
    return value * scale;
  }

  IniFile& file_;
  std::optional<IniError> error_;
  std::vector<std::string> given_;
};

constexpr std::string_view kFabricSections[] = {"loopback", "umad", "udp"};
constexpr FabricType kFabricTypes[] = {FabricType::loopback, FabricType::umad, FabricType::udp};

void read_engine(Reader& r, EngineConfig& e) {
  r.number("engine", "shards", e.shards);
  r.choice("engine", "threading", e.threading, {"workers", "caller"}, {Threading::workers, Threading::caller});
  r.number("engine", "shard_inbox", e.shard_inbox);
  r.number("engine", "max_endpoints", e.max_endpoints);
  r.number("engine", "max_listens", e.max_listens);
  r.number("engine", "mad_buffers", e.mad_buffers);
  r.number("engine", "idle_spins", e.idle_spins);
  r.number("engine", "half_open_per_source", e.half_open_per_source);
  r.number("engine", "half_open_per_listen", e.half_open_per_listen);
  r.number("engine", "posted_calls", e.posted_calls);
  r.real("mra", "auto_fraction", e.auto_mra_fraction);
  r.number("mra", "service_timeout", e.mra_service_timeout);
  r.choice("eal", "owner", e.eal, {"engine", "application"}, {EalOwner::engine, EalOwner::application});
}

void read_fabric(Reader& r, FabricSettings& f) {
  r.choice("fabric", "type", f.type, kFabricSections, kFabricTypes);
  LoopbackSettings& l = f.loopback;
  r.number("loopback", "hcas", l.hcas);
  r.number("loopback", "ports_per_hca", l.ports_per_hca);
  r.number("loopback", "rx_queue_depth", l.rx_queue_depth);
  r.number("loopback", "fault_seed", l.fault_seed);
  r.percent("loopback", "loss", l.loss_pct);
  r.percent("loopback", "dup", l.dup_pct);
  r.percent("loopback", "reorder", l.reorder_pct);
  r.text("umad", "device", f.umad.device);
  std::vector<std::string> ports;
  r.list("umad", "ports", ports);
  if (!ports.empty()) {
    f.umad.ports.clear();
    for (const std::string& port : ports) {
      unsigned value = 0;
      const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
      if (ec != std::errc{} || end != port.data() + port.size() || value < 1 || value > 254) {
        r.fail("umad", "ports", "\"" + port + "\" is not an HCA port number (1..254)");
        break;
      }
      f.umad.ports.push_back(static_cast<std::uint8_t>(value));
    }
  }
  r.list("udp", "addresses", f.udp.addresses);
  for (const std::string& address : f.udp.addresses) {
    unsigned char raw[16];
    if (inet_pton(AF_INET, address.c_str(), raw) != 1 && inet_pton(AF_INET6, address.c_str(), raw) != 1) {
      r.fail("udp", "addresses", "\"" + address + "\" is not an IPv4 or IPv6 address");
      break;
    }
  }
  r.number("udp", "port", f.udp.udp_port);
}

// The loopback's counts and queue depth by LoopbackConfig's own rules (it throws naming them).
void check_loopback(Reader& r, const LoopbackSettings& l) {
  const auto check = [&r](std::string_view key, auto&& build) {
    if (r.failed()) return;
    try {
      build();
    } catch (const std::invalid_argument& e) {
      r.fail("loopback", key, e.what());
    }
  };
  check("ports_per_hca", [&] { (void)loopback::LoopbackConfig::make(1, l.ports_per_hca); });
  check("hcas", [&] { (void)loopback::LoopbackConfig::make(l.hcas, l.ports_per_hca); });
  check("rx_queue_depth", [&] {
    loopback::LoopbackConfig config = loopback::LoopbackConfig::make(1, 1);
    config.rx_queue_depth = l.rx_queue_depth;
    config.validate();
  });
}

// The ports an engine of this fabric gets, where the file tells (0: only the opened fabric knows).
std::size_t engine_ports(const FabricSettings& f) {
  switch (f.type) {
    case FabricType::loopback: return f.loopback.ports_per_hca;
    case FabricType::umad: return f.umad.ports.size();
    case FabricType::udp: return f.udp.addresses.size();
  }
  return 0;
}

// Where each EngineConfig field lives in the file.
std::pair<std::string_view, std::string_view> key_of(ConfigField field, FabricType fabric) {
  switch (field) {
    case ConfigField::shards: return {"engine", "shards"};
    case ConfigField::threading: return {"engine", "threading"};
    case ConfigField::eal: return {"eal", "owner"};
    case ConfigField::shard_inbox: return {"engine", "shard_inbox"};
    case ConfigField::max_endpoints: return {"engine", "max_endpoints"};
    case ConfigField::max_listens: return {"engine", "max_listens"};
    case ConfigField::mad_buffers: return {"engine", "mad_buffers"};
    case ConfigField::auto_mra_fraction: return {"mra", "auto_fraction"};
    case ConfigField::mra_service_timeout: return {"mra", "service_timeout"};
    case ConfigField::half_open_per_source: return {"engine", "half_open_per_source"};
    case ConfigField::half_open_per_listen: return {"engine", "half_open_per_listen"};
    case ConfigField::posted_calls: return {"engine", "posted_calls"};
    case ConfigField::fabric:
      switch (fabric) {
        case FabricType::loopback: return {"loopback", "ports_per_hca"};
        case FabricType::umad: return {"umad", "ports"};
        case FabricType::udp: return {"udp", "addresses"};
      }
      break;
    case ConfigField::none: break;
  }
  return {"engine", {}};
}

void check(Reader& r, IniFile& file, const Settings& s) {
  if (r.failed()) return;
  // Only the chosen fabric's section: the others' keys would be silently unused.
  for (std::size_t i = 0; i < std::size(kFabricSections); ++i) {
    if (kFabricTypes[i] != s.fabric.type && file.has_section(kFabricSections[i])) {
      return r.fail(kFabricSections[i], {},
                    "applies to [fabric] type = " + std::string(kFabricSections[i]) + " only (the type is " +
                        std::string(to_string(s.fabric.type)) + ")");
    }
  }
  if (s.fabric.type == FabricType::loopback) check_loopback(r, s.fabric.loopback);
  if (s.fabric.type == FabricType::udp && s.fabric.udp.addresses.empty()) {
    return r.fail("udp", "addresses", "the udp fabric needs at least one address (one port each)");
  }
  if (r.failed()) return;
  // Engine::create's own rules. Where the port count waits for the opened fabric (umad with every
  // active port), one port stands in and Engine::create checks the real count.
  const std::size_t ports = engine_ports(s.fabric);
  if (const std::optional<ConfigError> broken = shards::check_config(s.engine, ports == 0 ? 1 : ports)) {
    const auto [section, key] = key_of(broken->field, s.fabric.type);
    return r.fail(section, key, std::string(broken->rule));
  }
  if (s.connect.cm_response_timeout > kMaxTimeoutExponent) {
    return r.fail("connect", "cm_response_timeout", "must be 0..31 (an exponent: 4.096 us x 2^t)");
  }
  if (s.connect.max_cm_retries > kMaxCmRetries) return r.fail("connect", "max_cm_retries", "must be 0..15");
  if (s.fabric.type == FabricType::udp && s.fabric.udp.udp_port == 0) return r.fail("udp", "port", "must be 1..65535");
  if (s.listen.backlog == 0) return r.fail("listen", "backlog", "must be at least 1");
  if (s.metrics.interval_ms < kMinMetricsIntervalMs || s.metrics.interval_ms > kMaxMetricsIntervalMs) {
    return r.fail("metrics", "interval_ms", "must be 10..3600000");
  }
}

}  // namespace

Status parse_settings(const std::string& path, Settings& out, std::vector<std::string>* given, SettingsError* why) {
  const auto refuse = [&](IniError error) {
    if (why != nullptr) *why = SettingsError{path, std::move(error.section), std::move(error.key), std::move(error.message)};
    return Status::invalid_argument;
  };
  IniError load_error;
  std::optional<IniFile> file = IniFile::load(path, load_error);
  if (!file) return refuse(std::move(load_error));
  Settings s = out;
  Reader r(*file);
  read_engine(r, s.engine);
  read_fabric(r, s.fabric);
  r.number("listen", "backlog", s.listen.backlog);
  r.choice("listen", "backlog_policy", s.listen.backlog_policy, {"drop", "reject", "mra"},
           {BacklogPolicy::drop, BacklogPolicy::reject, BacklogPolicy::mra});
  r.number("connect", "cm_response_timeout", s.connect.cm_response_timeout);
  r.number("connect", "max_cm_retries", s.connect.max_cm_retries);
  r.choice("log", "level", s.log_level, {"off", "error", "warning", "notice", "info", "debug"},
           {LogLevel::off, LogLevel::error, LogLevel::warning, LogLevel::notice, LogLevel::info, LogLevel::debug});
  r.text("pcap", "file", s.pcap.file);
  r.number("pcap", "limit", s.pcap.limit_bytes, true);
  r.text("metrics", "file", s.metrics.file);
  r.number("metrics", "interval_ms", s.metrics.interval_ms);
  if (!r.failed()) {
    if (std::optional<IniError> unknown = file->unread()) r.fail(unknown->section, unknown->key, unknown->message);
  }
  check(r, *file, s);
  if (r.failed()) return refuse(r.error());
  out = std::move(s);
  if (given != nullptr) *given = r.given();
  return Status::ok;
}

}  // namespace fastcm::config

namespace fastcm {

Status load_settings(const std::string& path, Settings& out, SettingsError* why) {
  return config::parse_settings(path, out, nullptr, why);
}

}  // namespace fastcm
