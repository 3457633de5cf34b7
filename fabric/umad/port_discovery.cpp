#include "fabric/umad/port_discovery.h"

#include <endian.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <string_view>

namespace fastcm::umad {

namespace {

constexpr unsigned kPortStateActive = 4;  // PortInfo PortState ACTIVE
constexpr unsigned kMaxHwGidEntries = 256;  // sysfs GID entries looked at, at most

// Reads a small sysfs file. With ::open rather than a stream: umad2sim (ibsim's preload library)
// redirects sysfs paths by interposing open(), which glibc's fopen does not call.
bool read_sysfs(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[128];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  out.assign(buf, static_cast<std::size_t>(n));
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return true;
}

// "fe80:0000:0000:0000:0002:c903:0000:1001" into a GID.
bool parse_gid(std::string_view text, Gid& gid) {
  std::size_t at = 0;
  for (std::size_t group = 0; group < 8; ++group) {
    std::uint16_t v = 0;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), v, 16);
    if (ec != std::errc{} || end != text.data() + at + 4) return false;
    gid.raw[2 * group] = static_cast<std::uint8_t>(v >> 8);
    gid.raw[2 * group + 1] = static_cast<std::uint8_t>(v);
    at += 5;  // four digits and a colon
  }
  return true;
}

// IBTA static rate code (PathRecord Rate) of a port rate in Gb/s as libibumad reports it (2 for
// 2.5 Gb/s); 0 ("port current") for a rate without a code.
std::uint8_t rate_code(unsigned gbps) {
  struct RateCode { unsigned gbps; std::uint8_t code; };
  static constexpr RateCode kCodes[] = {{2, 2},    {5, 5},    {10, 3},   {14, 11},  {20, 6},  {25, 15},
                                        {28, 19},  {30, 4},   {40, 7},   {50, 20},  {56, 12}, {60, 8},
                                        {80, 9},   {100, 16}, {112, 13}, {120, 10}, {168, 14}, {200, 17},
                                        {300, 18}, {400, 21}, {600, 22}};
  for (const RateCode& r : kCodes) {
    if (r.gbps == gbps) return r.code;
  }
  return 0;
}

bool is_zero(const Gid& gid) {
  return std::all_of(gid.raw.begin(), gid.raw.end(), [](std::uint8_t b) { return b == 0; });
}

void add_gid(DiscoveredPort& port, const Gid& gid, unsigned hw_index, GidType type) {
  if (port.attr.gid_count >= kMaxPortGids || is_zero(gid)) return;  // a hole of a RoCE table
  port.attr.gid_table[port.attr.gid_count] = gid;
  port.gid_info[port.attr.gid_count] = GidEntryInfo{static_cast<std::uint8_t>(hw_index), type};
  ++port.attr.gid_count;
}

// The GID table from sysfs: gids/<i>, typed by gid_attrs/types/<i> ("IB/RoCE v1", "RoCE v2") on
// Ethernet ports. Entries stop at the first index without a file.
void gids_from_sysfs(const std::string& ca, DiscoveredPort& port) {
  const std::string dir = "/sys/class/infiniband/" + ca + "/ports/" + std::to_string(port.attr.port_num);
  for (unsigned i = 0; i < kMaxHwGidEntries && port.attr.gid_count < kMaxPortGids; ++i) {
    std::string text;
    if (!read_sysfs(dir + "/gids/" + std::to_string(i), text)) break;
    Gid gid;
    if (!parse_gid(text, gid)) continue;
    GidType type = GidType::ib;
    if (port.attr.link_layer == LinkLayer::ethernet) {
      std::string type_text;
      if (!read_sysfs(dir + "/gid_attrs/types/" + std::to_string(i), type_text)) continue;  // an empty entry
      type = type_text == "RoCE v2" ? GidType::roce_v2 : GidType::roce_v1;
    }
    add_gid(port, gid, i, type);
  }
}

struct DeviceListDeleter {
  void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};
struct ContextDeleter {
  void operator()(ibv_context* ctx) const { ibv_close_device(ctx); }
};

// The attributes only a verbs device knows; false (nothing changed) when `ca` has no verbs device
// (ibsim).
bool fill_from_verbs(const std::string& ca, std::vector<DiscoveredPort>& ports) {
  int count = 0;
  const std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&count));
  if (!list) return false;
  ibv_device* found = nullptr;
  for (int i = 0; i < count; ++i) {
    if (ca == ibv_get_device_name(list.get()[i])) found = list.get()[i];
  }
  if (found == nullptr) return false;
  const std::unique_ptr<ibv_context, ContextDeleter> ctx(ibv_open_device(found));
  if (!ctx) return false;
  ibv_device_attr dev{};
  if (ibv_query_device(ctx.get(), &dev) != 0) return false;
  std::vector<ibv_gid_entry> entries(kMaxHwGidEntries * ports.size());
  const ssize_t n = ibv_query_gid_table(ctx.get(), entries.data(), entries.size(), 0);
  for (DiscoveredPort& port : ports) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx.get(), port.attr.port_num, &pa) != 0) continue;
    port.attr.active_mtu = static_cast<std::uint8_t>(pa.active_mtu);
    port.sources.mtu = "verbs";
    port.attr.link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? LinkLayer::ethernet : LinkLayer::infiniband;
    port.sources.link_layer = "verbs";
    port.attr.ca = CaLimits{.max_qp_rd_atom = static_cast<std::uint8_t>(std::min(dev.max_qp_rd_atom, 255)),
                            .max_qp_init_rd_atom = static_cast<std::uint8_t>(std::min(dev.max_qp_init_rd_atom, 255)),
                            .local_ca_ack_delay = static_cast<std::uint8_t>(dev.local_ca_ack_delay & 0x1F)};
    port.sources.ca_limits = "verbs";
    if (n <= 0) continue;
    port.attr.gid_count = 0;
    for (ssize_t i = 0; i < n; ++i) {
      const ibv_gid_entry& e = entries[static_cast<std::size_t>(i)];
      if (e.port_num != port.attr.port_num || e.gid_index >= kMaxHwGidEntries) continue;
      Gid gid;
      std::memcpy(gid.raw.data(), e.gid.raw, gid.raw.size());
      const GidType type = e.gid_type == IBV_GID_TYPE_ROCE_V2   ? GidType::roce_v2
                           : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::roce_v1
                                                                : GidType::ib;
      add_gid(port, gid, e.gid_index, type);
    }
    if (port.attr.gid_count > 0) port.sources.gids = "verbs";
  }
  return true;
}

DiscoveredPort from_umad(const umad_ca_t& ca, const umad_port_t& p, const UmadConfig& config) {
  DiscoveredPort port;
  port.attr.port_num = static_cast<std::uint8_t>(p.portnum);
  port.attr.node_guid = be64toh(ca.node_guid);
  port.attr.port_guid = be64toh(p.port_guid);
  port.attr.lid = static_cast<Lid>(p.base_lid);
  port.attr.lmc = static_cast<std::uint8_t>(p.lmc);
  port.attr.sm_lid = static_cast<Lid>(p.sm_lid);
  port.attr.pkey_count = static_cast<std::uint8_t>(std::min<unsigned>(p.pkeys_size, kMaxPortPKeys));
  for (std::size_t i = 0; i < port.attr.pkey_count; ++i) port.attr.pkey_table[i] = p.pkeys[i];
  port.attr.active_rate = rate_code(p.rate);
  if (port.attr.active_rate == 0) port.sources.rate = "config";
  // libibumad reports "IB" when sysfs has no link_layer file (as under ibsim).
  port.attr.link_layer = std::string_view(p.link_layer) == "Ethernet" ? LinkLayer::ethernet : LinkLayer::infiniband;
  port.attr.active_mtu = config.fallback_mtu;
  port.attr.ca = config.fallback_ca;
  return port;
}

std::string port_state_name(unsigned state) {
  static constexpr const char* kNames[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  return state < std::size(kNames) ? kNames[state] : std::to_string(state);
}

}  // namespace

bool discover_ports(const UmadConfig& config, std::string& device, std::vector<DiscoveredPort>& out,
                    std::string& error) {
  if (umad_init() < 0) {
    error = "libibumad failed to initialise: load the ib_umad kernel module (modprobe ib_umad)";
    return false;
  }
  umad_ca_t ca{};
  const int rc = umad_get_ca(config.device.empty() ? nullptr : config.device.c_str(), &ca);
  if (rc < 0) {
    error = config.device.empty()
                ? "no InfiniBand/RoCE device found (umad_get_ca: " + std::string(std::strerror(-rc)) +
                      "): load the HCA driver and ib_umad, or use another fabric"
                : "no device '" + config.device + "' (umad_get_ca: " + std::strerror(-rc) +
                      "): list the devices with `ibstat -l` and pass one of them";
    return false;
  }
  device = ca.ca_name;
  std::vector<std::uint8_t> wanted = config.ports;
  if (wanted.empty()) {
    for (int p = 1; p < UMAD_CA_MAX_PORTS; ++p) {
      if (ca.ports[p] != nullptr && ca.ports[p]->state == kPortStateActive) wanted.push_back(static_cast<std::uint8_t>(p));
    }
    if (wanted.empty()) {
      umad_release_ca(&ca);
      error = "device " + device + " has no active port: check the links and that a subnet manager runs (ibstat " +
              device + ")";
      return false;
    }
  }
  for (const std::uint8_t p : wanted) {
    if (p == 0 || p >= UMAD_CA_MAX_PORTS || ca.ports[p] == nullptr) {
      umad_release_ca(&ca);
      error = "device " + device + " has no port " + std::to_string(p) + " (it has " + std::to_string(ca.numports) +
              "): pass a port number from `ibstat " + device + "`";
      return false;
    }
    if (ca.ports[p]->state != kPortStateActive) {
      error = "port " + std::to_string(p) + " of " + device + " is not active (state " +
              port_state_name(ca.ports[p]->state) + "): check the link and that a subnet manager runs";
      umad_release_ca(&ca);
      return false;
    }
    out.push_back(from_umad(ca, *ca.ports[p], config));
  }
  umad_release_ca(&ca);

  (void)fill_from_verbs(device, out);  // no verbs device: the fallbacks stay
  for (DiscoveredPort& port : out) {
    if (port.attr.gid_count == 0) gids_from_sysfs(device, port);
    if (port.attr.gid_count == 0) {
      error = "port " + std::to_string(port.attr.port_num) + " of " + device +
              " has no GID (neither verbs nor sysfs lists one): check the port with `ibstat " + device + "`";
      return false;
    }
  }
  return true;
}

}  // namespace fastcm::umad
