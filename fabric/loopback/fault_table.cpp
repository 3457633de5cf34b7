#include "fabric/loopback/fault_table.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fastcm::loopback {
namespace {

constexpr std::uint32_t kMillion = 1'000'000;
constexpr std::uint64_t kGolden = 0x9e37'79b9'7f4a'7c15;

// splitmix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += kGolden;
  x = (x ^ (x >> 30)) * 0xbf58'476d'1ce4'e5b9;
  x = (x ^ (x >> 27)) * 0x94d0'49bb'1331'11eb;
  return x ^ (x >> 31);
}

std::uint32_t to_ppm(double pct, const char* what) {
  if (!(pct >= 0.0 && pct <= 100.0)) {  // also rejects NaN
    throw std::invalid_argument(std::string("FaultRule: ") + what + " must be in [0, 100]");
  }
  return static_cast<std::uint32_t>(std::lround(pct * (kMillion / 100)));
}

// Independent draws for one MAD, all derived from its (seed, direction, sequence) key.
class Draws {
 public:
  explicit Draws(std::uint64_t key) noexcept : key_(key) {}
  std::uint64_t next() noexcept { return splitmix64(key_ += kGolden); }
  bool chance(std::uint32_t ppm) noexcept { return next() % kMillion < ppm; }

 private:
  std::uint64_t key_;
};

}  // namespace

FaultTable::FaultTable(std::uint64_t seed, std::uint32_t port_count)
    : seed_(seed),
      port_count_(port_count),
      sequence_(std::make_unique<std::atomic<std::uint64_t>[]>(std::size_t{port_count} *
                                                                port_count)) {}

void FaultTable::set(std::uint32_t from, std::uint32_t to, const FaultRule& rule) {
  Stored s;
  s.from = from;
  s.to = to;
  s.attr = rule.attr_id ? *rule.attr_id : kAnyAttr;
  s.loss_ppm = to_ppm(rule.loss_pct, "loss_pct");
  s.dup_ppm = to_ppm(rule.dup_pct, "dup_pct");
  s.reorder_ppm = to_ppm(rule.reorder_pct, "reorder_pct");
  if (s.reorder_ppm > 0 && rule.reorder_window_ns == 0) {
    throw std::invalid_argument("FaultRule: reorder_pct needs a reorder_window_ns");
  }
  s.delay_ns = rule.delay_ns;
  s.reorder_window_ns = rule.reorder_window_ns;
  s.specificity = (rule.attr_id ? 4 : 0) + (from != kAnyPort ? 2 : 0) + (to != kAnyPort ? 1 : 0);
  for (std::size_t i = 0; i < rule_count_; ++i) {
    Stored& r = rules_[i];
    if (r.from == s.from && r.to == s.to && r.attr == s.attr) {
      r = s;
      return;
    }
  }
  if (rule_count_ == kMaxRules) throw std::length_error("FaultTable: too many fault rules");
  rules_[rule_count_++] = s;
}

void FaultTable::clear() noexcept { rule_count_ = 0; }

const FaultTable::Stored* FaultTable::match(std::uint32_t from, std::uint32_t to,
                                            std::uint16_t attr_id) const noexcept {
  // At most one rule per specificity can match a MAD (the set fields must equal the MAD's), so
  // the highest specificity is a unique winner.
  const Stored* best = nullptr;
  for (std::size_t i = 0; i < rule_count_; ++i) {
    const Stored& r = rules_[i];
    if ((r.from == kAnyPort || r.from == from) && (r.to == kAnyPort || r.to == to) &&
        (r.attr == kAnyAttr || r.attr == attr_id) &&
        (best == nullptr || r.specificity > best->specificity)) {
      best = &r;
    }
  }
  return best;
}

FaultDecision FaultTable::decide(std::uint32_t from, std::uint32_t to,
                                 std::uint16_t attr_id) noexcept {
  const Stored* rule = match(from, to, attr_id);
  if (rule == nullptr) return {};
  const std::uint64_t direction = std::uint64_t{from} * port_count_ + to;
  const std::uint64_t n = sequence_[direction].fetch_add(1, std::memory_order_relaxed);
  Draws draws(splitmix64(splitmix64(seed_ ^ direction) ^ n));
  if (draws.chance(rule->loss_ppm)) return {.copies = 0, .delay_ns = 0};
  FaultDecision d;
  d.copies = draws.chance(rule->dup_ppm) ? 2 : 1;
  d.delay_ns = rule->delay_ns;
  if (draws.chance(rule->reorder_ppm)) d.delay_ns += 1 + draws.next() % rule->reorder_window_ns;
  return d;
}

}  // namespace fastcm::loopback
