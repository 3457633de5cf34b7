// CM MAD codec speed: encode and decode of the messages on every connection's path (REQ, REP,
// RTU), one 256-byte MAD per iteration, reported as time per message and items_per_second.
// Decoding is measured both as the engine's typed path (decode_header, then decode_body<M> for the
// attribute it expects) and as the variant `decode`, which dispatches on the attribute ID.
//
// The messages hold the values of an rdma_cm RC connection on one subnet: a 4096-byte MTU, a
// 100 Gb/s path, no alternate path, and private data filled in full (the wire carries all of it).
#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <variant>

#include "engine/mad/codec.h"

namespace {

namespace mad = fastcm::mad;
using Mad = std::array<std::uint8_t, mad::kMadSize>;

constexpr fastcm::Guid kActiveCaGuid = 0x0002'c903'00a1'b2c3;
constexpr fastcm::Guid kPassiveCaGuid = 0x0002'c903'00d4'e5f6;
constexpr std::uint64_t kLinkLocalPrefix = 0xfe80'0000'0000'0000;
constexpr std::uint32_t kActiveCommId = 0x1a2b'3c4d;
constexpr std::uint32_t kPassiveCommId = 0x5e6f'7081;
// rdma_cm's TCP port space (0x0106) with port 4420.
constexpr std::uint64_t kServiceId = 0x0000'0000'0106'1144;

template <std::size_t N>
constexpr mad::PrivateData<N> private_data_pattern() {
  mad::PrivateData<N> data{};
  std::iota(data.begin(), data.end(), std::uint8_t{0x40});
  return data;
}

mad::Req make_req() {
  mad::Req req;
  req.local_comm_id = kActiveCommId;
  req.service_id = kServiceId;
  req.local_ca_guid = kActiveCaGuid;
  req.local_qpn = 0x00'0123;
  req.responder_resources = 16;
  req.initiator_depth = 16;
  req.remote_cm_response_timeout = 20;
  req.transport_service_type = mad::TransportServiceType::rc;
  req.end_to_end_flow_control = true;
  req.starting_psn = 0x5a'5a5a;
  req.local_cm_response_timeout = 20;
  req.retry_count = 7;
  req.partition_key = 0xffff;
  req.path_packet_payload_mtu = mad::MtuCode::mtu_4096;
  req.rnr_retry_count = 7;
  req.max_cm_retries = 15;
  req.primary.local_port_lid = 0x0011;
  req.primary.remote_port_lid = 0x0022;
  req.primary.local_port_gid = fastcm::Gid::from_parts(kLinkLocalPrefix, kActiveCaGuid + 1);
  req.primary.remote_port_gid = fastcm::Gid::from_parts(kLinkLocalPrefix, kPassiveCaGuid + 1);
  req.primary.packet_rate = 16;  // 100 Gb/s
  req.primary.hop_limit = 1;
  req.primary.subnet_local = true;
  req.primary.local_ack_timeout = 18;
  req.private_data = private_data_pattern<mad::kReqPrivateDataSize>();
  return req;
}

mad::Rep make_rep() {
  mad::Rep rep;
  rep.local_comm_id = kPassiveCommId;
  rep.remote_comm_id = kActiveCommId;
  rep.local_qpn = 0x00'0456;
  rep.starting_psn = 0x3c'3c3c;
  rep.responder_resources = 16;
  rep.initiator_depth = 16;
  rep.target_ack_delay = 15;
  rep.failover_accepted = mad::FailoverAccepted::unsupported;
  rep.end_to_end_flow_control = true;
  rep.rnr_retry_count = 7;
  rep.local_ca_guid = kPassiveCaGuid;
  rep.private_data = private_data_pattern<mad::kRepPrivateDataSize>();
  return rep;
}

mad::Rtu make_rtu() {
  mad::Rtu rtu;
  rtu.local_comm_id = kActiveCommId;
  rtu.remote_comm_id = kPassiveCommId;
  rtu.private_data = private_data_pattern<mad::kRtuPrivateDataSize>();
  return rtu;
}

template <typename M>
mad::MadHeader header_for() {
  return mad::cm_header(mad::Method::send, mad::WireLayout<M>::kAttr, 0x0000'0001'0000'2a2aULL);
}

// A benchmark whose codec calls failed (or decoded something else) reports an error, not a time.
void report(benchmark::State& state, bool ok) {
  if (!ok) state.SkipWithError("the codec rejected or altered the benchmark's message");
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// Each benchmark takes the message as an argument (BENCHMARK_CAPTURE), and names it.
template <typename M>
void BM_Encode(benchmark::State& state, M msg) {
  mad::MadHeader header = header_for<M>();
  Mad out{};
  bool ok = true;
  for (auto _ : state) {
    // The message may have changed, so nothing of the encoding can be hoisted out of the loop...
    benchmark::DoNotOptimize(header);
    benchmark::DoNotOptimize(msg);
    if (!mad::encode(header, msg, out).ok()) ok = false;
    // ...and every byte written is observed.
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, ok);
}

template <typename M>
Mad encode_or_abort(const M& msg) {
  Mad bytes{};
  if (!mad::encode(header_for<M>(), msg, bytes).ok()) std::abort();
  return bytes;
}

template <typename M>
void BM_DecodeTyped(benchmark::State& state, const M& sample) {
  Mad in = encode_or_abort(sample);
  mad::MadHeader header;
  M msg;
  bool ok = true;
  for (auto _ : state) {
    benchmark::DoNotOptimize(in);
    if (!mad::decode_header(in, header).ok() || header.attribute_id != mad::WireLayout<M>::kAttr ||
        !mad::decode_body(mad::ConstMadSpan(in), msg).ok()) {
      ok = false;
    }
    benchmark::DoNotOptimize(header);
    benchmark::DoNotOptimize(msg);
  }
  report(state, ok && msg == sample);
}

template <typename M>
void BM_DecodeVariant(benchmark::State& state, const M& sample) {
  Mad in = encode_or_abort(sample);
  mad::DecodedMad decoded;
  bool ok = true;
  for (auto _ : state) {
    benchmark::DoNotOptimize(in);
    if (!mad::decode(in, decoded).ok()) ok = false;
    benchmark::DoNotOptimize(decoded);
  }
  const M* msg = std::get_if<M>(&decoded.message);
  report(state, ok && msg != nullptr && *msg == sample);
}

BENCHMARK_CAPTURE(BM_Encode, req, make_req());
BENCHMARK_CAPTURE(BM_Encode, rep, make_rep());
BENCHMARK_CAPTURE(BM_Encode, rtu, make_rtu());
BENCHMARK_CAPTURE(BM_DecodeTyped, req, make_req());
BENCHMARK_CAPTURE(BM_DecodeTyped, rep, make_rep());
BENCHMARK_CAPTURE(BM_DecodeTyped, rtu, make_rtu());
BENCHMARK_CAPTURE(BM_DecodeVariant, req, make_req());
BENCHMARK_CAPTURE(BM_DecodeVariant, rep, make_rep());
BENCHMARK_CAPTURE(BM_DecodeVariant, rtu, make_rtu());

}  // namespace
