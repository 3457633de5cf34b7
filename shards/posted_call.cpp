#include "shards/posted_call.h"

#include <rte_errno.h>
#include <rte_mempool.h>

#include <algorithm>
#include <new>
#include <system_error>
#include <type_traits>

#include "engine/protocol.h"
#include "runtime/thread_sanitizer.h"
#include "shards/wait_word.h"

namespace fastcm::shards {

// Pool records are constructed once, when the pool is made, and never destroyed.
static_assert(std::is_trivially_destructible_v<PostedCall>);

bool PostedCall::keep(Bytes& field, std::span<std::uint8_t> room, std::size_t max) noexcept {
  if (field.size() > max || field.size() > room.size()) return false;
  std::copy(field.begin(), field.end(), room.begin());
  field = Bytes(room.data(), field.size());
  return true;
}

void PostedCall::prepare_set_context(Id id, void* context) noexcept {
  id_ = id;
  call_ = ApiCall::set_context;
  params_ = context;
}

void PostedCall::prepare_establish(Id id) noexcept {
  id_ = id;
  call_ = ApiCall::establish;
  params_ = std::monostate{};
}

Status PostedCall::prepare(Id id, ApiCall call, std::span<const std::uint8_t> private_data) noexcept {
  std::size_t max = 0;
  switch (call) {
    case ApiCall::send_rtu: max = kMaxRtuPrivateData; break;
    case ApiCall::send_dreq: max = kMaxDreqPrivateData; break;
    case ApiCall::send_drep: max = kMaxDrepPrivateData; break;
    default: return Status::invalid_argument;  // a call with parameters of its own
  }
  id_ = id;
  call_ = call;
  Bytes& copy = params_.emplace<Bytes>(private_data);
  return keep(copy, private_data_, max) ? Status::ok : Status::invalid_argument;
}

namespace {

// Each send's call and the most private data its message carries.
template <typename Message>
struct SendOf;
template <> struct SendOf<ReqParams> { static constexpr ApiCall call = ApiCall::send_req; static constexpr std::size_t max = kMaxReqPrivateData; };
template <> struct SendOf<RepParams> { static constexpr ApiCall call = ApiCall::send_rep; static constexpr std::size_t max = kMaxRepPrivateData; };
template <> struct SendOf<RejParams> { static constexpr ApiCall call = ApiCall::send_rej; static constexpr std::size_t max = kMaxRejPrivateData; };
template <> struct SendOf<MraParams> { static constexpr ApiCall call = ApiCall::send_mra; static constexpr std::size_t max = kMaxMraPrivateData; };
template <> struct SendOf<LapParams> { static constexpr ApiCall call = ApiCall::send_lap; static constexpr std::size_t max = kMaxLapPrivateData; };
template <> struct SendOf<AprParams> { static constexpr ApiCall call = ApiCall::send_apr; static constexpr std::size_t max = kMaxAprPrivateData; };
template <> struct SendOf<SidrReqParams> { static constexpr ApiCall call = ApiCall::send_sidr_req; static constexpr std::size_t max = kMaxSidrReqPrivateData; };
template <> struct SendOf<SidrRepParams> { static constexpr ApiCall call = ApiCall::send_sidr_rep; static constexpr std::size_t max = kMaxSidrRepPrivateData; };

}  // namespace

template <typename Message>
Status PostedCall::prepare(Id id, const Message& p) noexcept {
  id_ = id;
  call_ = SendOf<Message>::call;
  Message& copy = params_.emplace<Message>(p);
  bool fits = keep(copy.private_data, private_data_, SendOf<Message>::max);
  if constexpr (requires { copy.ari; }) fits = fits && keep(copy.ari, info_, kMaxAdditionalInfo);
  if constexpr (requires { copy.info; }) fits = fits && keep(copy.info, info_, kMaxAdditionalInfo);
  return fits ? Status::ok : Status::invalid_argument;
}
template Status PostedCall::prepare(Id, const ReqParams&) noexcept;
template Status PostedCall::prepare(Id, const RepParams&) noexcept;
template Status PostedCall::prepare(Id, const RejParams&) noexcept;
template Status PostedCall::prepare(Id, const MraParams&) noexcept;
template Status PostedCall::prepare(Id, const LapParams&) noexcept;
template Status PostedCall::prepare(Id, const AprParams&) noexcept;
template Status PostedCall::prepare(Id, const SidrReqParams&) noexcept;
template Status PostedCall::prepare(Id, const SidrRepParams&) noexcept;

Status PostedCall::dispatch(engine::Protocol& protocol) const noexcept {
  const auto& p = params_;
  switch (call_) {
    case ApiCall::set_context: return protocol.set_context(id_, *std::get_if<void*>(&p));
    case ApiCall::send_req: return protocol.send_req(id_, *std::get_if<ReqParams>(&p));
    case ApiCall::send_rep: return protocol.send_rep(id_, *std::get_if<RepParams>(&p));
    case ApiCall::send_rtu: return protocol.send_rtu(id_, *std::get_if<Bytes>(&p));
    case ApiCall::send_rej: return protocol.send_rej(id_, *std::get_if<RejParams>(&p));
    case ApiCall::send_mra: return protocol.send_mra(id_, *std::get_if<MraParams>(&p));
    case ApiCall::send_dreq: return protocol.send_dreq(id_, *std::get_if<Bytes>(&p));
    case ApiCall::send_drep: return protocol.send_drep(id_, *std::get_if<Bytes>(&p));
    case ApiCall::send_lap: return protocol.send_lap(id_, *std::get_if<LapParams>(&p));
    case ApiCall::send_apr: return protocol.send_apr(id_, *std::get_if<AprParams>(&p));
    case ApiCall::send_sidr_req: return protocol.send_sidr_req(id_, *std::get_if<SidrReqParams>(&p));
    case ApiCall::send_sidr_rep: return protocol.send_sidr_rep(id_, *std::get_if<SidrRepParams>(&p));
    case ApiCall::establish: return protocol.establish(id_);
  }
  return Status::invalid_argument;
}

void PostedCall::run(engine::Protocol& protocol, FinishedCalls& finished) noexcept {
  protocol.run_posted(id_, call_, [this](engine::Protocol& p) { return dispatch(p); });
  if (pool_ != nullptr) {
    finished.add(*this);
  } else {
    set_and_wake(done_);  // the waiter may pop the record off its stack from here on
  }
}

void PostedCall::wait_until_run() noexcept { wait_until_set(done_); }

PostedCallPool::PostedCallPool(const std::string& name, std::uint32_t capacity) {
  const auto fail = [&](int error, const char* step) {
    rte_mempool_free(pool_);  // accepts null
    throw std::system_error(error, std::generic_category(), std::string(step) + "(" + name + ")");
  };
  // No cache (0): a record in a per-lcore cache would be neither free to others nor posted.
  // Ring ops RTS ("ring_mt_rts", as the MAD pool's): rte_mempool_create's classic MP/MC ring
  // makes each put wait for the puts that reserved before it, and a shard preempted inside its
  // put then stalls every other shard's. Measured here with fastcm-bench --mode poll --disconnect:
  // all four server shards spun in that wait for seconds, 1 run in 3.
  pool_ = rte_mempool_create_empty(name.c_str(), capacity, sizeof(PostedCall), 0, 0, SOCKET_ID_ANY, 0);
  if (pool_ == nullptr) fail(rte_errno, "rte_mempool_create_empty");
  if (const int rc = rte_mempool_set_ops_byname(pool_, "ring_mt_rts", nullptr); rc != 0) {
    fail(-rc, "rte_mempool_set_ops_byname");
  }
  // Every record is made at once, or none: the bound is exact.
  if (const int rc = rte_mempool_populate_default(pool_); rc < 0) fail(-rc, "rte_mempool_populate_default");
  rte_mempool_obj_iter(
      pool_,
      [](rte_mempool*, void* pool, void* record, unsigned) {
        static_cast<PostedCall*>(new (record) PostedCall())->pool_ = static_cast<PostedCallPool*>(pool);
      },
      this);
}

PostedCallPool::~PostedCallPool() { rte_mempool_free(pool_); }

PostedCall* PostedCallPool::take() noexcept {
  void* raw = nullptr;
  if (rte_mempool_get(pool_, &raw) != 0) return nullptr;
  auto* call = static_cast<PostedCall*>(raw);
  // The shard's accesses to the record it gave back happen-before ours through the pool's ring
  // (its release/acquire pair inside DPDK), which ThreadSanitizer cannot see into: in TSan builds
  // the record's own word repeats that order (partner: give_back()'s release store). Other builds
  // skip both, so the shard, which only read the record, never writes its line: the poster's
  // copy of it is still valid, where the word's store made the load here wait for the shard's.
  if constexpr (runtime::kThreadSanitizer) (void)call->done_.load(std::memory_order_acquire);
  return call;
}

void PostedCallPool::give_back(std::span<PostedCall* const> calls) noexcept {
  std::array<void*, FinishedCalls::kCapacity> objects;  // the pool's element type
  while (!calls.empty()) {
    const std::size_t n = std::min(calls.size(), objects.size());
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (runtime::kThreadSanitizer) {
        calls[i]->done_.store(1, std::memory_order_release);  // partner: take()'s acquire load
      }
      objects[i] = calls[i];
    }
    rte_mempool_put_bulk(pool_, objects.data(), static_cast<unsigned>(n));
    calls = calls.subspan(n);
  }
}

void FinishedCalls::flush() noexcept {
  if (count_ == 0) return;
  held_[0]->pool_->give_back(std::span(held_.data(), count_));
  count_ = 0;
}

std::uint32_t PostedCallPool::in_use() const noexcept { return rte_mempool_in_use_count(pool_); }

}  // namespace fastcm::shards
