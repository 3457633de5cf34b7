// Every EngineConfig rule (fastcm::ConfigField), field by field: the first value beyond each bound
// is refused with that field named, the bound itself is accepted, and Engine::create reports the
// refusal without starting anything. The comm-ID key: the same key gives the same IDs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"
#include "shards/engine_config.h"

namespace fastcm::test {
namespace {

// A fabric of `n` ports that is never used: the check looks at the port count only.
class PortsOnly final : public Fabric {
 public:
  explicit PortsOnly(std::size_t n) : ports_(n) {}
  std::span<const PortAttr> ports() const noexcept override { return ports_; }
  std::size_t send_burst(std::uint16_t, std::span<const MadPacket* const>) noexcept override { return 0; }
  std::size_t recv_burst(std::uint16_t, std::span<MadPacket* const>) noexcept override { return 0; }
  int rx_event_fd(std::uint16_t) const noexcept override { return -1; }
  bool arm_rx_event(std::uint16_t) noexcept override { return false; }

 private:
  std::vector<PortAttr> ports_;
};

struct Case {
  const char* what;
  std::function<void(EngineConfig&)> set;
  std::size_t ports = 1;
};

std::optional<ConfigField> refused_field(const Case& c) {
  EngineConfig config;
  c.set(config);
  const std::optional<ConfigError> why = shards::check_config(config, c.ports);
  if (why) {
    EXPECT_FALSE(why->rule.empty()) << c.what;
    return why->field;
  }
  return std::nullopt;
}

void expect_refused(ConfigField field, const std::vector<Case>& cases) {
  for (const Case& c : cases) EXPECT_EQ(refused_field(c), field) << c.what;
}
void expect_accepted(const std::vector<Case>& cases) {
  for (const Case& c : cases) EXPECT_EQ(refused_field(c), std::nullopt) << c.what;
}

TEST(EngineConfigCheck, TheDefaultsPass) { expect_accepted({{"defaults", [](EngineConfig&) {}}}); }

TEST(EngineConfigCheck, Shards) {
  expect_refused(ConfigField::shards, {{"0", [](EngineConfig& c) { c.shards = 0; }},
                                       {"65", [](EngineConfig& c) { c.shards = 65; }}});
  expect_accepted({{"1", [](EngineConfig& c) { c.shards = 1; }}, {"64", [](EngineConfig& c) { c.shards = 64; }}});
}

TEST(EngineConfigCheck, ThreadingAndEalMustBeEnumerators) {
  expect_refused(ConfigField::threading, {{"2", [](EngineConfig& c) { c.threading = static_cast<Threading>(2); }}});
  expect_refused(ConfigField::eal, {{"7", [](EngineConfig& c) { c.eal = static_cast<EalOwner>(7); }}});
  expect_accepted({{"caller, application", [](EngineConfig& c) {
                      c.threading = Threading::caller;
                      c.eal = EalOwner::application;
                    }}});
}

TEST(EngineConfigCheck, FabricPorts) {
  const auto none = [](EngineConfig&) {};
  expect_refused(ConfigField::fabric, {{"0 ports", none, 0}, {"256 ports", none, 256}});
  expect_accepted({{"255 ports", none, 255}});
}

TEST(EngineConfigCheck, ShardInbox) {
  expect_refused(ConfigField::shard_inbox, {{"0", [](EngineConfig& c) { c.shard_inbox = 0; }},
                                            {"2^20 + 1", [](EngineConfig& c) { c.shard_inbox = (1u << 20) + 1; }}});
  expect_accepted({{"1", [](EngineConfig& c) { c.shard_inbox = 1; }},
                   {"2^20", [](EngineConfig& c) { c.shard_inbox = 1u << 20; }}});
}

TEST(EngineConfigCheck, MaxEndpoints) {
  expect_refused(ConfigField::max_endpoints,
                 {{"0", [](EngineConfig& c) { c.max_endpoints = 0; }},
                  // 64 shards: tables of twice the share, 2^18 slots each.
                  {"2^23 + 64 over 64 shards (slot field)", [](EngineConfig& c) {
                     c.shards = 64;
                     c.max_endpoints = (1u << 23) + 64;
                   }},
                  // 1 shard: the table is the whole number; its destroy queue holds 2 x table + 1024.
                  {"2^23 - 511 in 1 shard (destroy queue)", [](EngineConfig& c) { c.max_endpoints = (1u << 23) - 511; }},
                  {"2^24 + 1 in 1 shard (slot field)", [](EngineConfig& c) { c.max_endpoints = (1u << 24) + 1; }},
                  {"2^32 - 1", [](EngineConfig& c) { c.max_endpoints = ~0u; }}});
  expect_accepted({{"1", [](EngineConfig& c) { c.max_endpoints = 1; }},
                   {"2^23 over 64 shards", [](EngineConfig& c) {
                      c.shards = 64;
                      c.max_endpoints = 1u << 23;
                    }},
                   {"2^23 - 512 in 1 shard, largest inbox", [](EngineConfig& c) {
                      c.max_endpoints = (1u << 23) - 512;
                      c.shard_inbox = 1u << 20;
                    }}});
}

TEST(EngineConfigCheck, MaxListens) {
  expect_refused(ConfigField::max_listens, {{"0", [](EngineConfig& c) { c.max_listens = 0; }},
                                            {"2^20 + 1", [](EngineConfig& c) { c.max_listens = (1u << 20) + 1; }},
                                            {"2^32 - 1", [](EngineConfig& c) { c.max_listens = ~0u; }}});
  expect_accepted({{"1", [](EngineConfig& c) { c.max_listens = 1; }},
                   {"2^20", [](EngineConfig& c) { c.max_listens = 1u << 20; }}});
}

TEST(EngineConfigCheck, MadBuffers) {
  expect_refused(ConfigField::mad_buffers,
                 {{"31", [](EngineConfig& c) { c.mad_buffers = 31; }},
                  {"2^24 + 1", [](EngineConfig& c) { c.mad_buffers = (1u << 24) + 1; }},
                  {"511 over 64 shards (8 per shard)", [](EngineConfig& c) {
                     c.mad_buffers = 511;
                     c.shards = 64;
                   }},
                  // Near 2^32 the pool's size (with the reserves) used to wrap to a few buffers.
                  {"2^32 - 1000, workers", [](EngineConfig& c) { c.mad_buffers = ~0u - 1000; }}});
  expect_accepted({{"32", [](EngineConfig& c) { c.mad_buffers = 32; }},
                   {"512 over 64 shards", [](EngineConfig& c) {
                      c.mad_buffers = 512;
                      c.shards = 64;
                    }},
                   {"2^24, 64 shards, workers, 255 ports", [](EngineConfig& c) {
                      c.mad_buffers = 1u << 24;
                      c.shards = 64;
                    }, 255}});
}

TEST(EngineConfigCheck, AutoMraFraction) {
  expect_refused(ConfigField::auto_mra_fraction,
                 {{"-0.01", [](EngineConfig& c) { c.auto_mra_fraction = -0.01; }},
                  {"1", [](EngineConfig& c) { c.auto_mra_fraction = 1; }},
                  {"NaN", [](EngineConfig& c) { c.auto_mra_fraction = std::numeric_limits<double>::quiet_NaN(); }},
                  {"inf", [](EngineConfig& c) { c.auto_mra_fraction = std::numeric_limits<double>::infinity(); }}});
  expect_accepted({{"0", [](EngineConfig& c) { c.auto_mra_fraction = 0; }},
                   {"0.999", [](EngineConfig& c) { c.auto_mra_fraction = 0.999; }}});
}

TEST(EngineConfigCheck, MraServiceTimeout) {
  expect_refused(ConfigField::mra_service_timeout, {{"32", [](EngineConfig& c) { c.mra_service_timeout = 32; }},
                                                    {"255", [](EngineConfig& c) { c.mra_service_timeout = 255; }}});
  expect_accepted({{"0", [](EngineConfig& c) { c.mra_service_timeout = 0; }},
                   {"31", [](EngineConfig& c) { c.mra_service_timeout = 31; }}});
}

TEST(EngineConfigCheck, HalfOpenPerSource) {
  expect_refused(ConfigField::half_open_per_source,
                 {{"0", [](EngineConfig& c) { c.half_open_per_source = 0; }},
                  {"2^24", [](EngineConfig& c) { c.half_open_per_source = 1u << 24; }},
                  {"~0", [](EngineConfig& c) { c.half_open_per_source = ~0u; }}});
  expect_accepted({{"1", [](EngineConfig& c) { c.half_open_per_source = 1; }},
                   {"2^24 - 1", [](EngineConfig& c) { c.half_open_per_source = (1u << 24) - 1; }}});
}

TEST(EngineConfigCheck, HalfOpenPerListen) {
  expect_refused(ConfigField::half_open_per_listen,
                 {{"0", [](EngineConfig& c) { c.half_open_per_listen = 0; }},
                  {"2^24 + 1", [](EngineConfig& c) { c.half_open_per_listen = (1u << 24) + 1; }}});
  expect_accepted({{"1", [](EngineConfig& c) { c.half_open_per_listen = 1; }},
                   {"2^24", [](EngineConfig& c) { c.half_open_per_listen = 1u << 24; }}});
}

TEST(EngineConfigCheck, PostedCalls) {
  expect_refused(ConfigField::posted_calls,
                 {{"2^20 + 1", [](EngineConfig& c) { c.posted_calls = (1u << 20) + 1; }}});
  expect_accepted({{"0", [](EngineConfig& c) { c.posted_calls = 0; }},
                   {"2^20", [](EngineConfig& c) { c.posted_calls = 1u << 20; }}});
}

TEST(EngineConfigCheck, IdleSpinsTakesAnyValue) {
  expect_accepted({{"0", [](EngineConfig& c) { c.idle_spins = 0; }},
                   {"2^32 - 1 (never sleep)", [](EngineConfig& c) { c.idle_spins = ~0u; }}});
}

TEST(EngineCreate, ReportsTheFieldAndRuleItRefusedAndStartsNothing) {
  SteadyClock clock;
  PortsOnly fabric(1);
  std::unique_ptr<Engine> engine;
  ConfigError why;
  // Not an enumerator: before the check, no thread was started and the first call hung.
  EXPECT_EQ(Engine::create(fabric, clock, EngineConfig{.threading = static_cast<Threading>(9)}, engine, &why),
            Status::invalid_argument);
  EXPECT_EQ(engine, nullptr);
  EXPECT_EQ(why.field, ConfigField::threading);
  EXPECT_EQ(why.rule, "must be Threading::workers or Threading::caller");
  EXPECT_EQ(to_string(why.field), "threading");

  EXPECT_EQ(Engine::create(fabric, clock, EngineConfig{.mad_buffers = ~0u - 1000}, engine, nullptr),
            Status::invalid_argument);
  EXPECT_EQ(Engine::create(fabric, clock, EngineConfig{.shards = 0}), nullptr);
}

// A caller-driven engine on a loopback HCA.
struct LoopbackEngine {
  VirtualClock clock;
  loopback::LoopbackFabric fabric{loopback::LoopbackConfig::two_hcas(1), clock};
};

EngineConfig small(std::optional<CidKey> key) {
  return EngineConfig{.shards = 2, .threading = Threading::caller, .max_endpoints = 64, .mad_buffers = 64,
                      .cid_key = key};
}

std::vector<Id> ids_of(Engine& engine, int n) {
  std::vector<Id> ids;
  for (int i = 0; i < n; ++i) {
    Id id;
    EXPECT_EQ(engine.create_id(Delivery{.handler = [](const Event&, void*) {}}, nullptr, id), Status::ok);
    ids.push_back(id);
  }
  return ids;
}

TEST(EngineCreate, AValidConfigCreatesAndReportsNoError) {
  LoopbackEngine rig;
  std::unique_ptr<Engine> engine;
  ConfigError why{ConfigField::shards, "stale"};
  ASSERT_EQ(Engine::create(rig.fabric.hca(0), rig.clock, small(std::nullopt), engine, &why), Status::ok);
  EXPECT_NE(engine, nullptr);
  EXPECT_EQ(why.field, ConfigField::none);
  EXPECT_TRUE(why.rule.empty());
}

// The engine-owned EAL has a fixed 64 MiB heap. Each shard's destroy queue has room for twice its
// endpoint table (a million entries here), and must not need that heap.
TEST(EngineCreate, AMillionEndpointsOnFourShardsFitTheEngineOwnedEal) {
  VirtualClock clock;
  loopback::LoopbackFabric fabric{loopback::LoopbackConfig::two_hcas(4), clock};
  std::unique_ptr<Engine> engine;
  ConfigError why;
  EXPECT_EQ(Engine::create(fabric.hca(0), clock,
                           EngineConfig{.shards = 4, .threading = Threading::caller, .max_endpoints = 1'000'000},
                           engine, &why),
            Status::ok)
      << why.rule;
}

TEST(EngineCreate, TheSameCidKeyGivesTheSameIdsAndNoKeyAFreshOne) {
  LoopbackEngine rig;
  const CidKey key{0x1234, 0x5678};
  auto a = Engine::create(rig.fabric.hca(0), rig.clock, small(key));
  auto b = Engine::create(rig.fabric.hca(1), rig.clock, small(key));
  auto c = Engine::create(rig.fabric.hca(0), rig.clock, small(std::nullopt));
  auto d = Engine::create(rig.fabric.hca(1), rig.clock, small(std::nullopt));
  ASSERT_TRUE(a && b && c && d);
  const std::vector<Id> from_a = ids_of(*a, 20);
  EXPECT_EQ(ids_of(*b, 20), from_a);
  // Drawn keys: two engines (or one and the fixed key) agree on 20 IDs with chance ~2^-640.
  const std::vector<Id> from_c = ids_of(*c, 20);
  EXPECT_NE(from_c, from_a);
  EXPECT_NE(ids_of(*d, 20), from_c);
}

}  // namespace
}  // namespace fastcm::test
