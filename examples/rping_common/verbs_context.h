// The libibverbs side of the rping examples: one RDMA device with a protection domain, one
// completion queue that every queue pair of the program shares, and the completion channel that
// wakes an epoll loop when the CQ has work. The CM side (fastcm) runs over the umad fabric of the
// same device; this class knows nothing of it.
//
// Thread contract: one thread (the program's event loop) uses a VerbsContext and the QPs, MRs and
// CQ it hands out. open() blocks on device opens.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fastcm/types.h"

namespace fastcm::examples {

class VerbsContext {
 public:
  // Opens `device` (e.g. "rxe0"), allocates its PD, a non-blocking completion channel and one CQ
  // of `cq_entries`, armed for its first completion. Returns null with `error` naming the step
  // that failed (no such device, or the verbs call and errno's text).
  [[nodiscard]] static std::unique_ptr<VerbsContext> open(const std::string& device, int cq_entries,
                                                          std::string& error);
  ~VerbsContext();
  VerbsContext(const VerbsContext&) = delete;
  VerbsContext& operator=(const VerbsContext&) = delete;

  [[nodiscard]] ibv_pd* pd() const noexcept { return pd_; }
  [[nodiscard]] ibv_cq* cq() const noexcept { return cq_; }
  // Readable when the CQ has completions to poll: then call take_cq_event() and poll cq().
  [[nodiscard]] int channel_fd() const noexcept { return channel_->fd; }

  // Takes the channel's pending CQ events (none is an answer too: the fd is non-blocking), acks
  // them and re-arms the CQ, so the completions polled afterwards include every one that woke the
  // loop. Returns false with `error` when re-arming fails.
  bool take_cq_event(std::string& error) noexcept;

  // A reliable-connected QP on the shared CQ, in RESET, or null with `error` set.
  [[nodiscard]] ibv_qp* create_rc_qp(std::uint32_t max_send_wr, std::uint32_t max_recv_wr,
                                     std::string& error) const;

  // The device's own GID table index of `gid` on `port` (for an address handle's sgid_index): on
  // an Ethernet port the entry of type RoCE v2, the RoCE version fastcm's umad fabric speaks. A
  // fabric's PortAttr lists GIDs without the table's empty entries and without their types, so
  // its indexes are not the device's. nullopt when the device has no such entry.
  [[nodiscard]] std::optional<std::uint8_t> gid_index(std::uint8_t port, const Gid& gid) const noexcept;

 private:
  VerbsContext() = default;

  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
};

// A registered buffer of its own memory, freed with it. Null mr() when registration failed.
class RegisteredBuffer {
 public:
  // Registers `size` zeroed bytes on `pd` with `access` (IBV_ACCESS_* flags).
  RegisteredBuffer(ibv_pd* pd, std::size_t size, int access);
  ~RegisteredBuffer();
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;

  [[nodiscard]] ibv_mr* mr() const noexcept { return mr_; }
  [[nodiscard]] std::uint8_t* data() noexcept { return bytes_.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // The scatter/gather entry of the first `length` bytes (at most size()).
  [[nodiscard]] ibv_sge sge(std::size_t length) noexcept;

 private:
  std::unique_ptr<std::uint8_t[]> bytes_;
  std::size_t size_;
  ibv_mr* mr_ = nullptr;
};

}  // namespace fastcm::examples
