#include "examples/rping_common/rdma_program.h"

namespace fastcm::examples {

std::unique_ptr<RdmaProgram> RdmaProgram::open(const std::string& device, std::uint8_t hca_port,
                                               int cq_entries, std::string& error) {
  auto p = std::make_unique<RdmaProgram>();
  p->cm = CmStack::open(device, hca_port, error);
  if (p->cm == nullptr) return nullptr;
  p->verbs = VerbsContext::open(p->cm->fabric->device(), cq_entries, error);
  if (p->verbs == nullptr) return nullptr;
  if (!p->loop.ok() || !p->loop.watch(p->cm->events->event_fd(), kCmEventsTag) ||
      !p->loop.watch(p->verbs->channel_fd(), kCompletionsTag)) {
    error = "epoll or signalfd failed";
    return nullptr;
  }
  return p;
}

}  // namespace fastcm::examples
