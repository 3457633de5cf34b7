#include "capi/convert.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace fastcm::capi {
namespace {

void copy_gid(const Gid& in, fastcm_gid& out) noexcept { std::memcpy(out.raw, in.raw.data(), sizeof out.raw); }
void copy_gid(const fastcm_gid& in, Gid& out) noexcept { std::memcpy(out.raw.data(), in.raw, sizeof in.raw); }

// A field of the same meaning on both sides: numbers and bools as they are, enums by value (the
// C and C++ enums share their numbers, enums.cpp checks them).
template <class To, class From>
void set(To& out, const From& in) noexcept {
  out = static_cast<To>(in);
}

// C++'s unset target ACK delay (the CA's own) is C's FASTCM_ACK_DELAY_FROM_CA.
void copy_ack_delay(std::optional<std::uint8_t>& out, std::uint8_t in) noexcept {
  if (in == FASTCM_ACK_DELAY_FROM_CA) {
    out.reset();
  } else {
    out = in;
  }
}
void copy_ack_delay(std::uint8_t& out, const std::optional<std::uint8_t>& in) noexcept {
  out = in.value_or(FASTCM_ACK_DELAY_FROM_CA);
}

void convert(Path& out, const fastcm_path& in) noexcept;
void convert(fastcm_path& out, const Path& in) noexcept;

// C++'s optional alternate path is C's (has_alternate, alternate).
template <class To, class From>
void copy_alternate(To& out, const From& in) noexcept {
  if constexpr (requires { in.has_alternate; }) {
    if (in.has_alternate) {
      out.alternate.emplace();
      convert(*out.alternate, in.alternate);
    } else {
      out.alternate.reset();
    }
  } else {
    out.has_alternate = in.alternate.has_value();
    convert(out.alternate, in.alternate.value_or(Path{}));
  }
}

// A byte field: C's (field, field_len) pair is C++'s span `field`, both borrowing the same bytes.
#define FASTCM_COPY_BYTES(out, in, field)                          \
  do {                                                             \
    if constexpr (requires { (in).field##_len; }) {                \
      (out).field = bytes((in).field, (in).field##_len);           \
    } else {                                                       \
      (out).field = (in).field.data();                             \
      (out).field##_len = (in).field.size();                       \
    }                                                              \
  } while (false)

template <class Span>
void put_bytes(const Span& in, const std::uint8_t*& data, std::size_t& len) noexcept {
  data = in.data();
  len = in.size();
}

// ---- the structs that exist on both sides: one field list each, for both directions --------------

template <class To, class From>
void copy_path(To& out, const From& in) noexcept {
  set(out.local_lid, in.local_lid);
  set(out.remote_lid, in.remote_lid);
  copy_gid(in.local_gid, out.local_gid);
  copy_gid(in.remote_gid, out.remote_gid);
  set(out.flow_label, in.flow_label);
  set(out.traffic_class, in.traffic_class);
  set(out.hop_limit, in.hop_limit);
  set(out.sl, in.sl);
  set(out.mtu, in.mtu);
  set(out.rate, in.rate);
  set(out.packet_life_time, in.packet_life_time);
  set(out.port, in.port);
  set(out.pkey, in.pkey);
  set(out.subnet_local, in.subnet_local);
}

// The fields of fastcm::ReqTerms, which the C structs of a REQ sent, a REQ received and a
// connection's info each spell out.
template <class To, class From>
void copy_req_terms(To& out, const From& in) noexcept {
  set(out.qp_type, in.qp_type);
  set(out.responder_resources, in.responder_resources);
  set(out.initiator_depth, in.initiator_depth);
  set(out.remote_cm_response_timeout, in.remote_cm_response_timeout);
  set(out.local_cm_response_timeout, in.local_cm_response_timeout);
  set(out.retry_count, in.retry_count);
  set(out.rnr_retry_count, in.rnr_retry_count);
  set(out.max_cm_retries, in.max_cm_retries);
  set(out.flow_control, in.flow_control);
  set(out.srq, in.srq);
  set(out.ece_vendor_id, in.ece_vendor_id);
}

template <class To, class From>
void copy_req(To& out, const From& in) noexcept {
  copy_req_terms(out, in);
  set(out.service_id, in.service_id);
  convert(out.primary, in.primary);
  copy_alternate(out, in);
  set(out.qpn, in.qpn);
  set(out.starting_psn, in.starting_psn);
  FASTCM_COPY_BYTES(out, in, private_data);
}

template <class To, class From>
void copy_rep(To& out, const From& in) noexcept {
  set(out.qpn, in.qpn);
  set(out.starting_psn, in.starting_psn);
  set(out.responder_resources, in.responder_resources);
  set(out.initiator_depth, in.initiator_depth);
  copy_ack_delay(out.target_ack_delay, in.target_ack_delay);
  set(out.failover_accepted, in.failover_accepted);
  set(out.rnr_retry_count, in.rnr_retry_count);
  set(out.flow_control, in.flow_control);
  set(out.srq, in.srq);
  set(out.ece_vendor_id, in.ece_vendor_id);
  FASTCM_COPY_BYTES(out, in, private_data);
}

template <class To, class From>
void copy_rej(To& out, const From& in) noexcept {
  set(out.reason, in.reason);
  FASTCM_COPY_BYTES(out, in, ari);
  FASTCM_COPY_BYTES(out, in, private_data);
}

template <class To, class From>
void copy_mra(To& out, const From& in) noexcept {
  set(out.service_timeout, in.service_timeout);
  FASTCM_COPY_BYTES(out, in, private_data);
}

template <class To, class From>
void copy_lap(To& out, const From& in) noexcept {
  convert(out.alternate, in.alternate);
  set(out.remote_cm_response_timeout, in.remote_cm_response_timeout);
  FASTCM_COPY_BYTES(out, in, private_data);
}

template <class To, class From>
void copy_apr(To& out, const From& in) noexcept {
  set(out.status, in.status);
  FASTCM_COPY_BYTES(out, in, info);
  FASTCM_COPY_BYTES(out, in, private_data);
}

template <class To, class From>
void copy_sidr_req(To& out, const From& in) noexcept {
  set(out.service_id, in.service_id);
  convert(out.path, in.path);
  set(out.timeout, in.timeout);
  set(out.max_retries, in.max_retries);
  FASTCM_COPY_BYTES(out, in, private_data);
}

template <class To, class From>
void copy_sidr_rep(To& out, const From& in) noexcept {
  set(out.status, in.status);
  set(out.qpn, in.qpn);
  set(out.qkey, in.qkey);
  set(out.ece_vendor_id, in.ece_vendor_id);
  FASTCM_COPY_BYTES(out, in, info);
  FASTCM_COPY_BYTES(out, in, private_data);
}

template <class To, class From>
void copy_engine_config(To& out, const From& in) noexcept {
  set(out.shards, in.shards);
  set(out.threading, in.threading);
  set(out.eal, in.eal);
  set(out.shard_inbox, in.shard_inbox);
  set(out.max_endpoints, in.max_endpoints);
  set(out.max_listens, in.max_listens);
  set(out.mad_buffers, in.mad_buffers);
  set(out.auto_mra_fraction, in.auto_mra_fraction);
  set(out.mra_service_timeout, in.mra_service_timeout);
  set(out.idle_spins, in.idle_spins);
  set(out.half_open_per_source, in.half_open_per_source);
  set(out.half_open_per_listen, in.half_open_per_listen);
  set(out.posted_calls, in.posted_calls);
}

template <class To, class From>
void copy_loopback(To& out, const From& in) noexcept {
  set(out.hcas, in.hcas);
  set(out.ports_per_hca, in.ports_per_hca);
  set(out.rx_queue_depth, in.rx_queue_depth);
  set(out.fault_seed, in.fault_seed);
  set(out.loss_pct, in.loss_pct);
  set(out.dup_pct, in.dup_pct);
  set(out.reorder_pct, in.reorder_pct);
}

void convert(Path& out, const fastcm_path& in) noexcept { copy_path(out, in); }
void convert(fastcm_path& out, const Path& in) noexcept { copy_path(out, in); }

[[nodiscard]] fastcm_ah_attr to_c(const AhAttr& in) noexcept {
  fastcm_ah_attr out{};
  copy_gid(in.dgid, out.dgid);
  out.flow_label = in.flow_label;
  out.sgid_index = in.sgid_index;
  out.hop_limit = in.hop_limit;
  out.traffic_class = in.traffic_class;
  out.dlid = in.dlid;
  out.sl = in.sl;
  out.src_path_bits = in.src_path_bits;
  out.static_rate = in.static_rate;
  out.is_global = in.is_global;
  out.port_num = in.port_num;
  return out;
}

[[nodiscard]] fastcm_req_received to_c(const ReqReceived& in) noexcept {
  fastcm_req_received out{};
  copy_req_terms(out, in);
  out.listen_id = in.listen_id.raw;
  out.service_id = in.service_id;
  out.remote_ca_guid = in.remote_ca_guid;
  out.remote_qpn = in.remote_qpn;
  out.remote_qkey = in.remote_qkey;
  out.starting_psn = in.starting_psn;
  convert(out.primary, in.primary);
  copy_alternate(out, in);
  return out;
}

[[nodiscard]] fastcm_rep_received to_c(const RepReceived& in) noexcept {
  fastcm_rep_received out{};
  out.remote_ca_guid = in.remote_ca_guid;
  out.remote_qpn = in.remote_qpn;
  out.remote_qkey = in.remote_qkey;
  out.starting_psn = in.starting_psn;
  out.responder_resources = in.responder_resources;
  out.initiator_depth = in.initiator_depth;
  out.target_ack_delay = in.target_ack_delay;
  out.failover_accepted = in.failover_accepted;
  out.rnr_retry_count = in.rnr_retry_count;
  out.flow_control = in.flow_control;
  out.srq = in.srq;
  out.ece_vendor_id = in.ece_vendor_id;
  return out;
}

[[nodiscard]] fastcm_sidr_req_received to_c(const SidrReqReceived& in) noexcept {
  fastcm_sidr_req_received out{};
  out.listen_id = in.listen_id.raw;
  out.service_id = in.service_id;
  out.pkey = in.pkey;
  out.port = in.port;
  out.remote_lid = in.remote_lid;
  out.has_remote_gid = in.remote_gid.has_value();
  if (in.remote_gid) copy_gid(*in.remote_gid, out.remote_gid);
  return out;
}

// Fills the union member of `out` that the variant holds.
struct PutParams {
  fastcm_event& out;
  void operator()(const NoParams&) const noexcept {}
  void operator()(const ReqReceived& p) const noexcept { out.u.req = to_c(p); }
  void operator()(const RepReceived& p) const noexcept { out.u.rep = to_c(p); }
  void operator()(const RejReceived& p) const noexcept {
    out.u.rej.reason = p.reason;
    out.u.rej.message_rejected = p.message_rejected;
    put_bytes(p.ari, out.u.rej.ari, out.u.rej.ari_len);
  }
  void operator()(const MraReceived& p) const noexcept { out.u.mra.service_timeout = p.service_timeout; }
  void operator()(const LapReceived& p) const noexcept { convert(out.u.lap.alternate, p.alternate); }
  void operator()(const AprReceived& p) const noexcept {
    out.u.apr.status = p.status;
    put_bytes(p.info, out.u.apr.info, out.u.apr.info_len);
  }
  void operator()(const SidrReqReceived& p) const noexcept { out.u.sidr_req = to_c(p); }
  void operator()(const SidrRepReceived& p) const noexcept {
    out.u.sidr_rep.status = p.status;
    out.u.sidr_rep.qpn = p.qpn;
    out.u.sidr_rep.qkey = p.qkey;
    out.u.sidr_rep.ece_vendor_id = p.ece_vendor_id;
    put_bytes(p.info, out.u.sidr_rep.info, out.u.sidr_rep.info_len);
  }
  void operator()(const CallFailed& p) const noexcept {
    out.u.call_failed.call = static_cast<std::uint8_t>(p.call);
    out.u.call_failed.status = static_cast<std::uint8_t>(p.status);
  }
};

// Defines the two public conversions of a struct pair through its copy template.
#define FASTCM_BOTH_WAYS(Cpp, C, copy)                       \
  Cpp from_c(const C& in) noexcept {                         \
    Cpp out;                                                 \
    copy(out, in);                                           \
    return out;                                              \
  }                                                          \
  C to_c(const Cpp& in) noexcept {                           \
    C out{};                                                 \
    copy(out, in);                                           \
    return out;                                              \
  }

}  // namespace

FASTCM_BOTH_WAYS(Path, fastcm_path, copy_path)
FASTCM_BOTH_WAYS(ReqParams, fastcm_req_params, copy_req)
FASTCM_BOTH_WAYS(RepParams, fastcm_rep_params, copy_rep)
FASTCM_BOTH_WAYS(RejParams, fastcm_rej_params, copy_rej)
FASTCM_BOTH_WAYS(MraParams, fastcm_mra_params, copy_mra)
FASTCM_BOTH_WAYS(LapParams, fastcm_lap_params, copy_lap)
FASTCM_BOTH_WAYS(AprParams, fastcm_apr_params, copy_apr)
FASTCM_BOTH_WAYS(SidrReqParams, fastcm_sidr_req_params, copy_sidr_req)
FASTCM_BOTH_WAYS(SidrRepParams, fastcm_sidr_rep_params, copy_sidr_rep)
FASTCM_BOTH_WAYS(EngineConfig, fastcm_engine_config, copy_engine_config)
FASTCM_BOTH_WAYS(LoopbackSettings, fastcm_loopback_config, copy_loopback)
#undef FASTCM_BOTH_WAYS
#undef FASTCM_COPY_BYTES

PortAttr from_c(const fastcm_port_attr& in) noexcept {
  PortAttr out;
  out.port_num = in.port_num;
  out.node_guid = in.node_guid;
  out.port_guid = in.port_guid;
  out.gid_count = std::min<std::uint8_t>(in.gid_count, kMaxPortGids);
  for (std::size_t i = 0; i < out.gid_count; ++i) copy_gid(in.gids[i], out.gid_table[i]);
  out.lid = in.lid;
  out.lmc = in.lmc;
  out.sm_lid = in.sm_lid;
  out.pkey_count = std::min<std::uint8_t>(in.pkey_count, kMaxPortPKeys);
  std::copy_n(in.pkeys, out.pkey_count, out.pkey_table.begin());
  out.active_mtu = in.active_mtu;
  out.active_rate = in.active_rate;
  out.link_layer = static_cast<LinkLayer>(in.link_layer);
  out.ca.max_qp_rd_atom = in.max_qp_rd_atom;
  out.ca.max_qp_init_rd_atom = in.max_qp_init_rd_atom;
  out.ca.local_ca_ack_delay = in.local_ca_ack_delay;
  return out;
}

fastcm_port_attr to_c(const PortAttr& in) noexcept {
  fastcm_port_attr out{};
  out.port_num = in.port_num;
  out.node_guid = in.node_guid;
  out.port_guid = in.port_guid;
  const auto gids = in.gids();
  out.gid_count = static_cast<std::uint8_t>(gids.size());
  for (std::size_t i = 0; i < gids.size(); ++i) copy_gid(gids[i], out.gids[i]);
  out.lid = in.lid;
  out.lmc = in.lmc;
  out.sm_lid = in.sm_lid;
  const auto pkeys = in.pkeys();
  out.pkey_count = static_cast<std::uint8_t>(pkeys.size());
  std::copy(pkeys.begin(), pkeys.end(), out.pkeys);
  out.active_mtu = in.active_mtu;
  out.active_rate = in.active_rate;
  out.link_layer = static_cast<fastcm_link_layer>(in.link_layer);
  out.max_qp_rd_atom = in.ca.max_qp_rd_atom;
  out.max_qp_init_rd_atom = in.ca.max_qp_init_rd_atom;
  out.local_ca_ack_delay = in.ca.local_ca_ack_delay;
  return out;
}

fastcm_event to_c(const Event& in) noexcept {
  fastcm_event out{};
  out.type = static_cast<fastcm_event_type>(in.type);
  out.id = in.id.raw;
  out.context = in.context;
  put_bytes(in.private_data, out.private_data, out.private_data_len);
  out.mad = reinterpret_cast<const fastcm_mad*>(in.mad);
  std::visit(PutParams{out}, in.params);
  return out;
}

fastcm_connection_info to_c(const ConnectionInfo& in) noexcept {
  fastcm_connection_info out{};
  copy_req_terms(out, in);
  out.state = static_cast<fastcm_cep_state>(in.state);
  out.active = in.active;
  out.local_comm_id = in.local_comm_id;
  out.remote_comm_id = in.remote_comm_id;
  out.remote_ca_guid = in.remote_ca_guid;
  out.service_id = in.service_id;
  out.local_qpn = in.local_qpn;
  out.remote_qpn = in.remote_qpn;
  out.port = in.port;
  out.mtu = in.mtu;
  out.local_psn = in.local_psn;
  out.remote_psn = in.remote_psn;
  convert(out.primary, in.primary);
  copy_alternate(out, in);
  return out;
}

fastcm_qp_attr to_c(const QpAttr& in) noexcept {
  fastcm_qp_attr out{};
  out.mask = in.mask;
  out.qp_state = static_cast<fastcm_qp_state>(in.qp_state);
  out.path_mtu = in.path_mtu;
  out.path_mig_state = static_cast<fastcm_mig_state>(in.path_mig_state);
  out.qkey = in.qkey;
  out.rq_psn = in.rq_psn;
  out.sq_psn = in.sq_psn;
  out.dest_qp_num = in.dest_qp_num;
  out.qp_access_flags = in.qp_access_flags;
  out.ah_attr = to_c(in.ah_attr);
  out.alt_ah_attr = to_c(in.alt_ah_attr);
  out.pkey_index = in.pkey_index;
  out.alt_pkey_index = in.alt_pkey_index;
  out.max_rd_atomic = in.max_rd_atomic;
  out.max_dest_rd_atomic = in.max_dest_rd_atomic;
  out.min_rnr_timer = in.min_rnr_timer;
  out.port_num = in.port_num;
  out.timeout = in.timeout;
  out.retry_cnt = in.retry_cnt;
  out.rnr_retry = in.rnr_retry;
  out.alt_port_num = in.alt_port_num;
  out.alt_timeout = in.alt_timeout;
  return out;
}

fastcm_port_counters to_c(const PortCounters& in) noexcept {
  static_assert(kCmMessageKinds == FASTCM_CM_MESSAGE_COUNT);
  static_assert(kDropReasons <= FASTCM_MAX_DROP_REASONS, "raise FASTCM_MAX_DROP_REASONS (an ABI change)");
  fastcm_port_counters out{};
  for (std::size_t k = 0; k < kCmMessageKinds; ++k) {
    out.messages[k] = {in.messages[k].sent, in.messages[k].received, in.messages[k].retried,
                       in.messages[k].duplicate, in.messages[k].timed_out};
  }
  std::copy(in.drops.begin(), in.drops.end(), out.drops);
  return out;
}

void copy_text(std::string_view text, char* out, std::size_t size) noexcept {
  if (out == nullptr || size == 0) return;
  const std::size_t n = std::min(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace fastcm::capi
