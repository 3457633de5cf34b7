// Listens: service ID/mask and port → where new REQs and SIDR_REQs go, with a bounded backlog.
//
// Fixed capacity, allocated at construction. A listen's Id has the top bit of its generation set,
// so it can never name an endpoint (endpoint generations stay below 2^31).
// Thread contract: one thread (the inline engine's driver). The sharded engine publishes
// snapshots of this table to its shards (DESIGN.md "Concurrency contract").
#pragma once

#include <bit>
#include <cstdint>
#include <memory>

#include "fastcm/engine.h"
#include "fastcm/id.h"
#include "fastcm/status.h"

namespace fastcm::engine {

inline constexpr std::uint32_t kListenGenerationTag = 1u << 31;

struct Listen {
  ListenParams params;
  std::uint32_t generation = kListenGenerationTag | 1u;
  std::uint32_t backlog_used = 0;  // REQs handed to the application and not yet answered
  bool live = false;
};

class ListenTable {
 public:
  explicit ListenTable(std::uint32_t capacity)
      : listens_(std::make_unique<Listen[]>(capacity)), capacity_(capacity) {}

  [[nodiscard]] static bool is_listen_id(Id id) noexcept {
    return (id.generation() & kListenGenerationTag) != 0;
  }

  // Errors: invalid_argument (no or two deliveries), service_in_use (same masked ID, mask and
  // port), no_resources (table full).
  Status add(const ListenParams& params, Id& out) noexcept {
    const bool has_handler = params.delivery.handler != nullptr;
    const bool has_queue = params.delivery.queue != nullptr;
    if (has_handler == has_queue || params.backlog == 0) return Status::invalid_argument;
    Listen* free_slot = nullptr;
    for (std::uint32_t i = 0; i < capacity_; ++i) {
      Listen& l = listens_[i];
      if (!l.live) {
        if (free_slot == nullptr) free_slot = &l;
        continue;
      }
      if (l.params.port == params.port && l.params.service_mask == params.service_mask &&
          (l.params.service_id & l.params.service_mask) == (params.service_id & params.service_mask)) {
        return Status::service_in_use;
      }
    }
    if (free_slot == nullptr) return Status::no_resources;
    free_slot->params = params;
    free_slot->backlog_used = 0;
    free_slot->live = true;
    out = id_of(*free_slot);
    return Status::ok;
  }

  // Errors: stale_id.
  Status remove(Id id) noexcept {
    Listen* l = find(id);
    if (l == nullptr) return Status::stale_id;
    l->live = false;
    l->generation = kListenGenerationTag | ((l->generation + 1) & ~kListenGenerationTag);
    return Status::ok;
  }

  [[nodiscard]] Listen* find(Id id) noexcept {
    const std::uint32_t slot = id.comm_id();
    if (!is_listen_id(id) || slot >= capacity_) return nullptr;
    Listen& l = listens_[slot];
    return l.live && l.generation == id.generation() ? &l : nullptr;
  }

  // The listen for a REQ to `service_id` arriving on port number `port_num`: the one with the
  // longest mask wins, a port-specific listen over an every-port one. Null when none matches.
  [[nodiscard]] Listen* match(std::uint64_t service_id, std::uint8_t port_num) noexcept {
    Listen* best = nullptr;
    for (std::uint32_t i = 0; i < capacity_; ++i) {
      Listen& l = listens_[i];
      if (!l.live || (l.params.port != 0 && l.params.port != port_num) ||
          ((service_id ^ l.params.service_id) & l.params.service_mask) != 0) {
        continue;
      }
      if (best == nullptr || more_specific(l, *best)) best = &l;
    }
    return best;
  }

  // Backlog accounting: a REQ handed to the application counts until it is answered or abandoned.
  // take_backlog returns false (taking nothing) when the backlog is full.
  [[nodiscard]] bool take_backlog(Listen& l) noexcept {
    if (l.backlog_used >= l.params.backlog) return false;
    ++l.backlog_used;
    return true;
  }
  void release_backlog(std::uint32_t slot) noexcept {
    if (slot < capacity_ && listens_[slot].backlog_used > 0) --listens_[slot].backlog_used;
  }
  [[nodiscard]] std::uint32_t slot_of(const Listen& l) const noexcept {
    return static_cast<std::uint32_t>(&l - listens_.get());
  }

  [[nodiscard]] Id id_of(const Listen& l) const noexcept {
    return Id::make(slot_of(l), l.generation);
  }

 private:
  [[nodiscard]] static bool more_specific(const Listen& a, const Listen& b) noexcept {
    const int bits_a = std::popcount(a.params.service_mask);
    const int bits_b = std::popcount(b.params.service_mask);
    if (bits_a != bits_b) return bits_a > bits_b;
    return a.params.port != 0 && b.params.port == 0;
  }

  std::unique_ptr<Listen[]> listens_;
  std::uint32_t capacity_;
};

}  // namespace fastcm::engine
