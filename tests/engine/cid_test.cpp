// Local comm IDs (engine/cid.h, cid_permutation.h, sip_hash.h): SipHash against its reference
// vectors, the permutation at the widths the shard field leaves, round trips for every shard count
// (the shard read without a decode), no ID 0, and the IDs an endpoint table issues —
// 1,000 fresh slots, or one slot through its 255 generations — with no relation between neighbours that
// predicts the next ID better than chance. The same analysis run on the previous scheme
// (((slot << 8) | generation) ^ operand) finds it predictable, which shows the test can fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "engine/cep_table.h"
#include "engine/cid.h"
#include "engine/sip_hash.h"

namespace fastcm::engine {
namespace {

constexpr std::array<SipKey, 3> kKeys{SipKey{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull},
                                      SipKey{0, 0}, SipKey{0xdeadbeefcafef00dull, 0x0123456789abcdefull}};

TEST(SipHash, MatchesTheReferenceVectorsOfSipHash24) {
  // The reference implementation's vectors for key 00..0f and messages 00..(n-1), n = 0..7.
  constexpr std::array<std::uint64_t, 8> kExpected{0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull,
                                                   0x0d6c8009d9a94f5aull, 0x85676696d7fb7e2dull,
                                                   0xcf2794e0277187b7ull, 0x18765564cd99a68dull,
                                                   0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull};
  std::uint64_t message = 0;
  for (std::size_t n = 0; n < kExpected.size(); ++n) {
    EXPECT_EQ((sip_hash<2, 4>(kKeys[0], message, n)), kExpected[n]) << n << " bytes";
    message |= std::uint64_t{n} << (8 * n);
  }
}

TEST(SipHash, MatchesTheReferenceVectorsOfSipHash24BeyondOneBlock) {
  // The same vectors for n = 8..16: one or two whole words, then the tail.
  constexpr std::array<std::uint64_t, 9> kExpected{0x93f5f5799a932462ull, 0x9e0082df0ba9e4b0ull,
                                                   0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
                                                   0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull,
                                                   0xf723ca908e7af2eeull, 0xa129ca6149be45e5ull,
                                                   0x3f2acc7f57c29bdbull};
  std::array<std::uint8_t, 16> bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i);
  const auto word_at = [&bytes](std::size_t at, std::size_t length) {
    std::uint64_t w = 0;
    for (std::size_t i = 0; i < length; ++i) w |= std::uint64_t{bytes[at + i]} << (8 * i);
    return w;
  };
  for (std::size_t n = 8; n <= 16; ++n) {
    const std::array<std::uint64_t, 2> words{word_at(0, 8), word_at(8, 8)};
    const std::size_t whole = n / 8;
    const std::uint64_t tail = word_at(8 * whole, n % 8);
    EXPECT_EQ((sip_hash<2, 4>(kKeys[0], std::span(words).first(whole), tail, n % 8)), kExpected[n - 8])
        << n << " bytes";
  }
}

TEST(CidPermutation, DecodeInvertsEncodeAndNeverYieldsZero) {
  std::mt19937_64 rng(7);
  for (const SipKey& key : kKeys) {
    for (const unsigned bits : {32u, 31u, 26u}) {  // the widths 1, 2 and 64 shards leave
      const CidPermutation p(key, bits);
      const std::uint32_t domain_mask = bits == 32 ? ~0u : (1u << bits) - 1;
      for (const std::uint32_t tweak : {0u, 1u, CidPermutation::kMaxTweaks - 1}) {
        for (int i = 0; i < 30'000; ++i) {
          const auto word = (static_cast<std::uint32_t>(rng()) & domain_mask) | 1u;
          const std::uint32_t cid = p.encode(word, tweak);
          ASSERT_NE(cid, 0u) << bits << " bits";
          ASSERT_EQ(cid & ~domain_mask, 0u) << bits << " bits: the image stays in the domain";
          ASSERT_EQ(p.decode(cid, tweak), word) << bits << " bits, tweak " << tweak;
        }
        // The one word the Feistel network maps to 0 gets P(0) instead, and still decodes.
        const std::uint32_t to_zero = p.decode(0, tweak);
        EXPECT_NE(p.encode(to_zero, tweak), 0u);
        EXPECT_EQ(p.decode(p.encode(to_zero, tweak), tweak), to_zero);
      }
    }
  }
}

// Every word of a 17-bit domain (odd: halves of 8 and 9 bits) has its own image: a bijection.
TEST(CidPermutation, IsABijectionOnAnOddWidth) {
  constexpr unsigned kBits = 17;
  const CidPermutation p(kKeys[2], kBits);
  std::vector<bool> seen(std::size_t{1} << kBits);
  for (std::uint32_t word = 1; word < (1u << kBits); ++word) {
    const std::uint32_t image = p.encode(word, 5);
    ASSERT_LT(image, 1u << kBits);
    ASSERT_NE(image, 0u);
    ASSERT_FALSE(seen[image]) << "two words share the image " << image;
    seen[image] = true;
  }
}

TEST(CidLayout, EveryShardCountRoundTripsItsFields) {
  std::mt19937 rng(11);
  const auto draw = [&rng](std::uint32_t bound) { return static_cast<std::uint32_t>(rng() % bound); };
  for (std::uint32_t shards = 1; shards <= 64; ++shards) {
    const CidLayout layout(shards, kKeys[2]);
    const std::uint32_t slots = CidLayout::max_slots(shards);
    for (int i = 0; i < 2'000; ++i) {
      CidParts p;
      p.shard = draw(shards);
      p.slot = i < 2 ? (i == 0 ? 0 : slots - 1) : draw(slots);
      p.generation = 1 + draw(255);
      const std::uint32_t cid = layout.encode(p);
      ASSERT_NE(cid, 0u);
      const CidParts back = layout.decode(cid);
      ASSERT_EQ(back.shard, p.shard) << shards << " shards";
      ASSERT_EQ(back.slot, p.slot) << shards << " shards";
      ASSERT_EQ(back.generation, p.generation) << shards << " shards";
      ASSERT_EQ(layout.shard_of(cid), p.shard) << shards << " shards: the shard field is read without a decode";
    }
  }
}

TEST(CidLayout, TheSameKeyGivesTheSameIdsAndAnotherKeyOthers) {
  const CidLayout a(4, kKeys[0]);
  const CidLayout b(4, kKeys[0]);
  const CidLayout c(4, kKeys[2]);
  int differ = 0;
  for (std::uint32_t slot = 0; slot < 1000; ++slot) {
    const CidParts p{.shard = slot % 4, .slot = slot, .generation = 1};
    EXPECT_EQ(a.encode(p), b.encode(p));
    differ += a.encode(p) != c.encode(p) ? 1 : 0;
  }
  EXPECT_EQ(differ, 1000);
}

// Shards number their slots alike, so the same slot and generation are live on every shard at
// once: their IDs must not share the secret part (a peer holding one would know the others).
TEST(CidLayout, TheSameSlotOnTwoShardsGivesUnrelatedSecrets) {
  const CidLayout layout(4, kKeys[0]);
  const std::uint32_t secret_mask = (1u << 30) - 1;
  std::map<std::uint32_t, int> xors;
  int equal = 0;
  for (std::uint32_t slot = 0; slot < 1000; ++slot) {
    const std::uint32_t a = layout.encode({.shard = 0, .slot = slot, .generation = 1}) & secret_mask;
    const std::uint32_t b = layout.encode({.shard = 1, .slot = slot, .generation = 1}) & secret_mask;
    equal += a == b ? 1 : 0;
    ++xors[a ^ b];
  }
  EXPECT_EQ(equal, 0);
  int most_common = 0;
  for (const auto& [x, n] : xors) most_common = std::max(most_common, n);
  EXPECT_LE(most_common, 2) << "a fixed relation between the shards' secrets";
}

// ---- unpredictability ---------------------------------------------------------------------------

// What an observer of consecutive IDs could exploit. Each predictor guesses the next ID from the
// ones before; a hit is an exact guess (chance: about 2^-32 per guess).
struct Analysis {
  int xor_repeat_hits = 0;      // next = last ^ (last ^ the one before)
  int xor_common_hits = 0;      // next = last ^ (the most common neighbour XOR so far)
  int diff_repeat_hits = 0;     // next = last + (last - the one before)
  int diff_common_hits = 0;     // next = last + (the most common neighbour difference so far)
  double worst_bit_z = 0;       // per bit, how far "same bit as the previous ID" is from 1/2, in sd
};

// Only the low `secret_bits` bits are tested bit by bit: the ones above are the shard field, in the
// clear by design (cid.h) and the same for every ID of one table.
Analysis analyse(const std::vector<std::uint32_t>& ids, unsigned secret_bits) {
  Analysis a;
  std::map<std::uint32_t, int> xors;
  std::map<std::uint32_t, int> diffs;
  std::uint32_t common_xor = 0;
  std::uint32_t common_diff = 0;
  std::array<int, 32> same_bit{};
  for (std::size_t i = 1; i < ids.size(); ++i) {
    const std::uint32_t last = ids[i - 1];
    const std::uint32_t next = ids[i];
    if (i >= 2) {
      const std::uint32_t before = ids[i - 2];
      a.xor_repeat_hits += (next ^ last) == (last ^ before) ? 1 : 0;
      a.diff_repeat_hits += next - last == last - before ? 1 : 0;
      a.xor_common_hits += next == (last ^ common_xor) ? 1 : 0;
      a.diff_common_hits += next == last + common_diff ? 1 : 0;
    }
    if (++xors[next ^ last] > xors[common_xor]) common_xor = next ^ last;
    if (++diffs[next - last] > diffs[common_diff]) common_diff = next - last;
    for (std::size_t b = 0; b < secret_bits; ++b) same_bit[b] += ((next ^ last) >> b & 1) == 0 ? 1 : 0;
  }
  const double n = static_cast<double>(ids.size() - 1);
  for (std::size_t b = 0; b < secret_bits; ++b) {
    const int same = same_bit[b];
    a.worst_bit_z = std::max(a.worst_bit_z, std::abs(same - n / 2) / std::sqrt(n / 4));
  }
  return a;
}

// Chance gives no exact hit in a thousand 2^-32 guesses; the bit test allows 5 standard
// deviations (about 1 in 10^5 per bit for a random sequence; the keys here are fixed, so the
// outcome is too).
void expect_unpredictable(const std::vector<std::uint32_t>& ids, unsigned secret_bits, const char* what) {
  const Analysis a = analyse(ids, secret_bits);
  EXPECT_LE(a.xor_repeat_hits, 1) << what;
  EXPECT_LE(a.xor_common_hits, 1) << what;
  EXPECT_LE(a.diff_repeat_hits, 1) << what;
  EXPECT_LE(a.diff_common_hits, 1) << what;
  EXPECT_LT(a.worst_bit_z, 5.0) << what;
}

bool predictable(const std::vector<std::uint32_t>& ids) {
  const Analysis a = analyse(ids, 32);
  return a.xor_repeat_hits > 1 || a.xor_common_hits > 1 || a.diff_repeat_hits > 1 || a.diff_common_hits > 1 ||
         a.worst_bit_z >= 5.0;
}

// The bits of an ID below its shard field.
unsigned secret_bits(std::uint32_t shards) {
  return 32 - (shards <= 1 ? 0u : static_cast<unsigned>(std::bit_width(shards - 1)));
}

// IDs of 1,000 endpoints allocated at once (fresh slots), as a table hands them out.
std::vector<std::uint32_t> fresh_slot_ids(CepTable& table, int n) {
  std::vector<std::uint32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(table.allocate()->local_comm_id);
  return ids;
}

// IDs one slot gets over `n` reuses.
std::vector<std::uint32_t> reused_slot_ids(CepTable& table, int n) {
  std::vector<std::uint32_t> ids;
  for (int i = 0; i < n; ++i) {
    Cep* cep = table.allocate();
    ids.push_back(cep->local_comm_id);
    table.free(*cep);
  }
  return ids;
}

TEST(CidUnpredictability, NeighbouringSlotsTellNothingOfTheNextId) {
  for (const std::uint32_t shards : {1u, 4u, 64u}) {
    for (const SipKey& key : kKeys) {
      CepTable table(1000, shards - 1, CidLayout(shards, key));
      const std::vector<std::uint32_t> ids = fresh_slot_ids(table, 1000);
      EXPECT_EQ(std::set<std::uint32_t>(ids.begin(), ids.end()).size(), ids.size());
      expect_unpredictable(ids, secret_bits(shards), "fresh slots");
    }
  }
}

// A slot has 255 IDs (its 8-bit generation field, never 0), so its IDs repeat after 255 reuses:
// within that cycle none tells the next.
TEST(CidUnpredictability, AReusedSlotsNextIdIsNotDerivableFromItsLast) {
  constexpr int kCycle = 255;
  for (const SipKey& key : kKeys) {
    CepTable table(1, 0, CidLayout(2, key));
    const std::vector<std::uint32_t> ids = reused_slot_ids(table, kCycle + 1);
    const std::vector<std::uint32_t> cycle(ids.begin(), ids.begin() + kCycle);
    EXPECT_EQ(std::set<std::uint32_t>(cycle.begin(), cycle.end()).size(), cycle.size());
    expect_unpredictable(cycle, secret_bits(2), "one slot reused");
    EXPECT_EQ(ids[kCycle], ids[0]) << "the generation field wraps";
  }
}

TEST(CidUnpredictability, TheAnalysisFindsThePreviousXorSchemePredictable) {
  // The scheme the permutation replaced, on the same sequences of fields.
  const auto xor_scheme = [](std::uint32_t slot, std::uint32_t generation) {
    return ((slot << 8) | generation) ^ 0x9E3779B9u;
  };
  std::vector<std::uint32_t> fresh;
  std::vector<std::uint32_t> reused;
  for (std::uint32_t i = 0; i < 1000; ++i) fresh.push_back(xor_scheme(i, 1));
  for (std::uint32_t generation = 1; generation <= 255; ++generation) reused.push_back(xor_scheme(0, generation));
  EXPECT_TRUE(predictable(fresh));
  EXPECT_TRUE(predictable(reused));
}

}  // namespace
}  // namespace fastcm::engine
