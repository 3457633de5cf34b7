// The one mapping of a REQ's terms (fastcm::ReqTerms) to the wire REQ and to an endpoint, and back:
// send_req and on_req, the req_received event and connection_info all go through it, so a term
// added to ReqTerms is carried everywhere by changing this file alone.
#pragma once

#include "engine/cep.h"
#include "engine/mad/cm_messages.h"
#include "fastcm/params.h"

namespace fastcm::engine {

// Which side's view an endpoint takes of the REQ's terms.
enum class TermsSide : bool {
  sender,    // the active side: as it sent them
  receiver,  // the passive side: crosswise (its responder resources bound by the sender's
             // initiator depth and the reverse; its local timeout the sender's remote one)
};

// Writes the terms into a REQ to send. Pure.
void put_terms(mad::Req& req, const ReqTerms& terms) noexcept;
// The terms a received REQ states, as its sender stated them. Pure.
[[nodiscard]] ReqTerms terms_of(const mad::Req& req) noexcept;
// Stores `terms` in the endpoint, from `side`'s view. Touches only the terms' fields of the Cep.
void hold_terms(Cep& cep, const ReqTerms& terms, TermsSide side) noexcept;
// The endpoint's terms, in its own view (as hold_terms stored them and the REP changed them). Pure.
[[nodiscard]] ReqTerms held_terms(const Cep& cep) noexcept;

}  // namespace fastcm::engine
