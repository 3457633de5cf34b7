// The loopback switch's fault rules and their seeded, deterministic decisions.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fabric/loopback/fault_rule.h"

namespace fastcm::loopback {

// What happens to one MAD: how many copies arrive (0 = lost, 2 = duplicated) and how long they are
// held back before the receiver may see them.
struct FaultDecision {
  std::uint8_t copies = 1;
  std::uint64_t delay_ns = 0;
};

// Up to kMaxRules rules over fabric-wide port indices.
//
// Determinism: the n-th MAD a direction (source port -> destination port) carries under a rule gets
// its fate from splitmix64 of (seed, direction, n), with n taken from a per-direction atomic counter.
// So one sending thread per source port always sees the same decisions for the same seed and send
// order, whatever the other threads do; without any rule nothing is counted or drawn.
class FaultTable {
 public:
  static constexpr std::size_t kMaxRules = 64;
  static constexpr std::uint32_t kAnyPort = 0xffff'ffff;

  // Thread contract: construction only. Throws std::bad_alloc.
  FaultTable(std::uint64_t seed, std::uint32_t port_count);

  // Adds `rule` for the given ports (fabric-wide indices or kAnyPort; the rule's own from/to are
  // ignored), replacing a rule with the same ports and attr_id. Throws std::invalid_argument for a
  // percentage outside [0, 100] (or NaN) or reorder_pct > 0 with a zero reorder window, and
  // std::length_error when kMaxRules distinct rules exist; the table is then unchanged.
  // Thread contract: no decide() may run meanwhile (rules are plain data read without sync).
  void set(std::uint32_t from, std::uint32_t to, const FaultRule& rule);

  // Removes every rule (the direction counters keep counting). Same thread contract as set().
  void clear() noexcept;

  // Whether no rule is installed: every decide() would then return the default (one copy, no
  // delay). Thread contract: as decide().
  [[nodiscard]] bool empty() const noexcept { return rule_count_ == 0; }

  // The fate of one MAD. Thread contract: any thread, concurrently with other decide() calls.
  [[nodiscard]] FaultDecision decide(std::uint32_t from, std::uint32_t to,
                                     std::uint16_t attr_id) noexcept;

 private:
  struct Stored {
    std::uint32_t from = kAnyPort;
    std::uint32_t to = kAnyPort;
    std::uint32_t attr = kAnyAttr;
    std::uint32_t loss_ppm = 0;  // parts per million
    std::uint32_t dup_ppm = 0;
    std::uint32_t reorder_ppm = 0;
    std::uint64_t delay_ns = 0;
    std::uint64_t reorder_window_ns = 0;
    int specificity = 0;
  };
  static constexpr std::uint32_t kAnyAttr = 0x1'0000;  // outside the 16-bit attribute space

  [[nodiscard]] const Stored* match(std::uint32_t from, std::uint32_t to,
                                    std::uint16_t attr_id) const noexcept;

  std::uint64_t seed_;
  std::uint32_t port_count_;
  std::array<Stored, kMaxRules> rules_{};
  std::size_t rule_count_ = 0;
  // One counter per direction, index from * port_count + to. Relaxed: each fetch_add only needs a
  // distinct value; nothing is published through it.
  std::unique_ptr<std::atomic<std::uint64_t>[]> sequence_;
};

}  // namespace fastcm::loopback
