// The CM wire format's encoded quantities (units.h): 4.096 us * 2^t timeouts, path MTU codes and
// static rate codes.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "engine/mad/units.h"

namespace fastcm::mad {
namespace {

TEST(MadUnits, TimeoutExponentToNanoseconds) {
  EXPECT_EQ(timeout_exponent_to_ns(0), 4096U);                       // 4.096 us
  EXPECT_EQ(timeout_exponent_to_ns(1), 8192U);
  EXPECT_EQ(timeout_exponent_to_ns(20), std::uint64_t{4096} << 20);  // ~4.3 s
  EXPECT_EQ(timeout_exponent_to_ns(31), std::uint64_t{4096} << 31);  // ~2.4 hours
  for (std::uint8_t t = 0; t <= kMaxTimeoutExponent; ++t) {
    EXPECT_EQ(timeout_exponent_to_ns(t), std::uint64_t{4096} << t) << int{t};
  }
  // Exponents past the 5-bit field clamp to the largest timeout.
  EXPECT_EQ(timeout_exponent_to_ns(32), std::uint64_t{4096} << 31);
  EXPECT_EQ(timeout_exponent_to_ns(255), std::uint64_t{4096} << 31);
}

TEST(MadUnits, NanosecondsToTimeoutExponentRoundsUp) {
  EXPECT_EQ(ns_to_timeout_exponent(0), 0);
  EXPECT_EQ(ns_to_timeout_exponent(1), 0);
  EXPECT_EQ(ns_to_timeout_exponent(4096), 0);
  EXPECT_EQ(ns_to_timeout_exponent(4097), 1);
  EXPECT_EQ(ns_to_timeout_exponent(8192), 1);
  EXPECT_EQ(ns_to_timeout_exponent(8193), 2);
  EXPECT_EQ(ns_to_timeout_exponent(1'000'000'000), 18);  // 1 s: 4.096 us * 2^18 = 1.07 s
  for (std::uint8_t t = 1; t <= kMaxTimeoutExponent; ++t) {
    const std::uint64_t exact = std::uint64_t{4096} << t;
    EXPECT_EQ(ns_to_timeout_exponent(exact), t);
    EXPECT_EQ(ns_to_timeout_exponent(exact - 1), t);     // just above the previous step
    EXPECT_EQ(ns_to_timeout_exponent((exact >> 1) + 1), t);
  }
  // Longer than the largest timeout: 31, the longest there is.
  EXPECT_EQ(ns_to_timeout_exponent((std::uint64_t{4096} << 31) + 1), 31);
  EXPECT_EQ(ns_to_timeout_exponent(std::numeric_limits<std::uint64_t>::max()), 31);
}

TEST(MadUnits, MtuCodesToBytes) {
  EXPECT_EQ(mtu_code_to_bytes(1), 256U);
  EXPECT_EQ(mtu_code_to_bytes(2), 512U);
  EXPECT_EQ(mtu_code_to_bytes(3), 1024U);
  EXPECT_EQ(mtu_code_to_bytes(4), 2048U);
  EXPECT_EQ(mtu_code_to_bytes(5), 4096U);
  EXPECT_EQ(mtu_code_to_bytes(static_cast<std::uint8_t>(MtuCode::mtu_4096)), 4096U);
  EXPECT_EQ(mtu_code_to_bytes(0), 0U);
  EXPECT_EQ(mtu_code_to_bytes(6), 0U);
  EXPECT_EQ(mtu_code_to_bytes(15), 0U);
  EXPECT_EQ(mtu_code_to_bytes(255), 0U);
  EXPECT_FALSE(is_valid_mtu_code(0));
  for (std::uint64_t code = 1; code <= 5; ++code) EXPECT_TRUE(is_valid_mtu_code(code)) << code;
  for (std::uint64_t code = 6; code <= 15; ++code) EXPECT_FALSE(is_valid_mtu_code(code)) << code;
}

TEST(MadUnits, BytesToLargestMtuCodeNotAbove) {
  EXPECT_EQ(mtu_bytes_to_code(0), 0);
  EXPECT_EQ(mtu_bytes_to_code(255), 0);
  EXPECT_EQ(mtu_bytes_to_code(256), 1);
  EXPECT_EQ(mtu_bytes_to_code(511), 1);
  EXPECT_EQ(mtu_bytes_to_code(512), 2);
  EXPECT_EQ(mtu_bytes_to_code(1024), 3);
  EXPECT_EQ(mtu_bytes_to_code(2047), 3);
  EXPECT_EQ(mtu_bytes_to_code(2048), 4);
  EXPECT_EQ(mtu_bytes_to_code(4095), 4);
  EXPECT_EQ(mtu_bytes_to_code(4096), 5);
  EXPECT_EQ(mtu_bytes_to_code(9000), 5);  // an Ethernet jumbo MTU still maps to 4096
  EXPECT_EQ(mtu_bytes_to_code(std::numeric_limits<std::uint32_t>::max()), 5);
  for (std::uint8_t code = 1; code <= 5; ++code) {
    EXPECT_EQ(mtu_bytes_to_code(mtu_code_to_bytes(code)), code);
  }
}

// IBTA static rate encoding (PathRecord Rate, CM Packet Rate): 0 = port current rate, 1 reserved,
// 2..25 link rates in the spec's (non-numeric) order.
TEST(MadUnits, PacketRateCodes) {
  EXPECT_TRUE(is_valid_packet_rate(0));
  EXPECT_FALSE(is_valid_packet_rate(1));
  for (std::uint64_t code = 2; code <= 25; ++code) EXPECT_TRUE(is_valid_packet_rate(code)) << code;
  for (std::uint64_t code = 26; code <= 63; ++code) {
    EXPECT_FALSE(is_valid_packet_rate(code)) << code;
  }

  struct Rate {
    std::uint8_t code;
    std::uint32_t mbps;
  };
  for (const Rate r : {Rate{2, 2500},     Rate{3, 10000},    Rate{4, 30000},   Rate{5, 5000},
                       Rate{6, 20000},    Rate{7, 40000},    Rate{8, 60000},   Rate{9, 80000},
                       Rate{10, 120000},  Rate{11, 14000},   Rate{12, 56000},  Rate{13, 112000},
                       Rate{14, 168000},  Rate{15, 25000},   Rate{16, 100000}, Rate{17, 200000},
                       Rate{18, 300000},  Rate{19, 28000},   Rate{20, 50000},  Rate{21, 400000},
                       Rate{22, 600000},  Rate{23, 800000},  Rate{24, 1200000}, Rate{25, 1600000}}) {
    EXPECT_EQ(packet_rate_to_mbps(r.code), r.mbps) << int{r.code};
  }
  EXPECT_EQ(packet_rate_to_mbps(0), 0U);  // port current rate: no fixed figure
  EXPECT_EQ(packet_rate_to_mbps(1), 0U);
  EXPECT_EQ(packet_rate_to_mbps(26), 0U);
  EXPECT_EQ(packet_rate_to_mbps(63), 0U);
  EXPECT_EQ(packet_rate_to_mbps(255), 0U);
}

}  // namespace
}  // namespace fastcm::mad
