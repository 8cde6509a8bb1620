// TX batch pipeline on a virtual clock: batch limits, batching mode and its backoff
// deadline, lazy allocation, express and priorities, fragmentation, bounded memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "stack/codec/framing.hpp"
#include "stack/pipeline/tx_pipeline.hpp"

namespace ws::pipeline {
namespace {

Instant at_us(int64_t us) { return Instant::from_ns(0) + Duration::micros(us); }

std::vector<uint8_t> pattern_message(uint64_t seq, size_t len) {
  std::vector<uint8_t> m(len);
  fill_pattern(seq, 0, m);
  return m;
}

// The receiving side: everything the TX step took, in order, as one stream.
struct Wire {
  std::vector<uint8_t> bytes;
  std::vector<size_t> pieces;  // sizes of the spans taken
  // Takes everything available at `now`, or at most `budget` bytes.
  size_t drain(TxPipeline& p, Instant now, size_t budget = SIZE_MAX) {
    return p.drain(now, [&](std::span<const uint8_t> s) {
      const size_t n = std::min(s.size(), budget);
      budget -= n;
      bytes.insert(bytes.end(), s.begin(), s.begin() + n);
      if (n) pieces.push_back(n);
      return n;
    });
  }
  // Decodes the stream whole-message and returns the payloads.
  std::vector<std::vector<uint8_t>> messages() const {
    FrameDecoder dec(
        {.framing = Framing::kLength32, .max_message_bytes = 1 << 24, .collect = true});
    std::vector<std::vector<uint8_t>> out;
    dec.feed(bytes, [&](const FrameEvent& ev) {
      EXPECT_NE(ev.kind, FrameEventKind::kError);
      if (ev.kind == FrameEventKind::kMessageComplete)
        out.emplace_back(ev.data.begin(), ev.data.end());
    });
    EXPECT_FALSE(dec.in_message());
    return out;
  }
};

PipelineParams params_mss(uint32_t mss) {
  PipelineParams p;
  p.initial_mss = mss;
  return p;
}

// --- Batch sizing ---------------------------------------------------------------------

TEST(BatchLimit, WholeMultiplesOfTheMss) {
  struct Case {
    uint32_t mss, max, want;
  };
  const Case cases[] = {
      {536, 65535, 122 * 536},   {1448, 65535, 45 * 1448},
      {8948, 65535, 7 * 8948},   {536, 1500, 2 * 536},
      {1448, 1500, 1448},        {536, 9000, 16 * 536},
      {1448, 9000, 6 * 1448},    {8948, 9000, 8948},
      {536, 262144, 489 * 536},  {1448, 262144, 181 * 1448},
      {8948, 262144, 29 * 8948}, {1448, 65536, 65160},
      {536, 536, 536},           {1448, 2048, 1448},
      {8948, 65536, 62636},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(batch_limit(c.mss, c.max), c.want) << c.mss << " " << c.max;
    EXPECT_EQ(batch_limit(c.mss, c.max) % c.mss, 0u);
  }
  EXPECT_EQ(batch_limit(1448, 65535), 65160u);
  EXPECT_EQ(batch_limit(8948, 65535), 62636u);
}

TEST(BatchLimit, MaximumBelowOneMssIsOneSegment) {
  EXPECT_EQ(batch_limit(8948, 1500), 8948u);
  EXPECT_EQ(batch_limit(8948, 2048), 8948u);
  EXPECT_EQ(batch_limit(1448, 1000), 1448u);
  EXPECT_EQ(batch_limit(0, 65535), 65535u);  // MSS not known yet
}

TEST(TxPipeline, LimitRecomputedWhenTheMssChanges) {
  TxPipeline p(params_mss(1448));
  EXPECT_EQ(p.batch_limit(), 65160u);
  p.set_mss(8948);
  EXPECT_EQ(p.batch_limit(), 62636u);
  p.set_mss(536);
  EXPECT_EQ(p.batch_limit(), 65392u);
}

TEST(TxPipeline, FixedBatchSizeWhenMssMultipleIsOff) {
  PipelineParams prm = params_mss(1448);
  prm.max_batch_bytes = 64512;
  prm.mss_multiple = false;
  TxPipeline p(prm);
  EXPECT_EQ(p.batch_limit(), 64512u);
  p.set_mss(8948);
  EXPECT_EQ(p.batch_limit(), 64512u);
  const std::vector<uint8_t> m = pattern_message(0, 200000);
  p.push(m, Priority::kData, at_us(0));
  Wire w;
  w.drain(p, at_us(100));
  const std::vector<size_t> pieces = {64512, 64512, 64512, 200004 - 3 * 64512};
  EXPECT_EQ(w.pieces, pieces);
}

// Every batch the TX step takes in one go except the last is exactly the limit, so TCP
// cuts it into full segments only.
TEST(TxPipeline, BatchesAreExactMultiplesExceptTheTail) {
  for (uint32_t mss : {536u, 1448u, 8948u}) {
    TxPipeline p(params_mss(mss));
    const uint32_t limit = p.batch_limit();
    const std::vector<uint8_t> m = pattern_message(0, 700);
    for (int i = 0; i < 500; ++i) {
      ASSERT_EQ(p.push(m, Priority::kData, at_us(0)).status, PushStatus::kOk);
    }
    Wire w;
    w.drain(p, at_us(1000));
    ASSERT_EQ(w.bytes.size(), 500u * 704);
    for (size_t i = 0; i + 1 < w.pieces.size(); ++i) {
      EXPECT_EQ(w.pieces[i], limit) << "mss " << mss << " piece " << i;
      EXPECT_EQ(w.pieces[i] % mss, 0u);
    }
    EXPECT_LE(w.pieces.back(), limit);
    EXPECT_EQ(w.messages().size(), 500u);
  }
}

TEST(TxPipeline, MssChangeAppliesToLaterBatches) {
  TxPipeline p(params_mss(1448));
  const std::vector<uint8_t> m = pattern_message(0, 996);  // 1000-byte frames
  for (int i = 0; i < 30; ++i) p.push(m, Priority::kData, at_us(0));
  p.set_mss(8948);  // open batch (30000 bytes) now closes at 62636
  for (int i = 0; i < 200; ++i) p.push(m, Priority::kData, at_us(0));
  Wire w;
  w.drain(p, at_us(1000));
  ASSERT_GE(w.pieces.size(), 3u);
  for (size_t i = 0; i + 1 < w.pieces.size(); ++i) EXPECT_EQ(w.pieces[i], 62636u);
  EXPECT_EQ(w.messages().size(), 230u);
}

// --- Batching mode ------------------------------------------------------------------------

TEST(TxPipeline, SendsAtOnceWhileTheLinkKeepsUp) {
  TxPipeline p(params_mss(1448));
  Wire w;
  const std::vector<uint8_t> m = pattern_message(0, 100);
  for (int i = 0; i < 1000; ++i) {
    const Instant now = at_us(10 * i);
    const PushResult r = p.push(m, Priority::kData, now);
    EXPECT_EQ(r.status, PushStatus::kOk);
    EXPECT_TRUE(r.notify);
    EXPECT_EQ(p.poll(now), now);
    EXPECT_EQ(w.drain(p, now), 104u);
    EXPECT_EQ(p.poll(now), Instant::never());
  }
  EXPECT_EQ(p.counters().batching_entries, 0u);
  // One small batch, rewound after every pull: no allocation on the steady-state path.
  EXPECT_EQ(p.counters().batches_allocated, 1u);
  EXPECT_EQ(p.counters().small_allocated, 1u);
  EXPECT_EQ(p.counters().messages, 1000u);
  EXPECT_EQ(p.counters().bytes, 100000u);
}

TEST(TxPipeline, EntersBatchingWhenMoreThanOneBatchIsInFlight) {
  TxPipeline p(params_mss(1448));  // limit 65160, backoff 20 us
  const std::vector<uint8_t> m = pattern_message(0, 996);
  // The consumer stops pulling: 65 frames (65000 bytes) fit within one batch in flight.
  for (int i = 0; i < 65; ++i) {
    EXPECT_TRUE(p.push(m, Priority::kData, at_us(100)).notify) << i;
  }
  EXPECT_FALSE(p.batching());
  // 66th: 65000 queued is not more than a batch; it makes 66000.
  EXPECT_TRUE(p.push(m, Priority::kData, at_us(100)).notify);
  // 67th: more than one batch in flight. It still finds the TX step due: the first batch
  // is full (66th push) and a full batch is never held.
  const PushResult r = p.push(m, Priority::kData, at_us(101));
  EXPECT_EQ(r.status, PushStatus::kOk);
  EXPECT_TRUE(r.notify);
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.counters().batching_entries, 1u);
  // The first batch is full: it is due at once, batching mode or not.
  EXPECT_EQ(p.poll(at_us(101)), at_us(101));

  // Before the deadline only the full batch is available, not the open one.
  Wire w;
  EXPECT_EQ(w.drain(p, at_us(110)), 65160u);
  EXPECT_TRUE(p.batching());
  // Then the open batch waits for the deadline, counted from that pull.
  EXPECT_EQ(p.poll(at_us(110)), at_us(130));
  EXPECT_EQ(w.drain(p, at_us(129)), 0u);
  // At the deadline the TX step takes whatever is there; the full drain leaves.
  EXPECT_EQ(w.drain(p, at_us(130)), 67u * 1000 - 65160);
  EXPECT_FALSE(p.batching());
  EXPECT_EQ(p.poll(at_us(130)), Instant::never());
  EXPECT_EQ(w.messages().size(), 67u);
  // Backoff counted between pulls in batching mode: 101 -> 110 -> 130.
  EXPECT_EQ(p.counters().backoff_ns, uint64_t(Duration::micros(29).ns()));

  // The link keeps up again: the next message goes at once.
  EXPECT_TRUE(p.push(m, Priority::kData, at_us(131)).notify);
}

// The regression behind "batching on is slower than off" (docs/benchmarks.md finding 13):
// a bulk producer keeps two batches queued and TCP full. Each batch it fills must be due
// at once, so that the TX step (which pulls only when poll() says so) hands it to TCP on
// the next on_writable instead of leaving TCP to run dry until the backoff deadline. The
// open batch is still held to the deadline, counted from the last pull.
TEST(TxPipeline, FullBatchesAreDueAtOnceInBatchingMode) {
  PipelineParams prm = params_mss(1448);  // limit 65160
  prm.backoff = Duration::micros(100);
  TxPipeline p(prm);
  Wire w;
  p.set_in_flight(4 << 20);  // TCP's send buffer is full of earlier batches
  const std::vector<uint8_t> m = pattern_message(0, 8);  // 12-byte frames, 5430 per batch
  // The first push enters batching mode: nothing is due before the deadline.
  EXPECT_FALSE(p.push(m, Priority::kData, at_us(0)).notify);
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.poll(at_us(0)), at_us(100));
  for (int i = 1; i < 5429; ++i) EXPECT_FALSE(p.push(m, Priority::kData, at_us(1)).notify);
  EXPECT_EQ(p.poll(at_us(1)), at_us(100));
  // The frame that fills the batch makes the TX step due now, not at 100 us.
  EXPECT_TRUE(p.push(m, Priority::kData, at_us(2)).notify);
  EXPECT_EQ(p.poll(at_us(2)), at_us(2));
  // The next frames go to a new open batch; the full one stays due.
  EXPECT_TRUE(p.push(m, Priority::kData, at_us(3)).notify);
  EXPECT_EQ(p.poll(at_us(3)), at_us(3));
  // TCP has room for 1448 bytes only: a pull that moves the deadline to 104 us...
  EXPECT_EQ(w.drain(p, at_us(4), 1448), 1448u);
  EXPECT_EQ(p.last_pull(), at_us(4));
  // ...and the rest of the full batch is still due at once (on_writable pulls it).
  EXPECT_EQ(p.poll(at_us(5)), at_us(5));
  EXPECT_EQ(w.drain(p, at_us(50)), 65160u - 1448);
  // Only the open batch (one frame) is left: held until 100 us after that pull.
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.poll(at_us(50)), at_us(150));
  EXPECT_FALSE(p.push(m, Priority::kData, at_us(60)).notify);
  EXPECT_EQ(w.drain(p, at_us(149)), 0u);
  EXPECT_EQ(w.drain(p, at_us(150)), 24u);
  EXPECT_FALSE(p.batching());
  EXPECT_EQ(w.messages().size(), 5432u);
  // No batch handed over short of the limit except the deadline's open batch: TCP got the
  // full batch in two pieces because it was full, and then the 2-frame tail.
  EXPECT_EQ(w.pieces, (std::vector<size_t>{1448, 65160 - 1448, 24}));
}

TEST(TxPipeline, InFlightReportedByTheOwnerCounts) {
  TxPipeline p(params_mss(1448));
  Wire w;
  const std::vector<uint8_t> m = pattern_message(0, 100);
  ASSERT_TRUE(p.push(m, Priority::kData, at_us(1000)).notify);
  w.drain(p, at_us(1000));  // last pull at 1000 us
  p.set_in_flight(65161);   // TCP holds more than one batch unacknowledged
  const PushResult r = p.push(m, Priority::kData, at_us(1005));
  EXPECT_FALSE(r.notify);
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.poll(at_us(1005)), at_us(1020));
  EXPECT_EQ(w.drain(p, at_us(1019)), 0u);
  EXPECT_EQ(w.drain(p, at_us(1020)), 104u);
  EXPECT_FALSE(p.batching());
  // Still more than a batch in TCP: the next message re-enters batching mode.
  EXPECT_FALSE(p.push(m, Priority::kData, at_us(1021)).notify);
  EXPECT_EQ(p.counters().batching_entries, 2u);
  EXPECT_EQ(p.poll(at_us(1021)), at_us(1040));
  p.set_in_flight(0);
  EXPECT_EQ(w.drain(p, at_us(1040)), 104u);
  EXPECT_TRUE(p.push(m, Priority::kData, at_us(1041)).notify);
}

TEST(TxPipeline, BackoffDeadlineCountsFromTheLastSuccessfulPull) {
  PipelineParams prm = params_mss(1448);
  prm.backoff = Duration::micros(50);
  TxPipeline p(prm);
  Wire w;
  p.set_in_flight(1 << 20);
  const std::vector<uint8_t> m = pattern_message(0, 1000);
  p.push(m, Priority::kData, at_us(0));  // enters batching mode, no pull yet
  EXPECT_EQ(p.poll(at_us(0)), at_us(50));
  // Pushes do not move the deadline.
  for (int t = 10; t < 50; t += 10) {
    EXPECT_FALSE(p.push(m, Priority::kData, at_us(t)).notify);
    EXPECT_EQ(p.poll(at_us(t)), at_us(50));
  }
  // A partial pull at the deadline (TCP took 1500 bytes) moves it to 100.
  EXPECT_EQ(w.drain(p, at_us(50), 1500), 1500u);
  EXPECT_EQ(p.last_pull(), at_us(50));
  EXPECT_EQ(p.poll(at_us(50)), at_us(100));
  EXPECT_EQ(w.drain(p, at_us(99)), 0u);
  // A pull that takes nothing is not a successful pull: the deadline stays.
  EXPECT_EQ(w.drain(p, at_us(100), 0), 0u);
  EXPECT_EQ(p.poll(at_us(100)), at_us(100));
  EXPECT_EQ(w.drain(p, at_us(117), 2000), 2000u);
  EXPECT_EQ(p.poll(at_us(117)), at_us(167));
  EXPECT_EQ(w.drain(p, at_us(167)), 5u * 1004 - 3500);
  EXPECT_FALSE(p.batching());
  EXPECT_EQ(p.counters().backoff_ns,
            uint64_t(Duration::micros(117).ns() + Duration::micros(50).ns()));
  EXPECT_EQ(w.messages().size(), 5u);
}

TEST(TxPipeline, BatchingDisabledSendsEveryMessageAtOnce) {
  PipelineParams prm = params_mss(1448);
  prm.batching = false;
  TxPipeline p(prm);
  p.set_in_flight(1 << 20);
  const std::vector<uint8_t> m = pattern_message(0, 1000);
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(p.push(m, Priority::kData, at_us(i)).notify);
  EXPECT_FALSE(p.batching());
  EXPECT_EQ(p.counters().batching_entries, 0u);
}

// --- Lazy allocation ------------------------------------------------------------------------

TEST(TxPipeline, SmallBatchesWhileTrafficIsSmallFullOtherwise) {
  TxPipeline p(params_mss(1448));
  Wire w;
  const std::vector<uint8_t> small = pattern_message(0, 100);
  const std::vector<uint8_t> big = pattern_message(0, 10000);
  const auto& c = p.counters();
  EXPECT_EQ(c.batches_live, 0u);  // nothing allocated up front

  p.push(small, Priority::kData, at_us(0));
  EXPECT_EQ(c.small_allocated, 1u);
  EXPECT_EQ(c.full_allocated, 0u);
  w.drain(p, at_us(0));

  // A message that outgrows the small batch: the batch is promoted in place to a full-size
  // buffer (no spare to lend one, so a buffer is allocated and the small one freed).
  p.push(big, Priority::kData, at_us(1));
  EXPECT_EQ(c.promotions, 1u);
  EXPECT_EQ(c.full_allocated, 0u);
  EXPECT_EQ(c.batches_live, 1u);
  EXPECT_EQ(c.batches_in_use, 1u);
  w.drain(p, at_us(1));

  // Recent batches were big: the full batch is reused for the next message...
  p.push(small, Priority::kData, at_us(2));
  w.drain(p, at_us(2));
  EXPECT_EQ(c.batches_allocated, 1u);
  // ...and after two small drains in a row it becomes the spare...
  p.push(small, Priority::kData, at_us(3));
  w.drain(p, at_us(3));
  EXPECT_EQ(c.batches_in_use, 0u);
  EXPECT_EQ(c.batches_live, 1u);
  // ...and small traffic gets a small batch again.
  p.push(small, Priority::kData, at_us(4));
  EXPECT_EQ(c.small_allocated, 2u);
  EXPECT_EQ(c.batches_live, 2u);  // the small one in use, the full spare
  w.drain(p, at_us(4));
  p.push(small, Priority::kData, at_us(5));
  w.drain(p, at_us(5));
  EXPECT_EQ(c.batches_allocated, 2u);  // rewound, not reallocated
  // Big again: the full spare lends its buffer to the promotion; nothing is allocated.
  p.push(big, Priority::kData, at_us(6));
  EXPECT_EQ(c.promotions, 2u);
  EXPECT_EQ(c.batches_allocated, 2u);
  EXPECT_EQ(c.batches_live, 2u);
  w.drain(p, at_us(6));
  const auto msgs = w.messages();
  ASSERT_EQ(msgs.size(), 7u);
  EXPECT_EQ(msgs[1], big);
  EXPECT_EQ(msgs[6], big);
  EXPECT_EQ(c.batches_freed, 0u);
}

TEST(TxPipeline, FullBatchesDirectlyForLargeMessagesAfterLargeTraffic) {
  TxPipeline p(params_mss(1448));
  Wire w;
  const std::vector<uint8_t> big = pattern_message(0, 200000);
  const auto& c = p.counters();
  p.push(big, Priority::kData, at_us(0));
  // 200004 bytes: three full batches and the last 4524 bytes, too many for a small one.
  EXPECT_EQ(c.full_allocated, 4u);
  EXPECT_EQ(c.small_allocated, 0u);
  w.drain(p, at_us(100));
  // One drained batch stays as the spare; the open last one is rewound for reuse.
  EXPECT_EQ(c.batches_live, 2u);
  EXPECT_EQ(c.batches_freed, 2u);
  p.push(big, Priority::kData, at_us(200));
  EXPECT_EQ(c.full_allocated, 6u);  // open batch + spare reused, two more allocated
  EXPECT_EQ(c.spare_reuses, 1u);
  w.drain(p, at_us(300));
  EXPECT_EQ(w.messages().size(), 2u);
}

// --- Express and priorities -------------------------------------------------------------------

TEST(TxPipeline, ExpressBypassesBatching) {
  TxPipeline p(params_mss(1448));
  Wire w;
  p.set_in_flight(1 << 20);
  const std::vector<uint8_t> d = pattern_message(1, 300);
  const std::vector<uint8_t> e = pattern_message(2, 50);
  EXPECT_FALSE(p.push(d, Priority::kData, at_us(0)).notify);
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.poll(at_us(5)), at_us(20));
  // Express in the data priority: releases it and everything before it, at once.
  const PushResult r = p.push(e, Priority::kData, at_us(5), /*express=*/true);
  EXPECT_TRUE(r.notify);
  EXPECT_EQ(p.poll(at_us(5)), at_us(5));
  // The express message is still waiting, so this plain one also finds the TX step due.
  EXPECT_TRUE(p.push(d, Priority::kData, at_us(6)).notify);
  EXPECT_EQ(w.drain(p, at_us(6)), 304u + 54u);  // up to the express message, not beyond
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.poll(at_us(6)), at_us(26));
  EXPECT_FALSE(p.push(d, Priority::kData, at_us(7)).notify);  // batching again
  EXPECT_EQ(w.drain(p, at_us(25)), 0u);
  EXPECT_EQ(w.drain(p, at_us(26)), 2u * 304);
  EXPECT_FALSE(p.batching());
  EXPECT_EQ(p.counters().express, 1u);
  const auto msgs = w.messages();
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[1], e);
}

TEST(TxPipeline, ControlIsServedBeforeData) {
  TxPipeline p(params_mss(1448));
  Wire w;
  const std::vector<uint8_t> d1 = pattern_message(1, 500);
  const std::vector<uint8_t> d2 = pattern_message(2, 600);
  const std::vector<uint8_t> c1 = pattern_message(3, 70);
  const std::vector<uint8_t> c2 = pattern_message(4, 80);
  p.push(d1, Priority::kData, at_us(0));
  p.push(d2, Priority::kData, at_us(0));
  p.push(c1, Priority::kControl, at_us(0));
  p.push(c2, Priority::kControl, at_us(0));
  w.drain(p, at_us(0));
  const auto msgs = w.messages();
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[0], c1);
  EXPECT_EQ(msgs[1], c2);
  EXPECT_EQ(msgs[2], d1);
  EXPECT_EQ(msgs[3], d2);
}

TEST(TxPipeline, EmptyMessagesAreBareHeaders) {
  TxPipeline p(params_mss(1448));
  Wire w;
  const std::vector<uint8_t> d = pattern_message(1, 30);
  p.push({}, Priority::kData, at_us(0));
  p.push(d, Priority::kData, at_us(0));
  EXPECT_EQ(w.drain(p, at_us(0), 2), 2u);  // half of the empty message's header
  p.push({}, Priority::kControl, at_us(1));
  // The rest of that header, then the control message, then d.
  EXPECT_EQ(w.drain(p, at_us(1)), 2u + 4 + 34);
  EXPECT_EQ(w.pieces, (std::vector<size_t>{2, 2, 4, 34}));
  const auto msgs = w.messages();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_TRUE(msgs[0].empty());
  EXPECT_TRUE(msgs[1].empty());
  EXPECT_EQ(msgs[2], d);
}

// TCP is one byte stream: a control message waits for the end of the data message the TX
// step has started, and cuts in right there.
TEST(TxPipeline, PriorityChangesOnlyBetweenMessages) {
  PipelineParams prm = params_mss(1448);
  prm.batching = false;  // everything is available at once; only the order is tested
  TxPipeline p(prm);
  Wire w;
  const std::vector<uint8_t> d1 = pattern_message(1, 100000);
  const std::vector<uint8_t> d2 = pattern_message(2, 1000);
  const std::vector<uint8_t> c = pattern_message(3, 40);
  p.push(d1, Priority::kData, at_us(0));
  p.push(d2, Priority::kData, at_us(0));
  EXPECT_EQ(w.drain(p, at_us(0), 5000), 5000u);
  p.push(c, Priority::kControl, at_us(1));
  // The rest of d1 (to the end of its first batch, then up to its end), c, then d2.
  w.drain(p, at_us(1));
  const std::vector<size_t> pieces = {5000, 65160 - 5000, 100004 - 65160, 44, 1004};
  EXPECT_EQ(w.pieces, pieces);
  const auto msgs = w.messages();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(msgs[0], d1);
  EXPECT_EQ(msgs[1], c);
  EXPECT_EQ(msgs[2], d2);
}

// In batching mode too: the held rest of a started data message is released so an express
// control message does not wait behind it.
TEST(TxPipeline, ExpressControlFinishesTheStartedDataMessageFirst) {
  TxPipeline p(params_mss(1448));
  Wire w;
  p.set_in_flight(1 << 20);
  const std::vector<uint8_t> d1 = pattern_message(1, 3000);
  const std::vector<uint8_t> d2 = pattern_message(2, 3000);
  const std::vector<uint8_t> c = pattern_message(3, 10);
  p.push(d1, Priority::kData, at_us(0));
  p.push(d2, Priority::kData, at_us(0));
  EXPECT_EQ(w.drain(p, at_us(20), 1000), 1000u);  // deadline; TCP took 1000 bytes
  EXPECT_TRUE(p.push(c, Priority::kControl, at_us(21), /*express=*/true).notify);
  w.drain(p, at_us(21));
  const std::vector<size_t> pieces = {1000, 2004, 14};
  EXPECT_EQ(w.pieces, pieces);
  EXPECT_EQ(p.poll(at_us(21)), at_us(41));  // d2 waits for the deadline
  w.drain(p, at_us(41));
  const auto msgs = w.messages();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(msgs[0], d1);
  EXPECT_EQ(msgs[1], c);
  EXPECT_EQ(msgs[2], d2);
}

// The other way round: a control message started and held does not block an express data
// message behind it for the rest of the backoff.
TEST(TxPipeline, ExpressDataFinishesTheStartedControlMessageFirst) {
  TxPipeline p(params_mss(1448));
  Wire w;
  p.set_in_flight(1 << 20);
  const std::vector<uint8_t> c1 = pattern_message(1, 3000);
  const std::vector<uint8_t> c2 = pattern_message(2, 500);
  const std::vector<uint8_t> d = pattern_message(3, 10);
  p.push(c1, Priority::kControl, at_us(0));
  p.push(c2, Priority::kControl, at_us(0));
  EXPECT_EQ(w.drain(p, at_us(20), 1000), 1000u);
  EXPECT_TRUE(p.push(d, Priority::kData, at_us(21), /*express=*/true).notify);
  w.drain(p, at_us(21));
  const std::vector<size_t> pieces = {1000, 2004, 14};
  EXPECT_EQ(w.pieces, pieces);
  EXPECT_EQ(p.poll(at_us(21)), at_us(41));  // c2 waits for the deadline
  w.drain(p, at_us(41));
  const auto msgs = w.messages();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(msgs[0], c1);
  EXPECT_EQ(msgs[1], d);
  EXPECT_EQ(msgs[2], c2);
}

// --- Messages larger than a batch
// -----------------------------------------------------------------

TEST(TxPipeline, OneMebibyteMessagesThrough64KiBatches) {
  PipelineParams prm;
  prm.initial_mss = 1024;
  prm.max_batch_bytes = 65536;
  prm.max_batches = 40;  // a 1 MiB message needs 17
  TxPipeline p(prm);
  ASSERT_EQ(p.batch_limit(), 65536u);
  FrameDecoder dec;  // streaming: checks every payload byte as it arrives
  uint64_t checked = 0;
  uint64_t complete = 0;
  constexpr uint64_t kMessages = 8;
  constexpr size_t kSize = 1 << 20;
  uint64_t lcg = 12345;
  size_t max_piece = 0;
  auto receive = [&](std::span<const uint8_t> s) {
    // TCP takes a varying amount each time.
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    const size_t n = std::min<size_t>(s.size(), 1 + (lcg >> 33) % 90000);
    max_piece = std::max(max_piece, n);
    dec.feed(s.first(n), [&](const FrameEvent& ev) {
      if (ev.kind == FrameEventKind::kPayload) {
        EXPECT_EQ(check_pattern(ev.message, ev.offset, ev.data), ev.data.size());
        checked += ev.data.size();
      } else if (ev.kind == FrameEventKind::kMessageComplete) {
        EXPECT_EQ(ev.length, kSize);
        ++complete;
      } else {
        ADD_FAILURE() << "decoder error";
      }
    });
    return n;
  };
  std::vector<uint8_t> m(kSize);
  Instant now = at_us(0);
  uint64_t refused = 0;
  for (uint64_t seq = 0; seq < kMessages;) {
    fill_pattern(seq, 0, m);
    const PushStatus st = p.push(m, Priority::kData, now).status;
    ASSERT_NE(st, PushStatus::kTooLarge);
    if (st == PushStatus::kOk) {
      ++seq;
    } else {
      ++refused;  // backpressure: the producer waits for the TX step
    }
    now += Duration::micros(10);
    p.drain(now, receive);
  }
  while (p.queued_bytes() > 0) {
    now += Duration::micros(10);
    p.drain(now, receive);
  }
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(complete, kMessages);
  EXPECT_EQ(checked, kMessages * kSize);
  EXPECT_FALSE(dec.in_message());
  EXPECT_LE(max_piece, 65536u);
  EXPECT_LE(p.counters().batches_peak, 40u);
}

TEST(TxPipeline, RandomMixEveryByteChecked) {
  PipelineParams prm = params_mss(1448);
  prm.max_batches = 40;
  TxPipeline p(prm);
  uint64_t lcg = 99;
  auto rnd = [&](uint64_t n) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (lcg >> 33) % n;
  };
  struct Sent {
    uint64_t seq;
    size_t len;
    Priority prio;
  };
  std::map<uint64_t, Sent> by_key;  // pattern key (the first 8 bytes) -> message
  FrameDecoder dec({.framing = Framing::kLength32, .max_message_bytes = 1 << 20, .collect = true});
  uint64_t received = 0;
  uint64_t last_seq[kPriorityCount] = {0, 0};
  bool seen[kPriorityCount] = {false, false};
  auto sink = [&](std::span<const uint8_t> s) {
    const size_t n = rnd(4) == 0 ? 0 : std::min<size_t>(s.size(), 1 + rnd(70000));
    dec.feed(s.first(n), [&](const FrameEvent& ev) {
      ASSERT_EQ(ev.kind, FrameEventKind::kMessageComplete);
      ASSERT_GE(ev.data.size(), 8u);
      uint64_t key = 0;
      for (int i = 7; i >= 0; --i) key = key << 8 | ev.data[i];
      const auto it = by_key.find(key);
      ASSERT_NE(it, by_key.end());
      const Sent& sent = it->second;
      EXPECT_EQ(ev.data.size(), sent.len);
      EXPECT_EQ(check_pattern(sent.seq, 0, ev.data), ev.data.size());
      const size_t pi = static_cast<size_t>(sent.prio);
      if (seen[pi]) {
        EXPECT_GT(sent.seq, last_seq[pi]);  // order kept within a priority
      }
      seen[pi] = true;
      last_seq[pi] = sent.seq;
      ++received;
    });
    return n;
  };
  std::vector<uint8_t> m;
  uint64_t seq = 0;
  uint64_t refused = 0;
  Instant now = at_us(0);
  for (int step = 0; step < 3000; ++step) {
    now += Duration::micros(1 + rnd(15));
    if (rnd(3)) {
      const size_t len = rnd(10) == 0 ? 8 + rnd(300000) : 8 + rnd(3000);
      const Priority prio = rnd(5) == 0 ? Priority::kControl : Priority::kData;
      m.resize(len);
      fill_pattern(seq, 0, m);
      const PushResult r = p.push(m, prio, now, rnd(20) == 0);
      if (r.status == PushStatus::kOk) {
        by_key[pattern_key(seq)] = {seq, len, prio};
        ++seq;
      } else {
        ++refused;
      }
    }
    if (rnd(2) && p.poll(now) <= now) p.drain(now, sink);
    if (step % 500 == 0) p.set_mss(rnd(2) ? 1448 : 8948);
    ASSERT_LE(p.counters().batches_live, 40u);
  }
  while (p.queued_bytes() > 0) {
    now += Duration::micros(20);
    p.drain(now, sink);
  }
  EXPECT_EQ(received, seq);
  EXPECT_FALSE(dec.in_message());
  EXPECT_EQ(p.counters().messages, seq);
  EXPECT_EQ(p.counters().refused, refused);
  EXPECT_GT(p.counters().batching_entries, 0u);
}

// --- Bounded memory
// -------------------------------------------------------------------------------

TEST(TxPipeline, BoundedWhenTheConsumerStopsPulling) {
  PipelineParams prm = params_mss(1448);
  prm.max_batches = 8;
  TxPipeline p(prm);
  const std::vector<uint8_t> m = pattern_message(0, 996);
  uint64_t accepted = 0;
  PushStatus st = PushStatus::kOk;
  for (int i = 0; i < 10000 && st == PushStatus::kOk; ++i) {
    st = p.push(m, Priority::kData, at_us(i)).status;
    if (st == PushStatus::kOk) ++accepted;
    ASSERT_LE(p.counters().batches_live, 8u);
  }
  EXPECT_EQ(st, PushStatus::kBackpressure);
  // Eight full batches hold 521280 bytes: 521 whole 1000-byte frames.
  EXPECT_EQ(accepted, 521u);
  EXPECT_EQ(p.counters().batches_in_use, 8u);
  EXPECT_EQ(p.counters().refused, 1u);
  EXPECT_EQ(p.queued_bytes(), accepted * 1000);
  // Refused stays refused, and nothing of a refused message is queued.
  EXPECT_EQ(p.push(m, Priority::kControl, at_us(20000)).status, PushStatus::kBackpressure);
  EXPECT_EQ(p.queued_bytes(), accepted * 1000);
  // More than max_batches batches even when empty: never accepted.
  const std::vector<uint8_t> huge(8 * 65160);
  EXPECT_EQ(p.push(huge, Priority::kData, at_us(20000)).status, PushStatus::kTooLarge);
  // The consumer resumes: pushes are accepted again.
  Wire w;
  w.drain(p, at_us(30000), 200000);
  EXPECT_EQ(p.push(m, Priority::kData, at_us(30001)).status, PushStatus::kOk);
  w.drain(p, at_us(40000));
  EXPECT_EQ(w.messages().size(), accepted + 1);
  EXPECT_LE(p.counters().batches_peak, 8u);
}

}  // namespace
}  // namespace ws::pipeline
