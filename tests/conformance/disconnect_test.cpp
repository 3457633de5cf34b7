// Connection release: DREQ, DREP and time-wait.
#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

class Disconnect : public ConnectScenario {
 protected:
  void SetUp() override {
    ConnectScenario::SetUp();
    connect();
    cluster_.run_for(Cluster::kSecond);
    ASSERT_EQ(state_of(client(), client_id_), "established");
    ASSERT_EQ(state_of(server(), server_id_), "established");
  }
};

TEST_F(Disconnect, DreqDrepThenTimewaitOnBothSides) {
  server().react = [this](const Event& e) {
    if (e.type == EventType::dreq_received) {
      EXPECT_EQ(server().engine().send_drep(e.id, {}), Status::ok);
    }
  };
  ASSERT_EQ(client().engine().send_dreq(client_id_, {}), Status::ok);
  cluster_.run_for(Cluster::kSecond / 1000);
  EXPECT_EQ(server().count(EventType::dreq_received), 1u);
  EXPECT_EQ(client().count(EventType::drep_received), 1u);
  EXPECT_EQ(state_of(client(), client_id_), "timewait");
  EXPECT_EQ(state_of(server(), server_id_), "timewait");

  cluster_.run_for(60 * Cluster::kSecond);
  EXPECT_EQ(client().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(server().count(EventType::timewait_exit), 1u);
  EXPECT_EQ(state_of(client(), client_id_), "idle");
}

TEST_F(Disconnect, DestroyWhileEstablishedSendsDreqAndFreesAfterTimewait) {
  int destroyed = 0;
  ASSERT_EQ(client().engine().destroy(client_id_, [](void* n) { ++*static_cast<int*>(n); }, &destroyed),
            Status::ok);
  EXPECT_EQ(destroyed, 1);
  server().react = [this](const Event& e) {
    if (e.type == EventType::dreq_received) {
      EXPECT_EQ(server().engine().send_drep(e.id, {}), Status::ok);
    }
  };
  cluster_.run_for(60 * Cluster::kSecond);
  EXPECT_EQ(server().count(EventType::dreq_received), 1u);
  EXPECT_EQ(client().count(EventType::drep_received), 0u);  // destroyed: no more events
  EXPECT_EQ(state_of(client(), client_id_), "stale");
}

}  // namespace
}  // namespace fastcm::test
