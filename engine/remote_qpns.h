// The remote QPs this engine is connected to, across all shards: the stale-connection check of
// IBTA 12.9.8.3.2 (a REQ or REP from a remote QP we still consider connected means the peer lost
// that connection).
//
// A REQ is handled by the shard that received it, and an active side's REP by the shard of the
// endpoint that sent the REQ, so the connection either collides with may live on any shard. The
// passive side claims a REQ's remote QP before its endpoint is seen, so the record also tells a
// shard that a copy of the REQ arriving at another port belongs to another shard's endpoint
// (Outbox::pass_on). Entries are written at most once per connection (when its REQ is accepted or
// its REP arrives) and erased when the endpoint is freed: never per MAD.
#pragma once

#include <cstdint>
#include <optional>

#include "fastcm/id.h"
#include "fastcm/types.h"

namespace fastcm::engine {

struct RemoteQpnKey {
  Qpn qpn = 0;
  Guid ca_guid = 0;
  friend constexpr bool operator==(const RemoteQpnKey&, const RemoteQpnKey&) = default;
};

class RemoteQpns {
 public:
  RemoteQpns() = default;
  RemoteQpns(const RemoteQpns&) = delete;
  RemoteQpns& operator=(const RemoteQpns&) = delete;
  virtual ~RemoteQpns() = default;

  // The endpoint recorded for `key`, or nullopt. Thread contract: any thread.
  [[nodiscard]] virtual std::optional<Id> find(RemoteQpnKey key) const noexcept = 0;

  // Records `owner` for `key` unless another endpoint is recorded: returns nullopt when `owner`
  // is now recorded (or already was), else the Id recorded before, changing nothing. False
  // positives are impossible; when the table is full (all its slots taken: the engine's endpoint
  // budget keeps that from happening) it records nothing and returns nullopt, so the stale check
  // is skipped, never wrong.
  // Thread contract: any thread, concurrently.
  [[nodiscard]] virtual std::optional<Id> claim(RemoteQpnKey key, Id owner) noexcept = 0;

  // Forgets `key` if it is recorded for `owner`; otherwise does nothing. Thread contract: any
  // thread, concurrently.
  virtual void release(RemoteQpnKey key, Id owner) noexcept = 0;

  // Starts loading the memory a find or claim of `key` reads first, so that a caller knowing the
  // key a few MADs ahead does not wait for it then. A hint: changes nothing, and a table with
  // nothing worth loading ahead keeps this default, which does nothing. Thread contract: any
  // thread.
  virtual void prefetch(RemoteQpnKey /*key*/) const noexcept {}
};

}  // namespace fastcm::engine
