// SendBatch: one send_burst per port per flush, each port's MADs in the order queued; a full batch
// goes out before it takes more; only what the fabric accepted is counted; every reference the
// batch took goes back, sent or refused; destruction sends what is still queued.
#include "shards/send_batch.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace fastcm::shards {
namespace {

// Records every send_burst (the port and the first byte of each MAD) and accepts at most
// `accept_per_burst` leading packets of each.
class RecordingFabric final : public Fabric {
 public:
  struct Burst {
    std::uint16_t port;
    std::vector<std::uint8_t> marks;
  };

  std::span<const PortAttr> ports() const noexcept override { return ports_; }
  std::size_t send_burst(std::uint16_t port, std::span<const MadPacket* const> pkts) noexcept override {
    Burst& b = bursts.emplace_back(Burst{port, {}});
    for (const MadPacket* p : pkts) b.marks.push_back(p->mad[0]);
    return std::min(pkts.size(), accept_per_burst);
  }
  std::size_t recv_burst(std::uint16_t, std::span<MadPacket* const>) noexcept override { return 0; }
  int rx_event_fd(std::uint16_t) const noexcept override { return -1; }
  bool arm_rx_event(std::uint16_t) noexcept override { return false; }

  std::vector<Burst> bursts;
  std::size_t accept_per_burst = SendBatch::kCapacity;

 private:
  std::array<PortAttr, 2> ports_{};
};

// The test owns the MADs (one reference each); a put would mean the batch let go of one too many.
class OwnerKeepsPool final : public engine::MadPool {
 public:
  engine::MadBuf* get(engine::MadAccount) noexcept override { return nullptr; }
  bool room_for_handshake() const noexcept override { return false; }
  std::uint32_t in_use() const noexcept override { return 0; }
  int puts = 0;

 private:
  void put(engine::MadBuf*) noexcept override { ++puts; }
};

struct Accepted {
  std::uint16_t port;
  engine::SendTally tally;
};

class SendBatchTest : public ::testing::Test {
 protected:
  SendBatchTest() {
    for (std::size_t i = 0; i < mads_.size(); ++i) {
      mads_[i].refs.store(1);
      mads_[i].packet.mad[0] = static_cast<std::uint8_t>(i);
    }
  }

  // MAD `i`, addressed to leave from `port`.
  engine::MadBuf& mad(std::size_t i, std::uint16_t port) {
    mads_[i].packet.addr.port_index = port;
    return mads_[i];
  }
  [[nodiscard]] bool all_references_back() const {
    for (const engine::MadBuf& m : mads_) {
      if (m.refs.load() != 1) return false;
    }
    return pool_.puts == 0;
  }
  static void record(void* self, std::uint16_t port, engine::SendTally tally) noexcept {
    static_cast<SendBatchTest*>(self)->accepted_.push_back(Accepted{port, tally});
  }

  RecordingFabric fabric_;
  OwnerKeepsPool pool_;
  std::array<engine::MadBuf, 2 * SendBatch::kCapacity> mads_{};
  std::vector<Accepted> accepted_;
  SendBatch batch_{fabric_, pool_, &SendBatchTest::record, this};
};

TEST_F(SendBatchTest, OneBurstPerPortInTheOrderQueued) {
  const std::uint16_t ports[] = {1, 0, 1, 1, 0};
  for (std::size_t i = 0; i < std::size(ports); ++i) {
    batch_.add(mad(i, ports[i]), engine::SendTally{.attr = mad::AttrId::rep, .retry = i == 2});
    EXPECT_EQ(mads_[i].refs.load(), 2u) << "queued MADs are held";
  }
  EXPECT_TRUE(fabric_.bursts.empty()) << "nothing goes out before the flush";
  batch_.flush();
  ASSERT_EQ(fabric_.bursts.size(), 2u);
  EXPECT_EQ(fabric_.bursts[0].port, 1);  // the port queued first goes first
  EXPECT_EQ(fabric_.bursts[0].marks, (std::vector<std::uint8_t>{0, 2, 3}));
  EXPECT_EQ(fabric_.bursts[1].port, 0);
  EXPECT_EQ(fabric_.bursts[1].marks, (std::vector<std::uint8_t>{1, 4}));
  ASSERT_EQ(accepted_.size(), 5u);
  int retries = 0;
  for (const Accepted& a : accepted_) retries += a.tally.retry ? 1 : 0;
  EXPECT_EQ(retries, 1);
  EXPECT_TRUE(batch_.empty());
  EXPECT_TRUE(all_references_back());
}

TEST_F(SendBatchTest, AFullBatchGoesOutBeforeItTakesMore) {
  for (std::size_t i = 0; i < SendBatch::kCapacity; ++i) batch_.add(mad(i, 0), {});
  EXPECT_TRUE(fabric_.bursts.empty());
  batch_.add(mad(SendBatch::kCapacity, 0), {});
  ASSERT_EQ(fabric_.bursts.size(), 1u);
  EXPECT_EQ(fabric_.bursts[0].marks.size(), SendBatch::kCapacity);
  EXPECT_FALSE(batch_.empty());
  EXPECT_EQ(mads_[SendBatch::kCapacity].refs.load(), 2u);
  batch_.flush();
  EXPECT_EQ(fabric_.bursts.size(), 2u);
  EXPECT_TRUE(all_references_back());
}

TEST_F(SendBatchTest, RefusedMadsAreReleasedUncounted) {
  fabric_.accept_per_burst = 1;
  for (std::size_t i = 0; i < 3; ++i) batch_.add(mad(i, 0), engine::SendTally{.attr = mad::AttrId::rej});
  batch_.add(mad(3, 1), engine::SendTally{.attr = mad::AttrId::drep});
  batch_.flush();
  ASSERT_EQ(accepted_.size(), 2u);
  EXPECT_EQ(accepted_[0].port, 0);
  EXPECT_EQ(accepted_[0].tally.attr, mad::AttrId::rej);
  EXPECT_EQ(accepted_[1].port, 1);
  EXPECT_EQ(accepted_[1].tally.attr, mad::AttrId::drep);
  EXPECT_TRUE(all_references_back());
}

TEST_F(SendBatchTest, DestructionSendsWhatIsQueued) {
  {
    SendBatch last(fabric_, pool_, &SendBatchTest::record, this);
    last.add(mad(0, 1), {});
  }
  ASSERT_EQ(fabric_.bursts.size(), 1u);
  EXPECT_EQ(fabric_.bursts[0].port, 1);
  EXPECT_EQ(accepted_.size(), 1u);
  EXPECT_TRUE(all_references_back());
}

}  // namespace
}  // namespace fastcm::shards
