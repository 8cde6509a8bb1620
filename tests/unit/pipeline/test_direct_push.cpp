// TxPipeline::push_bulk_direct (docs/pipeline.md, "Writing into the send ring") and
// push_frames, on a virtual clock against a model of TCP's send ring: reserve() lends up to
// `room` bytes as two runs (split where the ring wraps), commit() queues them. What reaches
// the ring, plus what the TX step pulls later, must be the stream one push per message
// would make; a chunk must be what the TX step could have taken at once (everything outside
// batching mode, whole batches in it); the cut frame's rest must come next; nothing may be
// lost when TCP refuses a chunk.
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

// The send ring: `room` bytes free, lent as two runs with the wrap `wrap_at` bytes in.
struct Ring {
  size_t room = SIZE_MAX;
  size_t wrap_at = SIZE_MAX;
  bool refuse = false;          // commit() takes nothing (a connection closing under the caller)
  std::vector<uint8_t> stream;  // everything committed, in order
  std::vector<size_t> commits;  // sizes of the commits
  std::vector<uint8_t> a, b;    // the two runs of the last reserve (buffers reused)
  size_t a_len = 0, b_len = 0;
  struct Space {
    std::span<uint8_t> first, second;
  };
  Space reserve(size_t max) {
    const size_t n = std::min(max, room);
    a_len = std::min(n, wrap_at);
    b_len = n - a_len;
    if (a.size() < a_len) a.resize(a_len);
    if (b.size() < b_len) b.resize(b_len);
    return {{a.data(), a_len}, {b.data(), b_len}};
  }
  size_t commit(size_t n) {
    if (refuse) return 0;
    EXPECT_LE(n, a_len + b_len);
    const size_t first = std::min(n, a_len);
    stream.insert(stream.end(), a.begin(), a.begin() + static_cast<ptrdiff_t>(first));
    stream.insert(stream.end(), b.begin(), b.begin() + static_cast<ptrdiff_t>(n - first));
    commits.push_back(n);
    if (room != SIZE_MAX) room -= n;
    return n;
  }
  // The TX step's pulls into the same ring (Connection::send).
  size_t drain(TxPipeline& p, Instant now) {
    return p.drain(now, [&](std::span<const uint8_t> s) {
      stream.insert(stream.end(), s.begin(), s.end());
      return s.size();
    });
  }
};

DirectResult direct(TxPipeline& p, Ring& r, uint64_t count, uint32_t size, uint64_t seq,
                    Instant now) {
  return p.push_bulk_direct(
      count, size, Priority::kData, now,
      [seq](uint64_t i, uint64_t off, std::span<uint8_t> out) { fill_pattern(seq + i, off, out); },
      [&r](size_t max) { return r.reserve(max); }, [&r](size_t n) { return r.commit(n); });
}

DirectResult direct_keep(TxPipeline& p, Ring& r, uint64_t count, uint32_t size, uint64_t seq,
                         Instant now) {
  return p.push_bulk_direct(
      count, size, Priority::kData, now,
      [seq](uint64_t i, uint64_t off, std::span<uint8_t> out) { fill_pattern(seq + i, off, out); },
      [&r](size_t max) { return r.reserve(max); }, [&r](size_t n) { return r.commit(n); },
      CutRest::kKeep);
}

// write_kept for message `msg`'s frame bytes [from, from + left).
uint64_t kept(TxPipeline& p, Ring& r, uint32_t size, uint64_t msg, uint64_t from, uint64_t left) {
  return p.write_kept(
      size, from, left,
      [msg](uint64_t off, std::span<uint8_t> out) { fill_pattern(msg, off, out); },
      [&r](size_t max) { return r.reserve(max); }, [&r](size_t n) { return r.commit(n); });
}

BulkPushResult bulk(TxPipeline& p, uint64_t count, uint32_t size, uint64_t seq, Instant now) {
  return p.push_bulk(
      count, size, Priority::kData, now,
      [seq](uint64_t i, uint64_t off, std::span<uint8_t> out) { fill_pattern(seq + i, off, out); });
}

// The stream of `count` pattern messages of `size` bytes from `seq`, framed.
std::vector<uint8_t> expected_stream(uint64_t seq, uint64_t count, uint32_t size) {
  std::vector<uint8_t> out(count * (kFrameHeaderBytes + size));
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t* f = out.data() + i * (kFrameHeaderBytes + size);
    write_frame_header({f, kFrameHeaderBytes}, size);
    fill_pattern(seq + i, 0, {f + kFrameHeaderBytes, size});
  }
  return out;
}

PipelineParams params(bool batching = true) {
  PipelineParams p;
  p.initial_mss = 1448;  // batch limit 65160
  p.batching = batching;
  return p;
}

// The link keeps up: the messages go straight into the ring, no batch is ever allocated,
// and the counters say what push + pull would have said.
TEST(DirectPush, OutsideBatchingModeNoBatchAndNoCopy) {
  TxPipeline p(params());
  Ring r;
  const DirectResult d = direct(p, r, 100, 8, 0, at_us(0));
  EXPECT_EQ(d.accepted, 100u);
  EXPECT_EQ(d.committed, 1200u);
  EXPECT_FALSE(d.room_short);
  EXPECT_EQ(r.stream, expected_stream(0, 100, 8));
  EXPECT_EQ(r.commits, (std::vector<size_t>{1200}));
  EXPECT_EQ(p.queued_bytes(), 0u);
  EXPECT_EQ(p.counters().batches_allocated, 0u);
  EXPECT_EQ(p.counters().messages, 100u);
  EXPECT_EQ(p.counters().bytes, 800u);
  EXPECT_EQ(p.counters().pulls, 1u);
  EXPECT_EQ(p.counters().pulled_bytes, 1200u);
  EXPECT_EQ(p.last_pull(), at_us(0));
  EXPECT_EQ(p.poll(at_us(0)), Instant::never());
}

// With batching on, the messages that find more than a batch in flight enter batching
// mode (push()'s rule): the first chunk stops there, and the rest goes in whole batches.
TEST(DirectPush, WholeBatchesInBatchingMode) {
  TxPipeline p(params());
  Ring r;
  r.wrap_at = 70001;          // the ring wraps inside the second chunk, in the middle of a frame
  const uint32_t size = 996;  // 1000-byte frames: batches cut frames
  const uint64_t n = 300;
  const DirectResult d = direct(p, r, n, size, 0, at_us(5));
  // First chunk: while in flight (what the chunk puts in TCP counts) is at most a batch,
  // 66 frames; the 67th arrives with 66000 in flight and enters batching mode. Then whole
  // batches of 65160 bytes, as many as the room takes (all three in one commit), the frame
  // cut at the end leaving its rest queued; 38520 bytes, less than a batch, are left over.
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.counters().batching_entries, 1u);
  EXPECT_EQ(r.commits, (std::vector<size_t>{66000, 3 * 65160}));
  // The direct path stops where a batch cannot be filled; the owner push_bulk()s the rest.
  const uint64_t in_ring = 66000 + 3 * 65160;
  EXPECT_EQ(d.accepted, in_ring / 1000 + 1);
  EXPECT_FALSE(d.room_short);
  const BulkPushResult b = bulk(p, n - d.accepted, size, d.accepted, at_us(5));
  EXPECT_EQ(b.accepted, n - d.accepted);
  // Held to the deadline (counted from the last chunk), then the TX step takes the rest.
  EXPECT_EQ(p.poll(at_us(5)), at_us(25));
  EXPECT_EQ(r.drain(p, at_us(24)), 0u);
  EXPECT_EQ(r.drain(p, at_us(25)), n * 1000 - in_ring);
  EXPECT_EQ(r.stream, expected_stream(0, n, size));
  EXPECT_EQ(p.counters().messages, n);
  EXPECT_EQ(p.counters().pulled_bytes, n * 1000);
  EXPECT_FALSE(p.batching());
}

// In batching mode the open batch is completed in the ring: its queued bytes first, then new
// frames up to the batch limit. A frame cut there leaves its rest as the first bytes of the
// next pull.
TEST(DirectPush, CompletesTheOpenBatchInTheRing) {
  TxPipeline p(params());
  Ring r;
  p.set_in_flight(1 << 20);
  // 50 messages of 100 bytes queued in batching mode, held to the deadline.
  EXPECT_EQ(bulk(p, 50, 100, 0, at_us(0)).accepted, 50u);
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.poll(at_us(1)), at_us(20));
  // Too few new messages to fill the batch: nothing goes direct.
  DirectResult d = direct(p, r, 10, 100, 50, at_us(1));
  EXPECT_EQ(d.accepted, 0u);
  EXPECT_TRUE(r.commits.empty());
  // Enough: the 5200 queued bytes plus 59960 new ones (576 whole frames and 56 bytes of the
  // 577th) make one batch.
  d = direct(p, r, 1000, 100, 50, at_us(2));
  ASSERT_EQ(r.commits, (std::vector<size_t>{65160}));
  EXPECT_EQ(d.accepted, 577u);
  EXPECT_EQ(p.queued_bytes(), 104u - 56u);
  EXPECT_EQ(p.last_pull(), at_us(2));
  EXPECT_EQ(p.poll(at_us(2)), at_us(22));  // the rest is in the open batch, held
  EXPECT_EQ(r.drain(p, at_us(22)), 48u);
  EXPECT_EQ(r.stream, expected_stream(0, 627, 100));
  EXPECT_EQ(p.counters().messages, 627u);
  EXPECT_EQ(p.counters().pulls, 2u);
}

// Messages larger than a batch: each chunk is whole batches; the cut message's rest spans
// batches here, and the TX step takes its full ones at once.
TEST(DirectPush, MessagesLargerThanABatch) {
  TxPipeline p(params());
  Ring r;
  r.room = 300000;
  r.wrap_at = 12345;
  p.set_in_flight(1 << 20);
  const uint32_t size = 1 << 20;
  const DirectResult d = direct(p, r, 3, size, 7, at_us(0));
  // 300000 bytes of room: 4 batches (260640 bytes) of the first message. Its rest is 12
  // full batches and an open one, and those must go first: the direct path stops there.
  EXPECT_EQ(r.commits, (std::vector<size_t>{4 * 65160}));
  EXPECT_EQ(d.accepted, 1u);
  EXPECT_FALSE(d.room_short);
  const uint64_t rest = kFrameHeaderBytes + size - 4 * 65160;
  EXPECT_EQ(p.queued_bytes(), rest);
  // The full batches are due at once, the open one at the deadline.
  EXPECT_EQ(p.poll(at_us(1)), at_us(1));
  EXPECT_EQ(r.drain(p, at_us(1)), rest / 65160 * 65160);
  EXPECT_EQ(r.drain(p, at_us(21)), rest % 65160);
  EXPECT_EQ(r.stream, expected_stream(7, 1, size));
  EXPECT_EQ(p.counters().messages, 1u);
}

// Too little room for a batch in batching mode: nothing is written, and the caller learns
// that it stopped for room (TCP arms on_writable).
TEST(DirectPush, RoomShortOfABatch) {
  TxPipeline p(params());
  Ring r;
  r.room = 65159;
  p.set_in_flight(1 << 20);
  const DirectResult d = direct(p, r, 100000, 8, 0, at_us(0));
  EXPECT_EQ(d.accepted, 0u);
  EXPECT_TRUE(d.room_short);
  EXPECT_TRUE(r.commits.empty());
  EXPECT_EQ(p.counters().messages, 0u);
}

// TCP refuses the chunk after the reserve: nothing is queued, the open batch keeps its
// bytes, and the messages can be pushed again.
TEST(DirectPush, RefusedCommitChangesNothing) {
  TxPipeline p(params());
  Ring r;
  p.set_in_flight(1 << 20);
  EXPECT_EQ(bulk(p, 30, 100, 0, at_us(0)).accepted, 30u);
  const PipelineCounters before = p.counters();
  r.refuse = true;
  const DirectResult d = direct(p, r, 1000, 100, 30, at_us(1));
  EXPECT_EQ(d.accepted, 0u);
  EXPECT_EQ(p.queued_bytes(), 30u * 104);
  EXPECT_EQ(p.counters().messages, before.messages);
  EXPECT_EQ(p.counters().pulls, before.pulls);
  EXPECT_EQ(p.counters().batches_in_use, before.batches_in_use);
  r.refuse = false;
  // Now it goes: the open batch (30 messages) completed to 65160 bytes with 597 more.
  EXPECT_EQ(direct(p, r, 1000, 100, 30, at_us(2)).accepted, 597u);
  r.drain(p, at_us(22));
  EXPECT_EQ(r.stream, expected_stream(0, 627, 100));
}

// Another priority holding bytes, or a full batch not pulled yet, must go first: no direct.
TEST(DirectPush, NotWhileSomethingMustGoFirst) {
  TxPipeline p(params(false));
  Ring r;
  const std::vector<uint8_t> c(10, 1);
  p.push(c, Priority::kControl, at_us(0));
  EXPECT_EQ(direct(p, r, 5, 8, 0, at_us(0)).accepted, 0u);
  r.drain(p, at_us(0));
  EXPECT_EQ(direct(p, r, 5, 8, 0, at_us(0)).accepted, 5u);
}

bool one(TxPipeline& p, Ring& r, uint32_t size, uint64_t seq, Instant now) {
  return p.push_one_direct(
      size, Priority::kData, now,
      [seq](uint64_t i, uint64_t off, std::span<uint8_t> out) { fill_pattern(seq + i, off, out); },
      [&r](size_t max) { return r.reserve(max); }, [&r](size_t n) { return r.commit(n); });
}

// push_one_direct puts the same bytes into the ring, at any wrap point, and leaves the same
// counters and state as a chunk of one message (push_bulk_direct).
TEST(DirectPush, OneMessageSameAsAChunkOfOne) {
  for (size_t wrap : {size_t{0}, size_t{1}, size_t{4}, size_t{5}, size_t{67}, SIZE_MAX}) {
    TxPipeline a(params());
    TxPipeline b(params());
    Ring ra, rb;
    ra.wrap_at = rb.wrap_at = wrap;
    for (uint64_t seq = 0; seq < 3; ++seq) {
      ASSERT_TRUE(one(a, ra, 64, seq, at_us(static_cast<int64_t>(seq))));
      ASSERT_EQ(direct(b, rb, 1, 64, seq, at_us(static_cast<int64_t>(seq))).accepted, 1u);
    }
    EXPECT_EQ(ra.stream, expected_stream(0, 3, 64)) << wrap;
    EXPECT_EQ(ra.stream, rb.stream) << wrap;
    EXPECT_EQ(ra.commits, rb.commits) << wrap;
    EXPECT_EQ(a.counters().messages, b.counters().messages);
    EXPECT_EQ(a.counters().bytes, b.counters().bytes);
    EXPECT_EQ(a.counters().pulls, b.counters().pulls);
    EXPECT_EQ(a.counters().pulled_bytes, b.counters().pulled_bytes);
    EXPECT_EQ(a.counters().batches_allocated, 0u);
    EXPECT_EQ(a.last_pull(), b.last_pull());
    EXPECT_EQ(a.in_flight(), b.in_flight());
    EXPECT_EQ(a.poll(at_us(3)), Instant::never());
  }
}

// Where a chunk would not be one whole message, push_one_direct does nothing and counts
// nothing: the room is short, another priority holds bytes, the pipeline is in batching
// mode (more than a batch in flight), or TCP refuses the bytes. The general path then
// decides, as before.
TEST(DirectPush, OneMessageDeclinesWhatTheChunkPathDecides) {
  TxPipeline p(params());
  Ring r;
  r.room = 67;
  EXPECT_FALSE(one(p, r, 64, 0, at_us(0)));
  r.room = SIZE_MAX;
  r.refuse = true;
  EXPECT_FALSE(one(p, r, 64, 0, at_us(0)));
  r.refuse = false;
  const std::vector<uint8_t> c(10, 1);
  p.push(c, Priority::kControl, at_us(0));
  EXPECT_FALSE(one(p, r, 64, 0, at_us(0)));
  EXPECT_EQ(p.counters().messages, 1u);  // the control message only
  EXPECT_EQ(p.counters().pulls, 0u);
  EXPECT_TRUE(r.commits.empty());
  r.drain(p, at_us(0));
  p.set_in_flight(1 << 20);
  EXPECT_FALSE(one(p, r, 64, 0, at_us(1)));
  EXPECT_TRUE(p.batching());
  p.set_in_flight(0);
  EXPECT_EQ(bulk(p, 1, 64, 0, at_us(1)).accepted, 1u);  // queued, held by batching mode
  EXPECT_FALSE(one(p, r, 64, 1, at_us(1)));
  EXPECT_EQ(p.counters().messages, 2u);
}

// push_frames: a run of already framed messages is the same as one push() per frame.
TEST(PushFrames, SameAsOnePushPerFrame) {
  std::vector<uint8_t> run;
  std::vector<std::vector<uint8_t>> payloads;
  for (uint32_t i = 0; i < 400; ++i) {
    std::vector<uint8_t> m((i * 7919u) % 3000u);
    fill_pattern(i, 0, m);
    const size_t at = run.size();
    run.resize(at + kFrameHeaderBytes + m.size());
    write_frame_header({run.data() + at, kFrameHeaderBytes}, static_cast<uint32_t>(m.size()));
    std::copy(m.begin(), m.end(), run.begin() + static_cast<ptrdiff_t>(at + kFrameHeaderBytes));
    payloads.push_back(std::move(m));
  }
  TxPipeline each(params());
  TxPipeline framed(params());
  each.set_in_flight(100000);
  framed.set_in_flight(100000);
  for (const auto& m : payloads)
    ASSERT_EQ(each.push(m, Priority::kData, at_us(3)).status, PushStatus::kOk);
  const BulkPushResult b = framed.push_frames(run, Priority::kData, at_us(3));
  EXPECT_EQ(b.accepted, payloads.size());
  EXPECT_EQ(b.stream_bytes, run.size());
  EXPECT_EQ(b.status, PushStatus::kOk);
  EXPECT_EQ(framed.queued_bytes(), each.queued_bytes());
  EXPECT_EQ(framed.batching(), each.batching());
  EXPECT_EQ(framed.counters().messages, each.counters().messages);
  EXPECT_EQ(framed.counters().bytes, each.counters().bytes);
  EXPECT_EQ(framed.counters().batches_allocated, each.counters().batches_allocated);
  Ring ra, rb;
  for (const int t : {3, 10, 23, 50}) {
    EXPECT_EQ(ra.drain(each, at_us(t)), rb.drain(framed, at_us(t))) << t;
  }
  EXPECT_EQ(ra.stream, run);
  EXPECT_EQ(rb.stream, run);
}

// push_frames_direct (the echo): while the link keeps up the whole frames go straight into
// the ring; the frame that finds more than a batch in flight enters batching mode and it and
// the rest are queued; the ring plus the later pulls carry the run byte for byte.
TEST(PushFrames, DirectWhileTheLinkKeepsUp) {
  std::vector<uint8_t> run;
  uint64_t payload = 0;
  for (uint32_t i = 0; i < 100; ++i) {
    const uint32_t len = 1000 + i * 13;
    const size_t at = run.size();
    run.resize(at + kFrameHeaderBytes + len);
    write_frame_header({run.data() + at, kFrameHeaderBytes}, len);
    fill_pattern(i, 0, {run.data() + at + kFrameHeaderBytes, len});
    payload += len;
  }
  TxPipeline p(params());
  Ring r;
  r.wrap_at = 4097;
  uint64_t committed = 0;
  const BulkPushResult b = p.push_frames_direct(
      run, Priority::kData, at_us(0), [&r](size_t max) { return r.reserve(max); },
      [&r](size_t n) { return r.commit(n); }, committed);
  EXPECT_EQ(b.accepted, 100u);
  EXPECT_EQ(b.stream_bytes, run.size());
  // Frames while the bytes before them are at most 65160: the first 50 (66125 bytes; the
  // 51st finds 66125 in flight and enters batching mode).
  const uint64_t first = 66125;
  EXPECT_EQ(committed, first);
  EXPECT_EQ(r.commits, (std::vector<size_t>{static_cast<size_t>(first)}));
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.queued_bytes(), run.size() - first);
  r.drain(p, at_us(0));   // the full batches
  r.drain(p, at_us(20));  // the open one, at the deadline
  EXPECT_EQ(r.stream, run);
  EXPECT_EQ(p.counters().messages, 100u);
  EXPECT_EQ(p.counters().bytes, payload);
  EXPECT_EQ(p.counters().pulled_bytes, run.size());
  // A second run, nothing queued and batching left: the link keeps up again, but TCP now
  // holds more than a batch (the owner says so), so it is queued, not written direct.
  p.set_in_flight(1 << 20);
  const BulkPushResult c = p.push_frames_direct(
      std::span<const uint8_t>(run).first(1004), Priority::kData, at_us(30),
      [&r](size_t max) { return r.reserve(max); }, [&r](size_t n) { return r.commit(n); },
      committed);
  EXPECT_EQ(c.accepted, 1u);
  EXPECT_EQ(committed, 0u);
  EXPECT_EQ(p.queued_bytes(), 1004u);
}

TEST(PushFrames, ARunEndingInsideAFrameIsRefusedThere) {
  TxPipeline p(params());
  std::vector<uint8_t> run(2 * (kFrameHeaderBytes + 10) + kFrameHeaderBytes);
  write_frame_header({run.data(), kFrameHeaderBytes}, 10);
  write_frame_header({run.data() + 14, kFrameHeaderBytes}, 10);
  write_frame_header({run.data() + 28, kFrameHeaderBytes}, 10);  // truncated below
  run.resize(28 + 3);
  const BulkPushResult b = p.push_frames(run, Priority::kData, at_us(0));
  EXPECT_EQ(b.accepted, 2u);
  EXPECT_EQ(b.stream_bytes, 28u);
  EXPECT_EQ(b.status, PushStatus::kTooLarge);
}

// A random schedule mixing the direct paths with every other way in: bulk and single pushes,
// control messages (some express), partial pulls at random instants, MSS changes, owner-
// reported in flight, rings with random room and wrap, and a bound of 24 batches so that
// refusals happen. Everything that reached the ring, in order, must decode into whole
// messages, each matching its pattern, in order within each priority, none lost.
TEST(DirectPush, RandomMixEveryMessageWholeAndInOrder) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto rnd = [&state](uint64_t n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state % n;
  };
  PipelineParams prm = params();
  prm.max_batches = 24;
  TxPipeline p(prm);
  Ring r;
  struct Sent {
    uint64_t seq;
    uint32_t len;
    Priority prio;
  };
  std::map<uint64_t, Sent> by_key;
  uint64_t dseq = 0;
  uint64_t cseq = uint64_t{1} << 40;
  const uint32_t sizes[] = {8, 64, 1000, 1444, 70000};
  const size_t rooms[] = {0, 100, 5000, 65160, 200000, SIZE_MAX};
  Instant now = at_us(0);
  auto note = [&](uint64_t seq, uint32_t len, Priority prio) {
    by_key[pattern_key(seq)] = {seq, len, prio};
  };
  for (int step = 0; step < 4000; ++step) {
    now += Duration::micros(static_cast<int64_t>(rnd(30)));
    r.room = rooms[rnd(6)];
    r.wrap_at = rnd(3) == 0 ? SIZE_MAX : rnd(70000);
    const uint64_t op = rnd(100);
    if (op < 5) {
      const uint32_t size = sizes[rnd(5)];
      if (one(p, r, size, dseq, now)) note(dseq++, size, Priority::kData);
    } else if (op < 30) {
      const uint32_t size = sizes[rnd(5)];
      const DirectResult d = direct(p, r, 1 + rnd(size >= 1000 ? 8 : 3000), size, dseq, now);
      for (uint64_t i = 0; i < d.accepted; ++i) note(dseq + i, size, Priority::kData);
      dseq += d.accepted;
    } else if (op < 45) {
      const uint32_t size = sizes[rnd(5)];
      const BulkPushResult b = bulk(p, 1 + rnd(size >= 1000 ? 8 : 200), size, dseq, now);
      for (uint64_t i = 0; i < b.accepted; ++i) note(dseq + i, size, Priority::kData);
      dseq += b.accepted;
    } else if (op < 55) {
      std::vector<uint8_t> m(8 + rnd(300));
      fill_pattern(cseq, 0, m);
      if (p.push(m, Priority::kControl, now, rnd(4) == 0).status == PushStatus::kOk) {
        note(cseq++, static_cast<uint32_t>(m.size()), Priority::kControl);
      }
    } else if (op < 65) {
      std::vector<uint8_t> run;
      std::vector<uint32_t> lens;
      for (uint64_t i = 0, n = 1 + rnd(40); i < n; ++i) {
        const uint32_t len = 8 + static_cast<uint32_t>(rnd(3000));
        const size_t at = run.size();
        run.resize(at + kFrameHeaderBytes + len);
        write_frame_header({run.data() + at, kFrameHeaderBytes}, len);
        fill_pattern(dseq + i, 0, {run.data() + at + kFrameHeaderBytes, len});
        lens.push_back(len);
      }
      uint64_t committed = 0;
      const BulkPushResult b = p.push_frames_direct(
          run, Priority::kData, now, [&r](size_t max) { return r.reserve(max); },
          [&r](size_t n) { return r.commit(n); }, committed);
      for (uint64_t i = 0; i < b.accepted; ++i) note(dseq + i, lens[i], Priority::kData);
      dseq += b.accepted;
    } else if (op < 90) {
      size_t budget = rnd(2) ? SIZE_MAX : rnd(100000);
      p.drain(now, [&](std::span<const uint8_t> s) {
        const size_t n = std::min(s.size(), budget);
        budget -= n;
        r.stream.insert(r.stream.end(), s.begin(), s.begin() + static_cast<ptrdiff_t>(n));
        return n;
      });
    } else if (op < 95) {
      const uint32_t mss[] = {536, 1200, 1448, 8948};
      p.set_mss(mss[rnd(4)]);
    } else {
      const uint64_t in[] = {0, 10000, 70000, 1 << 20};
      p.set_in_flight(in[rnd(4)]);
    }
    ASSERT_LE(p.counters().batches_live, prm.max_batches);
  }
  for (int i = 0; i < 100 && p.queued_bytes() != 0; ++i) {
    now += Duration::millis(1);
    r.drain(p, now);
  }
  ASSERT_EQ(p.queued_bytes(), 0u);
  FrameDecoder dec({.framing = Framing::kLength32, .max_message_bytes = 1 << 24, .collect = true});
  uint64_t got = 0;
  uint64_t bad = 0;
  int64_t last[kPriorityCount] = {-1, -1};
  dec.feed(r.stream, [&](const FrameEvent& ev) {
    if (ev.kind != FrameEventKind::kMessageComplete || ev.data.size() < 8) {
      ++bad;
      return;
    }
    uint64_t key = 0;
    for (int i = 7; i >= 0; --i) key = key << 8 | ev.data[static_cast<size_t>(i)];
    const auto it = by_key.find(key);
    if (it == by_key.end() || it->second.len != ev.data.size() ||
        check_pattern(it->second.seq, 0, ev.data) != ev.data.size()) {
      ++bad;
      return;
    }
    const size_t pr = static_cast<size_t>(it->second.prio);
    if (static_cast<int64_t>(it->second.seq) <= last[pr]) ++bad;
    last[pr] = static_cast<int64_t>(it->second.seq);
    ++got;
  });
  EXPECT_FALSE(dec.in_message());
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(got, by_key.size());
  EXPECT_EQ(p.counters().messages, by_key.size());
  EXPECT_EQ(p.counters().pulled_bytes, r.stream.size());
  EXPECT_GT(dseq, 10000u);  // the schedule did move data
}

// CutRest::kKeep: the frame cut where the room ends is not queued. The owner writes its
// rest in place as room appears, in pieces, and then the next messages; no batch is ever
// allocated and the stream is the one push per message would make.
TEST(DirectPushKeep, RestWrittenInPlaceAsRoomAppears) {
  TxPipeline p(params());
  Ring r;
  r.room = 5000;
  const uint32_t size = 2000;  // 2004-byte frames: two whole, then 992 bytes of the third
  const DirectResult d = direct_keep(p, r, 10, size, 0, at_us(0));
  EXPECT_EQ(d.accepted, 3u);
  EXPECT_EQ(d.committed, 5000u);
  EXPECT_EQ(d.kept, 2004u - 992u);
  EXPECT_EQ(p.queued_bytes(), 0u);
  EXPECT_EQ(p.poll(at_us(0)), Instant::never());
  EXPECT_EQ(p.counters().messages, 3u);
  EXPECT_EQ(p.counters().bytes, 6000u);
  EXPECT_EQ(kept(p, r, size, 2, 992, d.kept), 0u);  // no room: nothing written or counted
  EXPECT_EQ(p.counters().pulls, 1u);
  r.room = 600;
  EXPECT_EQ(kept(p, r, size, 2, 992, d.kept), 600u);
  r.room = 100000;
  EXPECT_EQ(kept(p, r, size, 2, 992 + 600, d.kept - 600), d.kept - 600);
  EXPECT_EQ(r.stream, expected_stream(0, 3, size));
  EXPECT_EQ(p.counters().pulled_bytes, 3u * 2004u);
  EXPECT_EQ(p.counters().pulls, 3u);
  const DirectResult e = direct_keep(p, r, 7, size, 3, at_us(1));
  EXPECT_EQ(e.accepted, 7u);
  EXPECT_EQ(e.kept, 0u);
  EXPECT_EQ(r.stream, expected_stream(0, 10, size));
  EXPECT_EQ(p.counters().batches_allocated, 0u);
  EXPECT_EQ(p.counters().messages, 10u);
}

// A cut inside the length header: the rest starts with the header's last bytes, and a
// rest that straddles the ring's wrap is written across it.
TEST(DirectPushKeep, CutInsideTheHeaderAndAcrossTheWrap) {
  TxPipeline p(params());
  Ring r;
  r.room = 2004 + 2;
  const uint32_t size = 2000;
  const DirectResult d = direct_keep(p, r, 2, size, 40, at_us(0));
  EXPECT_EQ(d.accepted, 2u);
  EXPECT_EQ(d.kept, 2004u - 2u);
  r.room = SIZE_MAX;
  r.wrap_at = 1;  // the header's two bytes fall on both sides of the wrap
  EXPECT_EQ(kept(p, r, size, 41, 2, d.kept), d.kept);
  EXPECT_EQ(r.stream, expected_stream(40, 2, size));
}

// Batching mode with messages larger than a batch: the chunk is whole batches, the message
// cut at the last batch boundary keeps its rest (not twelve queued batches and an open one
// held to the deadline), and in flight counts it.
TEST(DirectPushKeep, MessagesLargerThanABatch) {
  TxPipeline p(params());
  Ring r;
  r.room = 300000;
  r.wrap_at = 12345;
  p.set_in_flight(1 << 20);
  const uint32_t size = 1 << 20;
  const DirectResult d = direct_keep(p, r, 3, size, 7, at_us(0));
  EXPECT_EQ(r.commits, (std::vector<size_t>{4 * 65160}));
  EXPECT_EQ(d.accepted, 1u);
  const uint64_t rest = kFrameHeaderBytes + size - 4 * 65160;
  EXPECT_EQ(d.kept, rest);
  EXPECT_EQ(p.queued_bytes(), 0u);
  EXPECT_EQ(p.in_flight(), (1u << 20) + 4u * 65160u + rest);
  EXPECT_EQ(kept(p, r, size, 7, 4 * 65160, rest), 300000u - 4 * 65160);
  r.room = SIZE_MAX;
  const uint64_t done = 300000 - 4 * 65160;
  EXPECT_EQ(kept(p, r, size, 7, 4 * 65160 + done, rest - done), rest - done);
  EXPECT_EQ(r.stream, expected_stream(7, 1, size));
  EXPECT_EQ(p.counters().batches_allocated, 0u);
}

// TCP refusing the rest (the connection closing) writes and counts nothing.
TEST(DirectPushKeep, RefusedRestCountsNothing) {
  TxPipeline p(params());
  Ring r;
  r.room = 3000;
  const DirectResult d = direct_keep(p, r, 2, 2000, 0, at_us(0));
  ASSERT_EQ(d.kept, 2004u - 996u);
  r.room = SIZE_MAX;
  r.refuse = true;
  EXPECT_EQ(kept(p, r, 2000, 1, 996, d.kept), 0u);
  EXPECT_EQ(p.counters().pulls, 1u);
  EXPECT_EQ(p.counters().pulled_bytes, 3000u);
}

}  // namespace
}  // namespace ws::pipeline
