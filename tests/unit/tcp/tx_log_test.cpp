// The per-segment transmit log (stack/tcp/tx_log.hpp): contiguity, splits at SACK and
// retransmission edges, and the running sums against a byte-by-byte model.
#include "stack/tcp/tx_log.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ws::tcp {
namespace {

Instant at(int ms) { return Instant::from_ns(static_cast<uint64_t>(ms) * 1000000); }

void expect_contiguous(const TxLog& l) {
  for (size_t i = 1; i < l.size(); ++i) ASSERT_EQ(l[i - 1].end(), l[i].seq) << i;
}

TEST(TxLog, AppendAckTrim) {
  TxLog l;
  SeqNum s(1000);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(l.sent(s + 100 * i, 100, at(i)), 0u);
  EXPECT_EQ(l.size(), 10u);
  EXPECT_EQ(l.end(), s + 1000);
  std::vector<uint32_t> seen;
  l.ack(s + 250, [&](const TxSeg& g) { seen.push_back(g.seq - s); });
  EXPECT_EQ(seen, (std::vector<uint32_t>{0, 100}));
  ASSERT_EQ(l.size(), 8u);
  EXPECT_EQ(l[0].seq, s + 250);  // trimmed
  EXPECT_EQ(l[0].len, 50u);
  expect_contiguous(l);
}

TEST(TxLog, SackSplitsAndSums) {
  TxLog l;
  SeqNum s(0xfffffff0u);  // across the wrap
  for (int i = 0; i < 8; ++i) l.sent(s + 1000 * i, 1000, at(i));
  int fresh = 0;
  EXPECT_EQ(l.sack(s + 1500, s + 3200, [&](const TxSeg&) { ++fresh; }), 1700u);
  EXPECT_EQ(fresh, 3);  // [1500,2000) [2000,3000) [3000,3200)
  EXPECT_EQ(l.sacked_bytes(), 1700u);
  EXPECT_EQ(l.sack(s + 1500, s + 3200, [&](const TxSeg&) { ++fresh; }), 0u);  // again: nothing
  expect_contiguous(l);
  l.set_lost(0, true);
  EXPECT_EQ(l.lost_bytes(), 1000u);
  // A retransmission clears the loss and marks the entry.
  EXPECT_EQ(l.sent(s, 1000, at(50)), 1000u);
  EXPECT_EQ(l.lost_bytes(), 0u);
  EXPECT_TRUE(l[0].has(TxSeg::kRetrans));
  EXPECT_EQ(l[0].xmit, at(50));
  // The SACK of a lost entry clears its loss.
  size_t i = l.find(s + 5000);
  l.set_lost(i, true);
  l.sack(s + 5000, s + 6000, [](const TxSeg&) {});
  EXPECT_EQ(l.lost_bytes(), 0u);
  EXPECT_EQ(l.sacked_bytes(), l.count_bytes(TxSeg::kSacked));
}

// Random sends, retransmissions, SACKs, losses and ACKs against a per-byte model.
TEST(TxLog, RandomAgainstModel) {
  uint64_t x = 12345;
  auto rnd = [&](uint32_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>((x >> 33) % n);
  };
  TxLog l;
  SeqNum base(0x7ffff000u), end = base;
  std::vector<uint8_t> sacked;  // per byte from base
  for (int step = 0; step < 20000; ++step) {
    uint32_t op = rnd(10);
    uint32_t out = static_cast<uint32_t>(end - base);
    if (op < 4 || out == 0) {
      uint32_t n = 1 + rnd(3000);
      l.sent(end, n, at(step));
      end += n;
      sacked.resize(sacked.size() + n, 0);
    } else if (op < 6) {
      uint32_t a = rnd(out), n = 1 + rnd(out - a);
      l.sent(base + a, n, at(step));
    } else if (op < 8) {
      uint32_t a = rnd(out), n = 1 + rnd(out - a);
      l.sack(base + a, base + a + n, [](const TxSeg&) {});
      for (uint32_t k = a; k < a + n; ++k) sacked[k] = 1;
    } else if (op < 9) {
      size_t i = rnd(static_cast<uint32_t>(l.size()));
      if (!l[i].has(TxSeg::kSacked)) l.set_lost(i, true);
    } else {
      uint32_t n = rnd(out + 1);
      l.ack(base + n, [](const TxSeg&) {});
      base += n;
      sacked.erase(sacked.begin(), sacked.begin() + n);
    }
    ASSERT_EQ(l.sacked_bytes(), l.count_bytes(TxSeg::kSacked)) << step;
    ASSERT_EQ(l.lost_bytes(), l.count_bytes(TxSeg::kLost)) << step;
    ASSERT_EQ(l.empty() ? base : l[0].seq, base) << step;
    ASSERT_EQ(l.empty() ? end : l.end(), end) << step;
    if (step % 97 == 0) {
      expect_contiguous(l);
      uint32_t model = 0;
      for (uint8_t b : sacked) model += b;
      ASSERT_EQ(l.sacked_bytes(), model) << step;
    }
  }
  EXPECT_GT(l.capacity(), TxLog::kInline);
  EXPECT_GT(l.heap_bytes(), 0u);
  l.release();
  EXPECT_EQ(l.heap_bytes(), 0u);
  EXPECT_EQ(l.capacity(), TxLog::kInline);
}

}  // namespace
}  // namespace ws::tcp
