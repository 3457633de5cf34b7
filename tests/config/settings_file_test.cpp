// The settings file parser (fastcm/settings.h, config/): the shipped examples load, every key
// reaches its field, and each kind of mistake is refused naming the file, section and key.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "config/settings_parser.h"
#include "fastcm/settings.h"

namespace fastcm {
namespace {

// A settings file in the test's temporary directory, removed at the end.
class SettingsFile {
 public:
  explicit SettingsFile(const std::string& text)
      : path_(::testing::TempDir() + "fastcm_settings_" + std::to_string(::getpid()) + "_" +
              std::to_string(next_++) + ".ini") {
    std::ofstream(path_) << text;
  }
  ~SettingsFile() { std::remove(path_.c_str()); }
  SettingsFile(const SettingsFile&) = delete;
  SettingsFile& operator=(const SettingsFile&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  static inline int next_ = 0;
  std::string path_;
};

SettingsError refusal(const std::string& text) {
  SettingsFile file(text);
  Settings settings;
  SettingsError why;
  EXPECT_EQ(load_settings(file.path(), settings, &why), Status::invalid_argument) << text;
  EXPECT_EQ(why.file, file.path());
  return why;
}

Settings loaded(const std::string& text) {
  SettingsFile file(text);
  Settings settings;
  SettingsError why;
  EXPECT_EQ(load_settings(file.path(), settings, &why), Status::ok) << why.text();
  return settings;
}

TEST(SettingsFile, ShippedExamplesLoad) {
  for (const char* name : {"demo.ini", "two-port-hca.ini", "appliance.ini"}) {
    Settings settings;
    SettingsError why;
    EXPECT_EQ(load_settings(std::string(FASTCM_CONFIGS_DIR) + "/" + name, settings, &why), Status::ok)
        << why.text();
  }
}

TEST(SettingsFile, DemoIsTheDemosStorm) {
  Settings s;
  ASSERT_EQ(load_settings(std::string(FASTCM_CONFIGS_DIR) + "/demo.ini", s, nullptr), Status::ok);
  EXPECT_EQ(s.fabric.type, FabricType::loopback);
  EXPECT_EQ(s.fabric.loopback.hcas, 2);
  EXPECT_EQ(s.fabric.loopback.ports_per_hca, 4);
  EXPECT_EQ(s.engine.shards, 4u);
  EXPECT_EQ(s.engine.threading, Threading::workers);
}

TEST(SettingsFile, ApplianceOwnsEal) {
  Settings s;
  ASSERT_EQ(load_settings(std::string(FASTCM_CONFIGS_DIR) + "/appliance.ini", s, nullptr), Status::ok);
  EXPECT_EQ(s.engine.eal, EalOwner::application);
  EXPECT_EQ(s.engine.threading, Threading::caller);
  EXPECT_EQ(s.fabric.type, FabricType::umad);
  EXPECT_EQ(s.fabric.umad.device, "mlx5_1");
  EXPECT_EQ(s.fabric.umad.ports, (std::vector<std::uint8_t>{1}));
}

TEST(SettingsFile, EveryKeyReachesItsField) {
  const Settings s = loaded(R"(
[engine]
shards = 8
threading = caller
shard_inbox = 0x2000
max_endpoints = 100000
max_listens = 32
mad_buffers = 4096
idle_spins = 7
[mra]
auto_fraction = 0.75
service_timeout = 9
[eal]
owner = application
[fabric]
type = udp
[udp]
addresses = 127.0.0.1 , ::1
port = 14791
[listen]
backlog = 77
backlog_policy = mra
[connect]
cm_response_timeout = 14
max_cm_retries = 3
[log]
level = debug
[pcap]
file = out.pcapng
limit = 3M
[metrics]
file = m.json
interval_ms = 250
)");
  EXPECT_EQ(s.engine.shards, 8u);
  EXPECT_EQ(s.engine.threading, Threading::caller);
  EXPECT_EQ(s.engine.shard_inbox, 0x2000u);
  EXPECT_EQ(s.engine.max_endpoints, 100000u);
  EXPECT_EQ(s.engine.max_listens, 32u);
  EXPECT_EQ(s.engine.mad_buffers, 4096u);
  EXPECT_EQ(s.engine.idle_spins, 7u);
  EXPECT_DOUBLE_EQ(s.engine.auto_mra_fraction, 0.75);
  EXPECT_EQ(s.engine.mra_service_timeout, 9);
  EXPECT_EQ(s.engine.eal, EalOwner::application);
  EXPECT_EQ(s.fabric.type, FabricType::udp);
  EXPECT_EQ(s.fabric.udp.addresses, (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(s.fabric.udp.udp_port, 14791);
  EXPECT_EQ(s.listen.backlog, 77u);
  EXPECT_EQ(s.listen.backlog_policy, BacklogPolicy::mra);
  EXPECT_EQ(s.connect.cm_response_timeout, 14);
  EXPECT_EQ(s.connect.max_cm_retries, 3);
  EXPECT_EQ(s.log_level, LogLevel::debug);
  EXPECT_EQ(s.pcap.file, "out.pcapng");
  EXPECT_EQ(s.pcap.limit_bytes, 3u << 20);
  EXPECT_EQ(s.metrics.file, "m.json");
  EXPECT_EQ(s.metrics.interval_ms, 250u);
}

TEST(SettingsFile, LoopbackKeys) {
  const Settings s = loaded("[loopback]\nhcas = 3\nports_per_hca = 2\nrx_queue_depth = 64\nfault_seed = 9\n"
                            "loss = 1.5\ndup = 2\nreorder = 100\n");
  EXPECT_EQ(s.fabric.loopback.hcas, 3);
  EXPECT_EQ(s.fabric.loopback.ports_per_hca, 2);
  EXPECT_EQ(s.fabric.loopback.rx_queue_depth, 64u);
  EXPECT_EQ(s.fabric.loopback.fault_seed, 9u);
  EXPECT_DOUBLE_EQ(s.fabric.loopback.loss_pct, 1.5);
  EXPECT_DOUBLE_EQ(s.fabric.loopback.dup_pct, 2);
  EXPECT_DOUBLE_EQ(s.fabric.loopback.reorder_pct, 100);
}

TEST(SettingsFile, KeysLeftOutKeepTheCallersValues) {
  SettingsFile file("[engine]\nshards = 2\n");
  Settings s;
  s.engine.max_endpoints = 1234;
  s.fabric.loopback.ports_per_hca = 2;
  std::vector<std::string> given;
  ASSERT_EQ(config::parse_settings(file.path(), s, &given, nullptr), Status::ok);
  EXPECT_EQ(s.engine.shards, 2u);
  EXPECT_EQ(s.engine.max_endpoints, 1234u);
  EXPECT_EQ(given, (std::vector<std::string>{"engine.shards"}));
}

TEST(SettingsFile, RefusedFileLeavesTheSettingsUnchanged) {
  SettingsFile file("[engine]\nshards = 2\nmax_endpoints = lots\n");
  Settings s;
  ASSERT_EQ(load_settings(file.path(), s, nullptr), Status::invalid_argument);
  EXPECT_EQ(s.engine.shards, 1u);
}

TEST(SettingsFile, UnknownSectionAndKey) {
  SettingsError why = refusal("[engine]\nshards = 2\n[engines]\nshards = 2\n");
  EXPECT_EQ(why.section, "engines");
  EXPECT_EQ(why.key, "");
  EXPECT_EQ(why.message, "unknown section");
  why = refusal("[engine]\nshard = 2\n");
  EXPECT_EQ(why.section, "engine");
  EXPECT_EQ(why.key, "shard");
  EXPECT_EQ(why.message, "unknown key");
  EXPECT_EQ(why.text(), why.file + ": [engine] shard: unknown key");
}

TEST(SettingsFile, BadValues) {
  SettingsError why = refusal("[engine]\nmax_endpoints = 10k\n");
  EXPECT_EQ(why.key, "max_endpoints");
  EXPECT_EQ(why.message, "\"10k\" is not an unsigned integer");
  why = refusal("[engine]\nmax_listens = 5000000000\n");
  EXPECT_EQ(why.key, "max_listens");
  EXPECT_EQ(why.message, "\"5000000000\" is too large: at most 4294967295");
  why = refusal("[engine]\nthreading = threads\n");
  EXPECT_EQ(why.message, "\"threads\" is not one of workers or caller");
  why = refusal("[listen]\nbacklog_policy = queue\n");
  EXPECT_EQ(why.message, "\"queue\" is not one of drop, reject or mra");
  why = refusal("[mra]\nauto_fraction = half\n");
  EXPECT_EQ(why.key, "auto_fraction");
  why = refusal("[loopback]\nloss = 101\n");
  EXPECT_EQ(why.key, "loss");
  EXPECT_EQ(why.message, "must be a percentage, 0..100");
  why = refusal("[fabric]\ntype = udp\n[udp]\naddresses = 127.0.0.1, nowhere\n");
  EXPECT_EQ(why.key, "addresses");
  EXPECT_EQ(why.message, "\"nowhere\" is not an IPv4 or IPv6 address");
  why = refusal("[fabric]\ntype = udp\n[udp]\naddresses = 127.0.0.1,,::1\n");
  EXPECT_EQ(why.message, "has an empty item (items are separated by commas)");
  why = refusal("[fabric]\ntype = umad\n[umad]\nports = 1, 255\n");
  EXPECT_EQ(why.message, "\"255\" is not an HCA port number (1..254)");
  why = refusal("[engine]\nshards =\n");
  EXPECT_EQ(why.key, "shards");
  EXPECT_EQ(why.message, "has no value");
}

// The ranges are Engine::create's own (ConfigError), named by section and key.
TEST(SettingsFile, EngineRulesComeFromEngineCreate) {
  SettingsError why = refusal("[engine]\nshards = 65\n");
  EXPECT_EQ(why.section, "engine");
  EXPECT_EQ(why.key, "shards");
  EXPECT_EQ(why.message, "must be 1..64");
  why = refusal("[mra]\nauto_fraction = 1\n");
  EXPECT_EQ(why.section, "mra");
  EXPECT_EQ(why.key, "auto_fraction");
  EXPECT_EQ(why.message, "must be at least 0 and below 1");
  why = refusal("[mra]\nservice_timeout = 32\n");
  EXPECT_EQ(why.key, "service_timeout");
  why = refusal("[engine]\nshards = 64\nmad_buffers = 256\n");
  EXPECT_EQ(why.key, "mad_buffers");
  EXPECT_EQ(why.message, "must give each shard at least 8 (4 per half)");
  why = refusal("[engine]\nshard_inbox = 0\n");
  EXPECT_EQ(why.key, "shard_inbox");
}

TEST(SettingsFile, OtherRanges) {
  EXPECT_EQ(refusal("[connect]\ncm_response_timeout = 32\n").key, "cm_response_timeout");
  EXPECT_EQ(refusal("[connect]\nmax_cm_retries = 16\n").key, "max_cm_retries");
  EXPECT_EQ(refusal("[listen]\nbacklog = 0\n").key, "backlog");
  EXPECT_EQ(refusal("[metrics]\ninterval_ms = 5\n").key, "interval_ms");
  EXPECT_EQ(refusal("[fabric]\ntype = udp\n[udp]\naddresses = ::1\nport = 0\n").key, "port");
  // The loopback's own rules (LoopbackConfig), each on its key.
  EXPECT_EQ(refusal("[loopback]\nports_per_hca = 16\n").key, "ports_per_hca");
  EXPECT_EQ(refusal("[loopback]\nhcas = 0\n").key, "hcas");
  EXPECT_EQ(refusal("[loopback]\nrx_queue_depth = 0\n").key, "rx_queue_depth");
}

TEST(SettingsFile, OnlyTheChosenFabricsSection) {
  const SettingsError why = refusal("[fabric]\ntype = loopback\n[umad]\ndevice = mlx5_0\n");
  EXPECT_EQ(why.section, "umad");
  EXPECT_EQ(why.key, "");
  EXPECT_EQ(why.message, "applies to [fabric] type = umad only (the type is loopback)");
  EXPECT_EQ(refusal("[fabric]\ntype = udp\n").section, "udp");  // no address
}

TEST(SettingsFile, FileLevelMistakes) {
  Settings s;
  SettingsError why;
  ASSERT_EQ(load_settings("/nonexistent/fastcm.ini", s, &why), Status::invalid_argument);
  EXPECT_EQ(why.text(), "/nonexistent/fastcm.ini: cannot open: No such file or directory");
  why = refusal("shards = 2\n[engine]\n");
  EXPECT_EQ(why.key, "shards");
  EXPECT_EQ(why.message, "comes before the first [section]");
  why = refusal("[engine]\nshards = 2\nshards = 3\n");
  EXPECT_EQ(why.message, "is given twice");
  why = refusal("[engine]\nshards = 2\n[log]\nlevel = info\n[engine]\nidle_spins = 1\n");
  EXPECT_EQ(why.section, "engine");
  EXPECT_EQ(why.message, "the section is given twice");
  why = refusal("[engine\nshards = 2\n");
  EXPECT_EQ(why.section, "");
}

}  // namespace
}  // namespace fastcm
