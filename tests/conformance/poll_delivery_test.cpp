// The poll/notify delivery model: events in an EventQueue, an eventfd that tells an epoll loop
// the queue is non-empty, MADs that stay alive until released; and retain/release for callbacks.
#include <poll.h>

#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

constexpr EngineConfig kSmallEngine{.max_endpoints = 64, .mad_buffers = 256};

// Whether `fd` is readable right now (a zero timeout: no waiting).
bool readable(int fd) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

class PollDelivery : public ConnectScenario {
 protected:
  PollDelivery() : ConnectScenario(loopback::LoopbackConfig::two_hcas(1), kSmallEngine) {}

  // Replaces the callback listen of ConnectScenario with one that queues its events.
  void listen_with_queue(std::uint32_t capacity) {
    ASSERT_EQ(server().engine().destroy(listen_id_), Status::ok);
    queue_ = server().engine().create_event_queue(capacity);
    ASSERT_NE(queue_, nullptr);
    ListenParams lp;
    lp.service_id = kServiceId;
    lp.delivery = Delivery{.queue = queue_};
    lp.context = &listen_context_;
    ASSERT_EQ(server().engine().listen(lp, listen_id_), Status::ok);
  }

  // A second connection's REQ from the client, on its own QP.
  void send_second_req() {
    Id second;
    ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, second), Status::ok);
    ReqParams p = req_params();
    p.qpn = kClientQpn + 1;
    ASSERT_EQ(client().engine().send_req(second, p), Status::ok);
  }

  EventQueue* queue_ = nullptr;
  int listen_context_ = 0;
};

TEST_F(PollDelivery, QueuedRequestIsPolledAnsweredAndReleased) {
  listen_with_queue(8);
  const std::uint32_t baseline = server().engine().mad_buffers_in_use();
  EXPECT_FALSE(readable(queue_->event_fd()));
  connect();
  cluster_.run_for(Cluster::kSecond / 1000);

  EXPECT_TRUE(readable(queue_->event_fd()));
  ASSERT_EQ(queue_->size(), 1u);
  EXPECT_EQ(server().count(EventType::req_received), 0u);  // nothing went to a callback
  std::array<Event, 4> events;
  ASSERT_EQ(server().engine().poll(*queue_, events), 1u);
  EXPECT_FALSE(readable(queue_->event_fd()));  // drained
  const Event& req = events[0];
  EXPECT_EQ(req.type, EventType::req_received);
  EXPECT_EQ(req.context, &listen_context_);
  ASSERT_NE(req.mad, nullptr);
  // The private data points into the queued MAD, which stays alive until released.
  ASSERT_EQ(req.private_data.size(), kMaxReqPrivateData);
  EXPECT_TRUE(std::equal(client_private_data_.begin(), client_private_data_.end(), req.private_data.begin()));
  EXPECT_GT(server().engine().mad_buffers_in_use(), baseline);

  RepParams rep;
  rep.qpn = kServerQpn;
  ASSERT_EQ(server().engine().send_rep(req.id, rep), Status::ok);
  server().engine().release(req);
  cluster_.run_for(Cluster::kSecond / 1000);

  EXPECT_EQ(state_of(client(), client_id_), "established");
  ASSERT_EQ(server().engine().poll(*queue_, events), 1u);
  EXPECT_EQ(events[0].type, EventType::rtu_received);
  server().engine().release(events[0]);
  EXPECT_EQ(state_of(server(), req.id), "established");
}

TEST_F(PollDelivery, FullQueueAppliesTheBacklogPolicyInsteadOfBlocking) {
  listen_with_queue(1);
  connect();
  send_second_req();
  cluster_.run_for(Cluster::kSecond / 1000);

  // The second REQ meets the listen's backlog policy (reject by default): no endpoint is left
  // behind for an event nobody could receive.
  EXPECT_EQ(queue_->size(), 1u);
  EXPECT_EQ(server().port_counters().dropped(DropReason::backlog_full), 1u);
  ASSERT_EQ(client().count(EventType::rej_received), 1u);
  EXPECT_EQ(std::get<RejReceived>(client().of(EventType::rej_received)[0].params).reason, 3);  // no resources
  std::array<Event, 2> events;
  ASSERT_EQ(server().engine().poll(*queue_, events), 1u);
  server().engine().release(events[0]);
}

// An event the full queue refuses leaves its MAD and the MAD's kept credit where they were: after
// everything is polled, released and destroyed, no buffer and no kept credit is left in use. The
// refused event is an RTU's, whose MAD (no private data) no endpoint keeps: only the credit
// reserved for it could go wrong.
TEST_F(PollDelivery, AnEventTheFullQueueRefusesLeavesNoMadOrKeptCreditBehind) {
  listen_with_queue(1);
  const std::uint32_t baseline = server().engine().mad_buffers_in_use();
  connect();
  cluster_.run_for(Cluster::kSecond / 1000);
  std::array<Event, 2> events;
  ASSERT_EQ(server().engine().poll(*queue_, events), 1u);
  const Id first = events[0].id;
  RepParams rep;
  rep.qpn = kServerQpn;
  ASSERT_EQ(server().engine().send_rep(first, rep), Status::ok);
  server().engine().release(events[0]);
  // A second REQ, one hop away where the first connection's RTU is two: its event takes the
  // queue's one place first, and the RTU's finds none.
  send_second_req();
  cluster_.run_for(Cluster::kSecond / 1000);
  EXPECT_EQ(state_of(server(), first), "established");
  EXPECT_EQ(server().port_counters().dropped(DropReason::queue_full), 1u);
  EngineLevels levels;
  server().engine().levels(levels);
  // One MAD is kept now, on whichever shard: the queued REQ's. The RTU's credit went back once,
  // not twice.
  std::uint64_t kept = 0;
  for (const ShardLevels& shard : levels.shards) kept += shard.mad_kept.now;
  EXPECT_EQ(kept, 1u);

  ASSERT_EQ(server().engine().poll(*queue_, events), 1u);
  EXPECT_EQ(events[0].type, EventType::req_received);
  ASSERT_EQ(server().engine().destroy(events[0].id), Status::ok);  // rejects it
  server().engine().release(events[0]);
  ASSERT_EQ(server().engine().destroy(first), Status::ok);
  cluster_.run_for(60 * Cluster::kSecond);  // the DREQ's retries and time-wait
  while (server().engine().poll(*queue_, events) > 0) server().engine().release(events[0]);
  EXPECT_EQ(server().engine().mad_buffers_in_use(), baseline);
  server().engine().levels(levels);
  for (const ShardLevels& shard : levels.shards) EXPECT_EQ(shard.mad_kept.now, 0u);
}

TEST_F(PollDelivery, RetainKeepsACallbacksMadAfterTheCallback) {
  std::optional<Event> kept;
  server().react = [this, &kept](const Event& e) {
    if (e.type == EventType::req_received) {
      server().engine().retain(e);
      kept = e;
    }
  };
  const std::uint32_t baseline = server().engine().mad_buffers_in_use();
  accept_ = false;
  connect();
  cluster_.run_for(Cluster::kSecond / 1000);

  ASSERT_TRUE(kept.has_value());
  EXPECT_GT(server().engine().mad_buffers_in_use(), baseline);
  EXPECT_TRUE(std::equal(client_private_data_.begin(), client_private_data_.end(), kept->private_data.begin()));
  server().engine().release(*kept);
  ASSERT_EQ(server().engine().destroy(kept->id), Status::ok);
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(server().engine().mad_buffers_in_use(), baseline);
}

}  // namespace
}  // namespace fastcm::test
