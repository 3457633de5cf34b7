// Per-shard timer wheel for the CM protocol timers (REQ/REP/DREQ/LAP retransmission, MRA extended
// wait, time-wait, automatic-MRA deadline).
//
// Design: a hierarchical hashed timing wheel (Varghese & Lauck) with occupancy bitmaps.
// - Time is the caller's, in nanoseconds. The wheel counts ticks of 2^tick_shift ns; a timer's
//   fire tick is its deadline rounded UP to a whole tick, so it never fires early.
// - kLevels levels of 64 slots; level L holds digit L (bits 6L..6L+5) of the fire tick. Eleven
//   6-bit digits cover every 64-bit tick, so any deadline fits and there is no overflow list.
// - Invariant: a timer whose fire tick F is above the current tick C sits at level
//   L = (highest bit where F and C differ) / 6, slot = digit L of F. F and C then agree above
//   digit L and F's digit L is greater than C's, so every occupied slot starts after C and the
//   earliest one is found with two bit scans (lowest occupied level, then lowest occupied slot).
//   A timer with F <= C (armed late, or being handed to the callback) sits in a plain list.
// - When the current tick reaches a slot's start, the slot cascades: each timer fires if F equals
//   the tick, otherwise it moves to the lower level its invariant now names.
//
// Cost: arm, cancel and rearm are O(1) (a few shifts, a list splice, a bitmap bit). expire() is
// O(1) per occupied slot visited plus O(1) per timer fired or cascaded; empty ticks cost nothing, so
// the caller may call it at any cadence and jump hours at once. A timer cascades at most once per
// level it starts above level 0, i.e. (bit_width(F xor C) - 1) / 6 times: about log64 of its span.
//
// Tick: the engine default is 2^10 ns = 1.024 µs. CM timeouts are 4.096 µs · 2^t = 2^(12+t) ns, so
// a power-of-two tick divides them and converts with shifts. The wheel adds under one tick of
// lateness: at most 25% of the shortest CM timeout (t = 0) and under 0.1% from t = 10 (4 ms) on.
// A finer tick costs no per-tick work (empty ticks are skipped); a surviving timer pays one cascade
// per 6 bits of its span: 3 for the common t = 20 (4.3 s), 6 for the longest, 2^31 · 4.096 µs times
// 15 retries (under 2^47 ns).
//
// Precision and order: a timer fires in the first expire(now) call with now >= its fire time (the
// deadline rounded up to a tick, so at most one tick minus 1 ns after the deadline); how much later
// than that depends only on how often the caller calls expire(). One exception bounds the work of a
// call: a timer armed from inside the callback with a fire time at or before the tick being
// processed fires in the next call. Within one call, timers that were already due when armed fire
// first, in arming order; the others follow in nondecreasing fire tick. Within one tick the order is
// unspecified.
//
// Deferred arms: defer(node, delay) arms a timer relative to the time the next expire() call is
// given, not to a time read now. A shard defers the timers it arms while it handles a batch of MADs
// and calls expire() when the batch ends: one clock read per batch instead of one per timer, the
// deadline is never earlier than delay after the arming (only later, by the rest of the batch), and a
// timer re-armed or cancelled within the batch (the passive side's automatic-MRA deadline, replaced
// by the REP's retransmission) never reaches the slots. Until that expire() the node is armed
// (armed(), size(), cancel() as usual) and next_deadline() says "now".
//
// Threads: single-threaded. The wheel and every node armed in it belong to one shard thread; there
// is no internal synchronization.
//
// Memory: the wheel allocates nothing, ever: its slots are fixed arrays inside the object (about
// 11 KiB), and the timer node is intrusive (embedded in its owner). Usage:
//   struct CepTimer : TimerNode { Cep* cep; };             // a member of the CEP slot
//   wheel.rearm(cep.retransmit, now + timeout_ns);
//   wheel.expire(now, [](TimerNode& n) { on_timeout(*static_cast<CepTimer&>(n).cep); });
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>

namespace fastcm::engine {

namespace detail {
// Doubly-linked circular list link. A slot head points to itself when empty; a node's links are
// null while it is not armed.
struct TimerLink {
  TimerLink* next = nullptr;
  TimerLink* prev = nullptr;
};
}  // namespace detail

class TimerWheel;

// One pending timer, embedded in its owner (derive from it, or hold it as a member). Not copyable
// or movable: the wheel links to its address. It must not be destroyed while armed (asserted).
class TimerNode : private detail::TimerLink {
 public:
  TimerNode() noexcept = default;
  TimerNode(const TimerNode&) = delete;
  TimerNode& operator=(const TimerNode&) = delete;
  ~TimerNode() { assert(!armed()); }

  // True between a successful arm/rearm and its firing or cancel. Thread: the owning shard.
  [[nodiscard]] bool armed() const noexcept { return next != nullptr; }
  // The deadline given to the last arm/rearm, or the one a deferred arm was given when its
  // expire() placed it (ns, caller's clock), also after it fired; a deferred arm not yet placed
  // holds its delay here. Thread: the owning shard.
  [[nodiscard]] std::uint64_t deadline_ns() const noexcept { return deadline_ns_; }

 private:
  friend class TimerWheel;
  std::uint64_t deadline_ns_ = 0;  // a delay while `deferred_`
  bool deferred_ = false;          // waits in the wheel's deferred_ list for the next expire()
};

struct TimerWheelConfig {
  // Tick = 2^tick_shift ns, 0..30 (1 ns .. 1.07 s). See the header comment for the default.
  unsigned tick_shift = 10;
  // The caller's clock at construction; the wheel's current tick starts there.
  std::uint64_t start_ns = 0;
};

class TimerWheel {
 public:
  static constexpr unsigned kMaxTickShift = 30;

  // Throws std::invalid_argument if config.tick_shift > kMaxTickShift. Allocates nothing.
  explicit TimerWheel(TimerWheelConfig config = {})
      : shift_(checked_shift(config.tick_shift)), now_tick_(config.start_ns >> shift_) {
    for (auto& level : slots_) {
      for (auto& head : level) make_empty(head);
    }
    make_empty(due_);
    make_empty(firing_);
    make_empty(deferred_);
  }

  // Unarms every node still armed (O(armed)), so the nodes may outlive the wheel.
  ~TimerWheel() {
    for (unsigned level = 0; level < kLevels; ++level) {
      for (std::uint64_t bits = occupied_[level]; bits != 0; bits &= bits - 1) {
        disarm_all(slots_[level][static_cast<unsigned>(std::countr_zero(bits))]);
      }
    }
    disarm_all(due_);
    disarm_all(firing_);
    disarm_all(deferred_);
  }

  TimerWheel(const TimerWheel&) = delete;
  TimerWheel& operator=(const TimerWheel&) = delete;
  TimerWheel(TimerWheel&&) = delete;
  TimerWheel& operator=(TimerWheel&&) = delete;

  // Arms `node` to fire at `deadline_ns` (caller's clock, absolute). Returns false and changes
  // nothing if the node is already armed (use rearm to move it). A deadline already due fires at
  // the next expire() call. Deadlines whose rounded fire time passes 2^64 - 1 ns never fire.
  // Thread: the owning shard; may be called from inside expire()'s callback.
  bool arm(TimerNode& node, std::uint64_t deadline_ns) noexcept {
    if (node.armed()) return false;
    node.deadline_ns_ = deadline_ns;
    place(node, fire_tick(deadline_ns));
    ++size_;
    return true;
  }

  // Disarms `node` so it will not fire. Returns true if it was armed, false (no effect) if not,
  // including when it is the node whose callback is running. Thread: the owning shard; may be
  // called from inside expire()'s callback on any node.
  bool cancel(TimerNode& node) noexcept {
    if (!node.armed()) return false;
    unlink(node);
    if (node.deferred_) {
      node.deferred_ = false;  // its deadline field holds a delay: it was in no slot
    } else if (const std::uint64_t tick = fire_tick(node.deadline_ns_); tick > now_tick_) {
      // In a slot (see the invariant): clear its bit if it emptied.
      const unsigned level = level_of(tick);
      const unsigned slot = digit(tick, level);
      if (is_empty(slots_[level][slot])) clear_bit(level, slot);
    }
    node.next = nullptr;
    node.prev = nullptr;
    --size_;
    return true;
  }

  // Cancel (if armed) and arm in one call: the node fires once, at `deadline_ns`.
  // Thread and callback rules as arm().
  void rearm(TimerNode& node, std::uint64_t deadline_ns) noexcept {
    cancel(node);
    arm(node, deadline_ns);
  }

  // Cancel (if armed) and arm `node` to fire `delay_ns` after the time the next expire() call is
  // given (see "Deferred arms" above). Thread and callback rules as arm().
  void defer(TimerNode& node, std::uint64_t delay_ns) noexcept {
    cancel(node);
    ++size_;
    node.deadline_ns_ = delay_ns;
    node.deferred_ = true;
    push_back(deferred_, node);
  }

  // Fires every timer due by `now_ns` (see the header comment for which and in what order), calling
  // on_expired(TimerNode&) for each after disarming it. The callback may arm, rearm or cancel any
  // node, the firing one included. A `now_ns` below an earlier call's is treated as that earlier
  // time. Returns the number of callbacks run. If the callback throws, the exception propagates
  // and the timers not yet handed over stay armed and fire at the next call. Not re-entrant: must
  // not be called from inside its own callback. Thread: the owning shard.
  template <class F>
    requires std::invocable<F&, TimerNode&>
  std::size_t expire(std::uint64_t now_ns, F&& on_expired) {
    const std::uint64_t target = std::max(now_tick_, now_ns >> shift_);
    place_deferred(std::max(now_ns, tick_to_ns(now_tick_)));
    splice_back(firing_, due_);  // already due: earlier than anything in the slots
    std::size_t fired = fire_all(on_expired);
    while (levels_occupied_ != 0) {
      const std::uint64_t event = next_event_tick();
      if (event > target) break;
      now_tick_ = event;
      cascade(event);
      fired += fire_all(on_expired);
    }
    now_tick_ = target;
    return fired;
  }

  // When the caller must next call expire(): nullopt if nothing is armed; otherwise a time (ns,
  // caller's clock) no later than the earliest fire time. It is exact when that timer fires within
  // the current 64-tick block; otherwise it is the start of the slot holding it, and calling
  // expire() there cascades it, after which this returns a closer bound (at most one early wake per
  // level). It is at or before the current tick's start when a timer is already due. Saturates at
  // 2^64 - 1. Thread: the owning shard.
  [[nodiscard]] std::optional<std::uint64_t> next_deadline() const noexcept {
    if (!is_empty(due_) || !is_empty(firing_) || !is_empty(deferred_)) return tick_to_ns(now_tick_);
    if (levels_occupied_ == 0) return std::nullopt;
    return tick_to_ns(next_event_tick());
  }

  // Number of armed timers.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  // Tick length in ns.
  [[nodiscard]] std::uint64_t tick_ns() const noexcept { return std::uint64_t{1} << shift_; }
  // Start (ns) of the wheel's current tick: the last expire() time (or start_ns) rounded down.
  [[nodiscard]] std::uint64_t now_ns() const noexcept { return tick_to_ns(now_tick_); }

 private:
  using Link = detail::TimerLink;
  static constexpr unsigned kSlotBits = 6;
  static constexpr unsigned kSlots = 1U << kSlotBits;
  static constexpr unsigned kLevels = (64 + kSlotBits - 1) / kSlotBits;

  static unsigned checked_shift(unsigned shift) {
    if (shift > kMaxTickShift) throw std::invalid_argument("TimerWheel: tick_shift above 30");
    return shift;
  }

  static void make_empty(Link& head) noexcept { head.next = head.prev = &head; }
  static bool is_empty(const Link& head) noexcept { return head.next == &head; }

  static void unlink(Link& l) noexcept {
    l.prev->next = l.next;
    l.next->prev = l.prev;
  }

  static void push_back(Link& head, Link& l) noexcept {
    l.prev = head.prev;
    l.next = &head;
    head.prev->next = &l;
    head.prev = &l;
  }

  // Moves all of `from` to the end of `to`; `from` ends empty.
  static void splice_back(Link& to, Link& from) noexcept {
    if (is_empty(from)) return;
    from.next->prev = to.prev;
    to.prev->next = from.next;
    from.prev->next = &to;
    to.prev = from.prev;
    make_empty(from);
  }

  static void disarm_all(Link& head) noexcept {
    for (Link* l = head.next; l != &head;) {
      Link* const next = l->next;
      l->next = l->prev = nullptr;
      static_cast<TimerNode&>(*l).deferred_ = false;
      l = next;
    }
    make_empty(head);
  }

  static unsigned digit(std::uint64_t tick, unsigned level) noexcept {
    return static_cast<unsigned>(tick >> (kSlotBits * level)) & (kSlots - 1);
  }

  // Deadline rounded up to a tick, without overflow (2^(64-shift) at most).
  [[nodiscard]] std::uint64_t fire_tick(std::uint64_t deadline_ns) const noexcept {
    const std::uint64_t whole = deadline_ns >> shift_;
    return whole + ((deadline_ns & (tick_ns() - 1)) != 0 ? 1 : 0);
  }

  [[nodiscard]] std::uint64_t tick_to_ns(std::uint64_t tick) const noexcept {
    return tick > (~std::uint64_t{0} >> shift_) ? ~std::uint64_t{0} : tick << shift_;
  }

  // Level of a tick above now_tick_, per the invariant.
  [[nodiscard]] unsigned level_of(std::uint64_t tick) const noexcept {
    return (static_cast<unsigned>(std::bit_width(tick ^ now_tick_)) - 1) / kSlotBits;
  }

  void place(TimerNode& node, std::uint64_t tick) noexcept {
    if (tick <= now_tick_) {
      push_back(due_, node);
      return;
    }
    const unsigned level = level_of(tick);
    const unsigned slot = digit(tick, level);
    push_back(slots_[level][slot], node);
    occupied_[level] |= std::uint64_t{1} << slot;
    levels_occupied_ |= 1U << level;
  }

  void clear_bit(unsigned level, unsigned slot) noexcept {
    occupied_[level] &= ~(std::uint64_t{1} << slot);
    if (occupied_[level] == 0) levels_occupied_ &= ~(1U << level);
  }

  // Places every deferred arm at now_ns + its delay (saturating: such a timer never fires).
  // Requires now_ns >= the current tick's start.
  void place_deferred(std::uint64_t now_ns) noexcept {
    while (!is_empty(deferred_)) {
      auto& node = static_cast<TimerNode&>(*deferred_.next);
      unlink(node);
      node.deferred_ = false;
      const std::uint64_t room = ~std::uint64_t{0} - now_ns;
      node.deadline_ns_ = now_ns + std::min(node.deadline_ns_, room);
      place(node, fire_tick(node.deadline_ns_));
    }
  }

  // Start tick of the earliest occupied slot: the lowest occupied slot of the lowest occupied
  // level (a lower level's slots all lie inside the current block of the level above).
  // Requires levels_occupied_ != 0.
  [[nodiscard]] std::uint64_t next_event_tick() const noexcept {
    const auto level = static_cast<unsigned>(std::countr_zero(levels_occupied_));
    const auto slot = static_cast<std::uint64_t>(std::countr_zero(occupied_[level]));
    const unsigned low_bits = kSlotBits * (level + 1);
    const std::uint64_t high = low_bits >= 64 ? 0 : (now_tick_ >> low_bits) << low_bits;
    return high | (slot << (kSlotBits * level));
  }

  // now_tick_ has just reached the start of the earliest occupied slot: hand its timers due now to
  // firing_ and move the others down. No callback runs here, so the slot walk is undisturbed.
  void cascade(std::uint64_t tick) noexcept {
    const auto level = static_cast<unsigned>(std::countr_zero(levels_occupied_));
    const unsigned slot = digit(tick, level);
    Link& head = slots_[level][slot];
    clear_bit(level, slot);
    if (level == 0) {  // every timer here has exactly this fire tick
      splice_back(firing_, head);
      return;
    }
    for (Link* l = head.next; l != &head;) {
      Link* const next = l->next;
      unlink(*l);
      auto& node = static_cast<TimerNode&>(*l);
      const std::uint64_t fire = fire_tick(node.deadline_ns_);
      if (fire == tick) {
        push_back(firing_, node);
      } else {
        place(node, fire);
      }
      l = next;
    }
  }

  // Runs the callback for each node in firing_, disarming each first. firing_ is a member so that
  // a callback's cancel() of a node still queued here unlinks it safely.
  template <class F>
  std::size_t fire_all(F& on_expired) {
    std::size_t fired = 0;
    while (!is_empty(firing_)) {
      Link& l = *firing_.next;
      unlink(l);
      l.next = l.prev = nullptr;
      --size_;
      ++fired;
      on_expired(static_cast<TimerNode&>(l));
    }
    return fired;
  }

  const unsigned shift_;
  std::uint64_t now_tick_;  // every timer with fire tick <= now_tick_ is in due_, firing_ or fired
  std::size_t size_ = 0;
  std::uint32_t levels_occupied_ = 0;  // bit L set iff occupied_[L] != 0
  std::array<std::uint64_t, kLevels> occupied_{};  // bit s of [L] set iff slots_[L][s] non-empty
  std::array<std::array<Link, kSlots>, kLevels> slots_;
  Link due_;     // fire tick <= now_tick_ when armed; fired first by the next expire()
  Link firing_;  // being handed to the callback by the running expire()
  Link deferred_;  // deferred arms, placed by the next expire()
};

}  // namespace fastcm::engine
