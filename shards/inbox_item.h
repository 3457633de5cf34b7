// What a shard's inbox carries: one pointer-sized word per item, a pointer or a slot number tagged
// in its low three bits. The inbox (shard_inbox.h) moves words without looking inside; the shard
// makes and reads them only through this type.
//
//   mad        a received MAD routed here by another shard's worker, or by progress() (the item
//              owns one reference)
//   mad_chain  a MAD no single shard can be named for (RoutingKey::any_shard): offered to shard 0,
//              then passed along until a shard claims it; the last one handles it regardless
//   mad_overflow
//              a REQ another shard passed on because it had no room for a new handshake
//              (Outbox::pass_on without an owner): handled as a mad item, but never passed on for
//              that reason again
//   command    a Command on an API thread's stack; that thread waits for its `done`
//   posted     a PostedCall (posted_call.h): pooled, or on its waiting poster's stack
//   destroy    the slot of an endpoint another thread detached; the on_destroyed call waits in the
//              shard's per-slot array (one per slot at a time)
//   stale      the received REQ or REP by which another shard found an endpoint of this one stale
//              (Outbox::notify_stale; the item owns one reference)
//
// A plain value: any thread, no synchronisation of its own (the inbox's ring publishes what the
// pointers point to).
#pragma once

#include <cassert>
#include <cstdint>

#include "engine/mad_buf.h"

namespace fastcm::shards {

struct Command;
class PostedCall;

class InboxItem {
 public:
  enum class Kind : std::uintptr_t {
    mad = 0,
    mad_chain = 1,
    command = 2,
    destroy = 3,
    stale = 4,
    posted = 5,
    mad_overflow = 6
  };

  // `kind`: mad, mad_chain or mad_overflow.
  [[nodiscard]] static InboxItem mad(engine::MadBuf& mad, Kind kind) noexcept {
    assert(carries_mad(kind) && kind != Kind::stale);
    return tagged(&mad, kind);
  }
  [[nodiscard]] static InboxItem command(Command& cmd) noexcept { return tagged(&cmd, Kind::command); }
  [[nodiscard]] static InboxItem destroy(std::uint32_t slot) noexcept {
    return InboxItem(std::uintptr_t{slot} << kTagBits | static_cast<std::uintptr_t>(Kind::destroy));
  }
  [[nodiscard]] static InboxItem stale(engine::MadBuf& cause) noexcept { return tagged(&cause, Kind::stale); }
  [[nodiscard]] static InboxItem posted(PostedCall& call) noexcept { return tagged(&call, Kind::posted); }
  // An item as the inbox hands it back.
  [[nodiscard]] static InboxItem from_word(void* word) noexcept {
    return InboxItem(reinterpret_cast<std::uintptr_t>(word));
  }

  // The item as the inbox carries it.
  [[nodiscard]] void* word() const noexcept { return reinterpret_cast<void*>(word_); }
  [[nodiscard]] Kind kind() const noexcept { return static_cast<Kind>(word_ & kTagMask); }
  // The MAD of a mad, mad_chain, mad_overflow or stale item (each owns one reference); nullptr for
  // the others.
  [[nodiscard]] engine::MadBuf* mad() const noexcept {
    return carries_mad(kind()) ? pointer<engine::MadBuf>() : nullptr;
  }
  // The Command of a command item.
  [[nodiscard]] Command& command() const noexcept {
    assert(kind() == Kind::command);
    return *pointer<Command>();
  }
  // The PostedCall of a posted item.
  [[nodiscard]] PostedCall& posted() const noexcept {
    assert(kind() == Kind::posted);
    return *pointer<PostedCall>();
  }
  // The slot of a destroy item.
  [[nodiscard]] std::uint32_t slot() const noexcept {
    assert(kind() == Kind::destroy);
    return static_cast<std::uint32_t>(word_ >> kTagBits);
  }

 private:
  // Every pointee is at least 8-aligned: pool MADs and pooled posted calls start on cache lines,
  // commands and stack posted calls hold pointers.
  static constexpr unsigned kTagBits = 3;
  static constexpr std::uintptr_t kTagMask = (std::uintptr_t{1} << kTagBits) - 1;

  explicit InboxItem(std::uintptr_t word) noexcept : word_(word) {}
  [[nodiscard]] static constexpr bool carries_mad(Kind k) noexcept {
    return k == Kind::mad || k == Kind::mad_chain || k == Kind::mad_overflow || k == Kind::stale;
  }
  template <typename T>
  [[nodiscard]] static InboxItem tagged(T* p, Kind kind) noexcept {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    assert((address & kTagMask) == 0);
    return InboxItem(address | static_cast<std::uintptr_t>(kind));
  }
  template <typename T>
  [[nodiscard]] T* pointer() const noexcept {
    return reinterpret_cast<T*>(word_ & ~kTagMask);
  }

  std::uintptr_t word_;
};

}  // namespace fastcm::shards
