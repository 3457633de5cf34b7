// A connection endpoint (CEP): everything the protocol knows about one connection or SIDR
// exchange. Owned by one shard's CepTable; touched only by that shard's thread.
#pragma once

#include <cstdint>

#include "engine/cep_state.h"
#include "engine/listens.h"
#include "engine/mad_buf.h"
#include "engine/timer_wheel.h"
#include "fastcm/engine.h"
#include "fastcm/fabric.h"
#include "fastcm/params.h"

namespace fastcm::engine {

inline constexpr std::uint32_t kNoSlot = ~std::uint32_t{0};
inline constexpr std::uint32_t kNoLink = 0;  // the end of an index chain (cep_index.h's tagged links)

// What the endpoint's single protocol timer is waiting for.
enum class CepTimer : std::uint8_t {
  none,
  retransmit,   // the answer to the request in `sent` (REQ, REP, DREQ, LAP, SIDR_REQ)
  auto_mra,     // the application's answer to a REQ or REP; on expiry the engine MRAs it
  timewait,     // the end of time-wait
};

// The endpoint's timer knows its slot, so an expiry finds the endpoint without pointer arithmetic.
struct CepTimerNode : TimerNode {
  std::uint32_t slot = kNoSlot;
};

// What only connections with an alternate path (from their REQ or a LAP) use, kept beside the
// endpoint table (CepTable::alternates) rather than in every endpoint: in the Cep they made every
// endpoint 104 bytes (two cache lines) longer, lines that a storm's endpoints zero, fault in and
// walk past without ever reading them.
struct AlternatePaths {
  Path alternate;
  Path pending_alternate;  // a LAP's path until its APR (ours, or the peer's turned around)
};

struct Cep {
  // ---- identity --------------------------------------------------------------------------------
  std::uint32_t generation = 1;       // full generation of the slot; the CID carries its low bits
  std::uint32_t slot = kNoSlot;
  std::uint32_t local_comm_id = 0;    // as on the wire
  std::uint32_t remote_comm_id = 0;
  Guid remote_ca_guid = 0;
  Qpn local_qpn = 0;
  Qpn remote_qpn = 0;
  QKey remote_qkey = 0;
  // The intrusive links (slot indexes) lie beside the keys they chain by, so a REQ walking a
  // chain of other endpoints reads one cache line of each, not two.
  std::uint32_t dup_next = kNoLink;      // duplicate-REQ index: (remote comm ID, remote CA GUID)
  std::uint64_t service_id = 0;
  std::uint32_t sidr_request_id = 0;
  std::uint32_t sidr_next = kNoLink;     // SIDR_REQs being answered: (request ID, sender)

  // ---- protocol state --------------------------------------------------------------------------
  CepState state = CepState::idle;
  LapState lap_state = LapState::idle;
  CepTimer timer_kind = CepTimer::none;
  bool live = false;                  // allocated (false while on the free list)
  bool parked = false;                // freed while a remote destroy was on its way (cep_table.h)
  bool active = false;                // we sent the REQ
  // The peer's comm ID, QPN and CA GUID are known (from its REQ, or on the active side its REP),
  // so a received message must name them (Protocol::from_peer).
  bool peer_known = false;
  bool has_alternate = false;
  bool alternates_made = false;        // its AlternatePaths exist (CepTable::alternates)
  bool in_dup_index = false;
  bool in_qpn_index = false;           // recorded in the engine's RemoteQpns
  bool in_sidr_index = false;
  std::uint16_t port_index = 0;       // fabric port index the connection runs on
  std::uint8_t retries_left = 0;
  std::uint8_t max_cm_retries = 0;
  std::uint8_t remote_cm_response_timeout = 0;  // exponent: how long the peer may take
  std::uint8_t local_cm_response_timeout = 0;   // exponent: how long we may take
  std::uint8_t mra_service_timeout = 0;         // exponent added by a received MRA

  // ---- negotiated connection parameters (for init_qp_attr and connection_info) -----------------
  QpType qp_type = QpType::rc;
  std::uint8_t responder_resources = 0;  // ours, as sent or accepted
  std::uint8_t initiator_depth = 0;
  std::uint8_t retry_count = 0;
  std::uint8_t rnr_retry_count = 0;
  std::uint8_t target_ack_delay = 0;
  std::uint8_t mtu = 0;
  bool flow_control = false;
  bool srq = false;
  std::uint32_t local_psn = 0;           // our send queue PSN
  std::uint32_t remote_psn = 0;          // the peer's send queue PSN = our receive queue PSN
  std::uint32_t ece_vendor_id = 0;
  Path primary;                          // from our side: local = this port
  // The alternate paths live beside the table (AlternatePaths).

  // ---- sending ---------------------------------------------------------------------------------
  MadAddress peer;                       // where our CM MADs go (the peer's CM on QP1)
  std::uint64_t transaction_id = 0;
  std::uint64_t retry_timeout_ns = 0;    // wait for the answer to `sent` before resending it
  // The last MAD sent, for retransmission and duplicates, and the last received (its private data
  // stays readable). Once established, an endpoint lets go of those it no longer needs
  // (Protocol::settle_established), so a million connections hold no MAD buffers.
  MadBuf* sent = nullptr;
  MadBuf* received = nullptr;
  // The private data length of the last received MAD, when it was all zeros and let go.
  std::uint8_t received_zeros = 0;
  CepTimerNode timer;

  // ---- application -----------------------------------------------------------------------------
  Delivery delivery;
  void* context = nullptr;
  BacklogRef backlog;                    // the listen whose backlog this REQ counts against
  // The half-open budget (half_open_budget.h), passive side, from the REQ until the handshake
  // settles: the listen the handshake counts against (empty: not counted, or settled) and its
  // source's entry; a source that leaves its handshakes unanswered gets its REP once.
  BacklogRef half_open_listen;
  std::uint32_t half_open_source = 0;
  bool unanswering_source = false;

};

}  // namespace fastcm::engine
