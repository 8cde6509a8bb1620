// TxPipeline::push_bulk (the bulk producer path, docs/pipeline.md "Bulk push"): it must
// behave exactly like the same messages pushed one at a time (stream bytes, pieces handed
// to the TX step, deadlines, counters, backpressure), and the framing position that the
// pull side no longer follows per pull must still cut priorities at message ends.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "stack/codec/framing.hpp"
#include "stack/pipeline/tx_pipeline.hpp"

namespace ws::pipeline {
namespace {

Instant at_us(int64_t us) { return Instant::from_ns(0) + Duration::micros(us); }

struct Taken {
  std::vector<uint8_t> bytes;
  std::vector<size_t> pieces;
  size_t drain(TxPipeline& p, Instant now, size_t budget) {
    return p.drain(now, [&](std::span<const uint8_t> s) {
      const size_t n = std::min(s.size(), budget);
      budget -= n;
      bytes.insert(bytes.end(), s.begin(), s.begin() + static_cast<ptrdiff_t>(n));
      if (n) pieces.push_back(n);
      return n;
    });
  }
};

// Pushes `count` pattern messages (sequence numbers from `seq`) one at a time, as the
// source did before the bulk path; stops at the first refusal like push_bulk.
BulkPushResult push_each(TxPipeline& p, uint64_t count, uint32_t size, uint64_t seq, Priority prio,
                         Instant now) {
  BulkPushResult r;
  std::vector<uint8_t> m(size);
  for (uint64_t i = 0; i < count; ++i) {
    fill_pattern(seq + i, 0, m);
    const PushResult one = p.push(m, prio, now);
    if (one.status != PushStatus::kOk) {
      r.status = one.status;
      break;
    }
    ++r.accepted;
    r.notify = one.notify;
  }
  return r;
}

BulkPushResult push_many(TxPipeline& p, uint64_t count, uint32_t size, uint64_t seq, Priority prio,
                         Instant now) {
  return p.push_bulk(
      count, size, prio, now,
      [seq](uint64_t i, uint64_t off, std::span<uint8_t> out) { fill_pattern(seq + i, off, out); });
}

void expect_same_counters(const PipelineCounters& a, const PipelineCounters& b) {
  EXPECT_EQ(a.messages, b.messages);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.refused, b.refused);
  EXPECT_EQ(a.too_large, b.too_large);
  EXPECT_EQ(a.batches_allocated, b.batches_allocated);
  EXPECT_EQ(a.batches_freed, b.batches_freed);
  EXPECT_EQ(a.small_allocated, b.small_allocated);
  EXPECT_EQ(a.full_allocated, b.full_allocated);
  EXPECT_EQ(a.spare_reuses, b.spare_reuses);
  EXPECT_EQ(a.promotions, b.promotions);
  EXPECT_EQ(a.batching_entries, b.batching_entries);
  EXPECT_EQ(a.backoff_ns, b.backoff_ns);
  EXPECT_EQ(a.pulls, b.pulls);
  EXPECT_EQ(a.pulled_bytes, b.pulled_bytes);
  EXPECT_EQ(a.batches_live, b.batches_live);
  EXPECT_EQ(a.batches_in_use, b.batches_in_use);
  EXPECT_EQ(a.batches_peak, b.batches_peak);
}

// The same random schedule (sizes, counts, owner-reported in flight, partial pulls at
// random instants, MSS changes, a small batch bound) on two pipelines: one fed per message,
// one in bulk. Everything observable must match, and every message must decode whole.
void run_equivalence(uint32_t size, bool batching, uint64_t seed) {
  PipelineParams prm;
  prm.initial_mss = 1448;
  prm.batching = batching;
  prm.max_batches = 6;
  TxPipeline each(prm);
  TxPipeline bulk(prm);
  Taken te;
  Taken tb;
  uint64_t lcg = seed;
  auto rnd = [&](uint64_t n) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (lcg >> 33) % n;
  };
  uint64_t seq = 0;
  uint64_t refusals = 0;
  Instant now = at_us(0);
  const uint64_t frame = kFrameHeaderBytes + uint64_t{size};
  for (int step = 0; step < 250; ++step) {
    now += Duration::micros(rnd(30));
    const uint64_t in_flight = rnd(3) == 0 ? 0 : rnd(200000);
    each.set_in_flight(in_flight);
    bulk.set_in_flight(in_flight);
    const uint64_t count = 1 + rnd(std::max<uint64_t>(1, 150000 / frame));
    const BulkPushResult a = push_each(each, count, size, seq, Priority::kData, now);
    const BulkPushResult b = push_many(bulk, count, size, seq, Priority::kData, now);
    ASSERT_EQ(a.accepted, b.accepted) << "step " << step;
    ASSERT_EQ(a.status, b.status);
    if (a.accepted > 0) {
      EXPECT_EQ(a.notify, b.notify);
    }
    if (a.status != PushStatus::kOk) ++refusals;
    seq += a.accepted;
    ASSERT_EQ(each.poll(now), bulk.poll(now));
    ASSERT_EQ(each.batching(), bulk.batching());
    if (rnd(3) != 0) {
      const Instant pull = now + Duration::micros(rnd(40));
      const size_t budget = rnd(4) == 0 ? SIZE_MAX : rnd(150000);
      ASSERT_EQ(te.drain(each, pull, budget), tb.drain(bulk, pull, budget));
      now = pull;
    }
    if (step % 97 == 96) {
      const uint32_t mss = rnd(2) ? 1448 : 536;
      each.set_mss(mss);
      bulk.set_mss(mss);
    }
  }
  while (each.queued_bytes() > 0 || bulk.queued_bytes() > 0) {
    now += Duration::millis(1);
    te.drain(each, now, SIZE_MAX);
    tb.drain(bulk, now, SIZE_MAX);
  }
  EXPECT_EQ(te.pieces, tb.pieces);
  ASSERT_EQ(te.bytes, tb.bytes);
  expect_same_counters(each.counters(), bulk.counters());
  EXPECT_GT(refusals, 0u) << "the bound was never reached: the test lost its point";
  // Every message whole, in order, every byte the pattern of its sequence number.
  FrameDecoder dec({.framing = Framing::kLength32, .max_message_bytes = 1 << 24, .collect = false});
  const FrameScan s = dec.scan(tb.bytes, true);
  EXPECT_EQ(s.messages, seq);
  EXPECT_EQ(s.mismatches, 0u);
  EXPECT_FALSE(s.error);
  EXPECT_FALSE(dec.in_message());
}

TEST(BulkPush, SameAsOneAtATime8Bytes) { run_equivalence(8, true, 1); }
TEST(BulkPush, SameAsOneAtATime64BytesBatchingOff) { run_equivalence(64, false, 2); }
TEST(BulkPush, SameAsOneAtATimeEmptyMessages) { run_equivalence(0, true, 3); }
TEST(BulkPush, SameAsOneAtATime1000Bytes) { run_equivalence(1000, true, 4); }
TEST(BulkPush, SameAsOneAtATimeOneMss) { run_equivalence(1444, true, 5); }
TEST(BulkPush, SameAsOneAtATimeLargerThanABatch) { run_equivalence(70000, true, 6); }

TEST(BulkPush, EntersBatchingAtTheSameMessage) {
  // Limit 65160, 1000-byte frames: in flight is 66000 > 65160 when the 67th arrives (its
  // own frame not counted), as for single pushes (test_tx_pipeline.cpp).
  PipelineParams prm;
  prm.initial_mss = 1448;
  TxPipeline p(prm);
  EXPECT_TRUE(push_many(p, 66, 996, 0, Priority::kData, at_us(0)).notify);
  EXPECT_FALSE(p.batching());
  const BulkPushResult r = push_many(p, 1, 996, 66, Priority::kData, at_us(0));
  EXPECT_EQ(r.accepted, 1u);
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.counters().batching_entries, 1u);
  // All 67 in one call: the same.
  TxPipeline q(prm);
  push_many(q, 67, 996, 0, Priority::kData, at_us(0));
  EXPECT_TRUE(q.batching());
  TxPipeline q66(prm);
  push_many(q66, 66, 996, 0, Priority::kData, at_us(0));
  EXPECT_FALSE(q66.batching());
}

TEST(BulkPush, TooLargeAndBackpressure) {
  PipelineParams prm;
  prm.initial_mss = 1448;
  prm.max_batches = 2;
  TxPipeline p(prm);
  const BulkPushResult big = push_many(p, 3, 3 * 65160, 0, Priority::kData, at_us(0));
  EXPECT_EQ(big.accepted, 0u);
  EXPECT_EQ(big.status, PushStatus::kTooLarge);
  EXPECT_EQ(p.queued_bytes(), 0u);
  // Two batches of 65160 bytes hold 10860 whole 12-byte frames; the rest is refused whole.
  const BulkPushResult r = push_many(p, 20000, 8, 0, Priority::kData, at_us(0));
  EXPECT_EQ(r.accepted, 10860u);
  EXPECT_EQ(r.status, PushStatus::kBackpressure);
  EXPECT_EQ(p.queued_bytes(), 10860u * 12);
  EXPECT_EQ(p.counters().messages, 10860u);
}

// The TX step stands inside a data header that straddles two batches when a control message
// arrives: the data message is finished first, in the same pieces as when every pull
// followed the framing (rest of the header in this batch, in the next, the payload).
void straddling_header(bool bulk) {
  PipelineParams prm;
  prm.initial_mss = 1448;  // limit 65160 = 2 x 32579 + 2: the third header straddles
  prm.batching = false;
  TxPipeline p(prm);
  Taken t;
  if (bulk) {
    ASSERT_EQ(push_many(p, 4, 32575, 0, Priority::kData, at_us(0)).accepted, 4u);
  } else {
    ASSERT_EQ(push_each(p, 4, 32575, 0, Priority::kData, at_us(0)).accepted, 4u);
  }
  EXPECT_EQ(t.drain(p, at_us(0), 65159), 65159u);
  std::vector<uint8_t> c(40);
  fill_pattern(0, 0, c);
  ASSERT_EQ(p.push(c, Priority::kControl, at_us(1)).status, PushStatus::kOk);
  t.drain(p, at_us(1), SIZE_MAX);
  EXPECT_EQ(t.pieces, (std::vector<size_t>{65159, 1, 2, 32575, 44, 32579}));
  // Data 0, 1, 2, then the control message, then data 3.
  FrameDecoder dec({.framing = Framing::kLength32, .max_message_bytes = 1 << 20, .collect = true});
  std::vector<size_t> lengths;
  dec.feed(t.bytes, [&](const FrameEvent& ev) {
    if (ev.kind == FrameEventKind::kMessageComplete) lengths.push_back(ev.data.size());
  });
  EXPECT_EQ(lengths, (std::vector<size_t>{32575, 32575, 32575, 40, 32575}));
}

TEST(BulkPush, PriorityCutInsideAStraddlingHeaderBulk) { straddling_header(true); }
TEST(BulkPush, PriorityCutInsideAStraddlingHeaderOneAtATime) { straddling_header(false); }

// Control messages between bulk data at random pull positions: each lands at a data message
// end, order within each priority is kept, and every byte is checked.
TEST(BulkPush, ControlBetweenBulkDataAtMessageEnds) {
  PipelineParams prm;
  prm.initial_mss = 1448;
  prm.max_batches = 16;
  TxPipeline p(prm);
  uint64_t lcg = 7;
  auto rnd = [&](uint64_t n) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (lcg >> 33) % n;
  };
  // Data messages carry even sequence numbers from 0 (pattern key = order), control odd.
  FrameDecoder dec({.framing = Framing::kLength32, .max_message_bytes = 1 << 20, .collect = true});
  uint64_t data_next = 0;
  uint64_t ctrl_next = 1;
  uint64_t got = 0;
  std::vector<uint64_t> keys_data;
  std::vector<uint64_t> keys_ctrl;
  size_t d_idx = 0;
  size_t c_idx = 0;
  auto sink = [&](std::span<const uint8_t> s) {
    const size_t n = std::min<size_t>(s.size(), 1 + rnd(5000));
    dec.feed(s.first(n), [&](const FrameEvent& ev) {
      ASSERT_EQ(ev.kind, FrameEventKind::kMessageComplete);
      const bool is_ctrl = ev.data.size() == 21;
      const uint64_t seq = is_ctrl ? keys_ctrl.at(c_idx++) : keys_data.at(d_idx++);
      EXPECT_EQ(check_pattern(seq, 0, ev.data), ev.data.size());
      ++got;
    });
    return n;
  };
  Instant now = at_us(0);
  uint64_t pushed = 0;
  for (int step = 0; step < 2000; ++step) {
    now += Duration::micros(1 + rnd(10));
    const uint32_t size = rnd(2) ? 8 : 64 + static_cast<uint32_t>(rnd(3000));
    const uint64_t base = data_next;
    // Like the source: data up to about two batches queued, so control finds room.
    const uint64_t count = p.queued_bytes(Priority::kData) < 2 * 65160 ? 1 + rnd(500) : 0;
    const BulkPushResult r = p.push_bulk(count, size, Priority::kData, now,
                                         [base](uint64_t i, uint64_t off, std::span<uint8_t> out) {
                                           fill_pattern(base + 2 * i, off, out);
                                         });
    for (uint64_t i = 0; i < r.accepted; ++i) keys_data.push_back(base + 2 * i);
    data_next += 2 * r.accepted;
    pushed += r.accepted;
    if (rnd(4) == 0) {
      std::vector<uint8_t> c(21);
      fill_pattern(ctrl_next, 0, c);
      if (p.push(c, Priority::kControl, now, rnd(3) == 0).status == PushStatus::kOk) {
        keys_ctrl.push_back(ctrl_next);
        ctrl_next += 2;
        ++pushed;
      }
    }
    if (p.poll(now) <= now) p.drain(now, sink);
  }
  while (p.queued_bytes() > 0) {
    now += Duration::millis(1);
    p.drain(now, sink);
  }
  EXPECT_EQ(got, pushed);
  EXPECT_EQ(c_idx, keys_ctrl.size());
  EXPECT_GT(keys_ctrl.size(), 100u);
  EXPECT_FALSE(dec.in_message());
}

}  // namespace
}  // namespace ws::pipeline
