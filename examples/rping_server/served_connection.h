// One connection of rping_server: its endpoint, its RC QP and buffers, and where its data
// exchange stands. Plain data owned by the server's table (RpingServer); the event loop's thread
// alone touches it.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>

#include "examples/rping_common/rping_protocol.h"
#include "examples/rping_common/verbs_context.h"
#include "fastcm/id.h"

namespace fastcm::examples {

// What a client speaks after connecting, told by the rdma_cm port its REQ names.
enum class Service : std::uint8_t { rping, ucmatose };

// Where an rping exchange stands: waiting for the client's start advert, reading its ping,
// waiting for its sink advert, writing the ping back.
enum class RpingStep : std::uint8_t { start_advert, reading, sink_advert, writing };

// The work request kinds, in the low byte of a wr_id.
enum class WorkKind : std::uint8_t { recv = 1, send = 2, rdma_read = 3, rdma_write = 4 };

struct ServedConnection {
  bool in_use = false;
  // Counts the slot's uses; wr_ids carry it, so completions of an earlier use (flushed after its
  // QP was destroyed) are told apart and ignored.
  std::uint32_t generation = 0;
  std::uint32_t number = 0;  // 1, 2, ... in the order the REQs came, for the log
  Id id;
  Service service = Service::rping;
  std::string peer;  // "address:port" from rdma_cm's header
  ibv_qp* qp = nullptr;
  std::unique_ptr<RegisteredBuffer> recv;  // rping: adverts; ucmatose: messages
  std::unique_ptr<RegisteredBuffer> send;  // rping: "go ahead"; ucmatose: messages
  std::unique_ptr<RegisteredBuffer> data;  // rping: the ping read and written back
  bool established = false;
  bool disconnecting = false;  // DREQ sent or received: flushed completions are expected
  bool failed = false;
  std::uint64_t disconnect_ns = 0;  // when the DREQ went or came
  // rping
  RpingStep step = RpingStep::start_advert;
  rping::Advert remote;
  std::uint32_t ping_size = 0;  // bytes of the ping being exchanged
  std::uint32_t pings = 0;      // pings read, verified and written back
  // ucmatose
  std::uint32_t sent = 0;
  std::uint32_t received = 0;
};

}  // namespace fastcm::examples
