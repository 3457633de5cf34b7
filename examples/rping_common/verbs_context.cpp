#include "examples/rping_common/verbs_context.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

namespace fastcm::examples {

namespace {

std::string failed(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::unique_ptr<VerbsContext> VerbsContext::open(const std::string& device, int cq_entries,
                                                 std::string& error) {
  std::unique_ptr<VerbsContext> v(new VerbsContext);
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) {
    error = failed("ibv_get_device_list");
    return nullptr;
  }
  for (int i = 0; i < count && v->context_ == nullptr; ++i) {
    if (device == ibv_get_device_name(list[i])) v->context_ = ibv_open_device(list[i]);
  }
  ibv_free_device_list(list);
  if (v->context_ == nullptr) {
    error = "no verbs device " + device + " could be opened (is ib_uverbs loaded?)";
    return nullptr;
  }
  v->pd_ = ibv_alloc_pd(v->context_);
  if (v->pd_ == nullptr) {
    error = failed("ibv_alloc_pd");
    return nullptr;
  }
  v->channel_ = ibv_create_comp_channel(v->context_);
  if (v->channel_ == nullptr) {
    error = failed("ibv_create_comp_channel");
    return nullptr;
  }
  const int flags = fcntl(v->channel_->fd, F_GETFL);
  if (flags < 0 || fcntl(v->channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    error = failed("fcntl O_NONBLOCK on the completion channel");
    return nullptr;
  }
  v->cq_ = ibv_create_cq(v->context_, cq_entries, nullptr, v->channel_, 0);
  if (v->cq_ == nullptr) {
    error = failed("ibv_create_cq");
    return nullptr;
  }
  if (ibv_req_notify_cq(v->cq_, 0) != 0) {
    error = failed("ibv_req_notify_cq");
    return nullptr;
  }
  return v;
}

VerbsContext::~VerbsContext() {
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (context_ != nullptr) ibv_close_device(context_);
}

bool VerbsContext::take_cq_event(std::string& error) noexcept {
  ibv_cq* cq = nullptr;
  void* cq_context = nullptr;
  unsigned taken = 0;
  while (ibv_get_cq_event(channel_, &cq, &cq_context) == 0) ++taken;
  if (taken > 0) ibv_ack_cq_events(cq_, taken);
  // Armed before the caller polls: a completion after the poll wakes the channel again.
  if (ibv_req_notify_cq(cq_, 0) != 0) {
    error = failed("ibv_req_notify_cq");
    return false;
  }
  return true;
}

ibv_qp* VerbsContext::create_rc_qp(std::uint32_t max_send_wr, std::uint32_t max_recv_wr,
                                   std::string& error) const {
  ibv_qp_init_attr init{};
  init.send_cq = cq_;
  init.recv_cq = cq_;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = max_send_wr;
  init.cap.max_recv_wr = max_recv_wr;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd_, &init);
  if (qp == nullptr) error = failed("ibv_create_qp");
  return qp;
}

std::optional<std::uint8_t> VerbsContext::gid_index(std::uint8_t port, const Gid& gid) const noexcept {
  ibv_port_attr attr{};
  if (ibv_query_port(context_, port, &attr) != 0) return std::nullopt;
  const bool ethernet = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  for (int i = 0; i < attr.gid_tbl_len && i <= 0xFF; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(context_, port, static_cast<std::uint32_t>(i), &entry, 0) != 0) continue;  // empty
    if (ethernet && entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    if (std::memcmp(entry.gid.raw, gid.raw.data(), gid.raw.size()) == 0) return static_cast<std::uint8_t>(i);
  }
  return std::nullopt;
}

RegisteredBuffer::RegisteredBuffer(ibv_pd* pd, std::size_t size, int access)
    : bytes_(new std::uint8_t[size]()), size_(size), mr_(ibv_reg_mr(pd, bytes_.get(), size, static_cast<unsigned>(access))) {}

RegisteredBuffer::~RegisteredBuffer() {
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
}

ibv_sge RegisteredBuffer::sge(std::size_t length) noexcept {
  ibv_sge s{};
  s.addr = reinterpret_cast<std::uintptr_t>(bytes_.get());
  s.length = static_cast<std::uint32_t>(length < size_ ? length : size_);
  s.lkey = mr_->lkey;
  return s;
}

}  // namespace fastcm::examples
