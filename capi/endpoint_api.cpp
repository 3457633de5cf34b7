// The C API of listens and endpoints: creation, every send, QP attributes, what an endpoint knows,
// and destroy. Each call converts its C arguments and runs the C++ call under the exception guard.
#include "capi/boundary.h"
#include "capi/convert.h"
#include "capi/handles.h"

using fastcm::capi::bytes;
using fastcm::capi::from_c;
using fastcm::capi::guarded;
using fastcm::capi::to_c;

namespace {

fastcm::Id id_of(fastcm_id id) noexcept { return fastcm::Id{id}; }

// fastcm_create_id and fastcm_create_id_for_port: `create(delivery, id)` makes the endpoint.
template <typename Create>
fastcm_status create_endpoint(fastcm_engine* engine, const fastcm_delivery* delivery, fastcm_id* out,
                              Create&& create) noexcept {
  if (engine == nullptr || delivery == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    fastcm::Delivery d;
    if (const fastcm_status s = engine->handlers.delivery(*delivery, d); s != FASTCM_OK) return s;
    fastcm::Id id;
    const fastcm::Status s = create(d, id);
    if (s == fastcm::Status::ok) *out = id.raw;
    return to_c(s);
  });
}

// A call on an endpoint that takes a C parameter struct: converted, then sent.
template <class CParams, class Send>
fastcm_status send_with(fastcm_engine* engine, const CParams* params, Send&& send) noexcept {
  if (engine == nullptr || params == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] { return to_c(send(*engine->engine, from_c(*params))); });
}

// A call on an endpoint that takes only private data.
template <class Send>
fastcm_status send_bytes(fastcm_engine* engine, const uint8_t* data, size_t len, Send&& send) noexcept {
  if (engine == nullptr || (data == nullptr && len > 0)) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] { return to_c(send(*engine->engine, bytes(data, len))); });
}

// The C default of a parameter struct: the C++ struct's defaults, converted.
template <class Cpp, class C>
void init_from_cpp(C* out) noexcept {
  if (out != nullptr) *out = to_c(Cpp{});
}

}  // namespace

extern "C" {

void fastcm_listen_params_init(fastcm_listen_params* params) noexcept {
  if (params == nullptr) return;
  const fastcm::ListenParams d;
  *params = fastcm_listen_params{};
  params->service_id = d.service_id;
  params->service_mask = d.service_mask;
  params->port = d.port;
  params->backlog = d.backlog;
  params->backlog_policy = static_cast<fastcm_backlog_policy>(d.backlog_policy);
  params->context = d.context;
}

fastcm_status fastcm_listen(fastcm_engine* engine, const fastcm_listen_params* params, fastcm_id* out) noexcept {
  if (engine == nullptr || params == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    fastcm::ListenParams p;
    p.service_id = params->service_id;
    p.service_mask = params->service_mask;
    p.port = params->port;
    p.backlog = params->backlog;
    p.backlog_policy = static_cast<fastcm::BacklogPolicy>(params->backlog_policy);
    p.context = params->context;
    if (const fastcm_status s = engine->handlers.delivery(params->delivery, p.delivery); s != FASTCM_OK) return s;
    fastcm::Id id;
    const fastcm::Status s = engine->engine->listen(p, id);
    if (s == fastcm::Status::ok) *out = id.raw;
    return to_c(s);
  });
}

fastcm_status fastcm_create_id(fastcm_engine* engine, const fastcm_delivery* delivery, void* context,
                               fastcm_id* out) noexcept {
  return create_endpoint(engine, delivery, out, [&](const fastcm::Delivery& d, fastcm::Id& id) {
    return engine->engine->create_id(d, context, id);
  });
}

fastcm_status fastcm_create_id_for_port(fastcm_engine* engine, const fastcm_delivery* delivery, void* context,
                                        uint8_t port, fastcm_id* out) noexcept {
  return create_endpoint(engine, delivery, out, [&](const fastcm::Delivery& d, fastcm::Id& id) {
    return engine->engine->create_id_for_port(d, context, port, id);
  });
}

fastcm_status fastcm_set_context(fastcm_engine* engine, fastcm_id id, void* context) noexcept {
  if (engine == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] { return to_c(engine->engine->set_context(id_of(id), context)); });
}

void fastcm_path_init(fastcm_path* path) noexcept { init_from_cpp<fastcm::Path>(path); }
void fastcm_req_params_init(fastcm_req_params* params) noexcept { init_from_cpp<fastcm::ReqParams>(params); }
void fastcm_rep_params_init(fastcm_rep_params* params) noexcept { init_from_cpp<fastcm::RepParams>(params); }
void fastcm_rej_params_init(fastcm_rej_params* params) noexcept { init_from_cpp<fastcm::RejParams>(params); }
void fastcm_mra_params_init(fastcm_mra_params* params) noexcept { init_from_cpp<fastcm::MraParams>(params); }
void fastcm_lap_params_init(fastcm_lap_params* params) noexcept { init_from_cpp<fastcm::LapParams>(params); }
void fastcm_apr_params_init(fastcm_apr_params* params) noexcept { init_from_cpp<fastcm::AprParams>(params); }
void fastcm_sidr_req_params_init(fastcm_sidr_req_params* params) noexcept { init_from_cpp<fastcm::SidrReqParams>(params); }
void fastcm_sidr_rep_params_init(fastcm_sidr_rep_params* params) noexcept { init_from_cpp<fastcm::SidrRepParams>(params); }

fastcm_status fastcm_send_req(fastcm_engine* engine, fastcm_id id, const fastcm_req_params* params) noexcept {
  return send_with(engine, params, [id](fastcm::Engine& e, const auto& p) { return e.send_req(id_of(id), p); });
}
fastcm_status fastcm_send_rep(fastcm_engine* engine, fastcm_id id, const fastcm_rep_params* params) noexcept {
  return send_with(engine, params, [id](fastcm::Engine& e, const auto& p) { return e.send_rep(id_of(id), p); });
}
fastcm_status fastcm_send_rej(fastcm_engine* engine, fastcm_id id, const fastcm_rej_params* params) noexcept {
  return send_with(engine, params, [id](fastcm::Engine& e, const auto& p) { return e.send_rej(id_of(id), p); });
}
fastcm_status fastcm_send_mra(fastcm_engine* engine, fastcm_id id, const fastcm_mra_params* params) noexcept {
  return send_with(engine, params, [id](fastcm::Engine& e, const auto& p) { return e.send_mra(id_of(id), p); });
}
fastcm_status fastcm_send_lap(fastcm_engine* engine, fastcm_id id, const fastcm_lap_params* params) noexcept {
  return send_with(engine, params, [id](fastcm::Engine& e, const auto& p) { return e.send_lap(id_of(id), p); });
}
fastcm_status fastcm_send_apr(fastcm_engine* engine, fastcm_id id, const fastcm_apr_params* params) noexcept {
  return send_with(engine, params, [id](fastcm::Engine& e, const auto& p) { return e.send_apr(id_of(id), p); });
}
fastcm_status fastcm_send_sidr_req(fastcm_engine* engine, fastcm_id id, const fastcm_sidr_req_params* params) noexcept {
  return send_with(engine, params,
                   [id](fastcm::Engine& e, const auto& p) { return e.send_sidr_req(id_of(id), p); });
}
fastcm_status fastcm_send_sidr_rep(fastcm_engine* engine, fastcm_id id, const fastcm_sidr_rep_params* params) noexcept {
  return send_with(engine, params,
                   [id](fastcm::Engine& e, const auto& p) { return e.send_sidr_rep(id_of(id), p); });
}

fastcm_status fastcm_send_rtu(fastcm_engine* engine, fastcm_id id, const uint8_t* private_data,
                              size_t private_data_len) noexcept {
  return send_bytes(engine, private_data, private_data_len,
                    [id](fastcm::Engine& e, auto data) { return e.send_rtu(id_of(id), data); });
}
fastcm_status fastcm_send_dreq(fastcm_engine* engine, fastcm_id id, const uint8_t* private_data,
                               size_t private_data_len) noexcept {
  return send_bytes(engine, private_data, private_data_len,
                    [id](fastcm::Engine& e, auto data) { return e.send_dreq(id_of(id), data); });
}
fastcm_status fastcm_send_drep(fastcm_engine* engine, fastcm_id id, const uint8_t* private_data,
                               size_t private_data_len) noexcept {
  return send_bytes(engine, private_data, private_data_len,
                    [id](fastcm::Engine& e, auto data) { return e.send_drep(id_of(id), data); });
}

fastcm_status fastcm_establish(fastcm_engine* engine, fastcm_id id) noexcept {
  if (engine == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] { return to_c(engine->engine->establish(id_of(id))); });
}

fastcm_status fastcm_init_qp_attr(const fastcm_engine* engine, fastcm_id id, fastcm_qp_state state,
                                  fastcm_qp_attr* out) noexcept {
  if (engine == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    fastcm::QpAttr attr;
    const fastcm::Status s = engine->engine->init_qp_attr(id_of(id), static_cast<fastcm::QpState>(state), attr);
    if (s == fastcm::Status::ok) *out = to_c(attr);
    return to_c(s);
  });
}

fastcm_status fastcm_last_private_data(const fastcm_engine* engine, fastcm_id id, const uint8_t** data,
                                       size_t* len) noexcept {
  if (engine == nullptr || data == nullptr || len == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    std::span<const std::uint8_t> got;
    const fastcm::Status s = engine->engine->last_private_data(id_of(id), got);
    if (s == fastcm::Status::ok) {
      *data = got.data();
      *len = got.size();
    }
    return to_c(s);
  });
}

fastcm_status fastcm_connection_info_get(const fastcm_engine* engine, fastcm_id id, fastcm_connection_info* out) noexcept {
  if (engine == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    fastcm::ConnectionInfo info;
    const fastcm::Status s = engine->engine->connection_info(id_of(id), info);
    if (s == fastcm::Status::ok) *out = to_c(info);
    return to_c(s);
  });
}

fastcm_status fastcm_destroy(fastcm_engine* engine, fastcm_id id, fastcm_destroyed_fn on_destroyed, void* ctx) noexcept {
  if (engine == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] { return to_c(engine->engine->destroy(id_of(id), on_destroyed, ctx)); });
}

fastcm_status fastcm_destroy_sync(fastcm_engine* engine, fastcm_id id) noexcept {
  if (engine == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] { return to_c(engine->engine->destroy_sync(id_of(id))); });
}

}  // extern "C"
