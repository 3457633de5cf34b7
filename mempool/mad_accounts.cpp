#include "mempool/mad_accounts.h"

namespace fastcm::mempool {

MadAccounts::MadAccounts(std::uint32_t shards, const MadAccountLimits& per_shard) {
  shards_.reserve(shards);
  for (std::uint32_t s = 0; s < shards; ++s) shards_.push_back(std::make_unique<ShardCredits>(per_shard));
}

std::uint32_t MadAccounts::handshake_in_use() const noexcept {
  std::uint32_t used = 0;
  for (std::uint32_t s = 0; s < shards_.size(); ++s) used += shard_in_use(s);
  return used;
}

}  // namespace fastcm::mempool
