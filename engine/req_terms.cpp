#include "engine/req_terms.h"

namespace fastcm::engine {

void put_terms(mad::Req& req, const ReqTerms& t) noexcept {
  req.transport_service_type = t.qp_type == QpType::uc    ? mad::TransportServiceType::uc
                               : t.qp_type == QpType::xrc ? mad::TransportServiceType::extended
                                                          : mad::TransportServiceType::rc;
  req.extended_transport_type =
      t.qp_type == QpType::xrc ? mad::ExtendedTransportType::xrc : mad::ExtendedTransportType::none;
  req.responder_resources = t.responder_resources;
  req.initiator_depth = t.initiator_depth;
  req.remote_cm_response_timeout = t.remote_cm_response_timeout;
  req.local_cm_response_timeout = t.local_cm_response_timeout;
  req.retry_count = t.retry_count;
  req.rnr_retry_count = t.rnr_retry_count;
  req.max_cm_retries = t.max_cm_retries;
  req.end_to_end_flow_control = t.flow_control;
  req.srq = t.srq;
  req.vendor_id = t.ece_vendor_id;
}

ReqTerms terms_of(const mad::Req& req) noexcept {
  return ReqTerms{
      .qp_type = req.transport_service_type == mad::TransportServiceType::uc         ? QpType::uc
                 : req.transport_service_type == mad::TransportServiceType::extended ? QpType::xrc
                                                                                     : QpType::rc,
      .responder_resources = req.responder_resources,
      .initiator_depth = req.initiator_depth,
      .remote_cm_response_timeout = req.remote_cm_response_timeout,
      .local_cm_response_timeout = req.local_cm_response_timeout,
      .retry_count = req.retry_count,
      .rnr_retry_count = req.rnr_retry_count,
      .max_cm_retries = req.max_cm_retries,
      .flow_control = req.end_to_end_flow_control,
      .srq = req.srq,
      .ece_vendor_id = req.vendor_id,
  };
}

void hold_terms(Cep& cep, const ReqTerms& t, TermsSide side) noexcept {
  const bool crosswise = side == TermsSide::receiver;
  cep.qp_type = t.qp_type;
  cep.responder_resources = crosswise ? t.initiator_depth : t.responder_resources;
  cep.initiator_depth = crosswise ? t.responder_resources : t.initiator_depth;
  cep.remote_cm_response_timeout = crosswise ? t.local_cm_response_timeout : t.remote_cm_response_timeout;
  cep.local_cm_response_timeout = crosswise ? t.remote_cm_response_timeout : t.local_cm_response_timeout;
  cep.retry_count = t.retry_count;
  cep.rnr_retry_count = t.rnr_retry_count;
  cep.max_cm_retries = t.max_cm_retries;
  cep.flow_control = t.flow_control;
  cep.srq = t.srq;
  cep.ece_vendor_id = t.ece_vendor_id;
}

ReqTerms held_terms(const Cep& cep) noexcept {
  return ReqTerms{
      .qp_type = cep.qp_type,
      .responder_resources = cep.responder_resources,
      .initiator_depth = cep.initiator_depth,
      .remote_cm_response_timeout = cep.remote_cm_response_timeout,
      .local_cm_response_timeout = cep.local_cm_response_timeout,
      .retry_count = cep.retry_count,
      .rnr_retry_count = cep.rnr_retry_count,
      .max_cm_retries = cep.max_cm_retries,
      .flow_control = cep.flow_control,
      .srq = cep.srq,
      .ece_vendor_id = cep.ece_vendor_id,
  };
}

}  // namespace fastcm::engine
