#include "stack/tcp/seq_ranges.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "stack/tcp/ring_buffer.hpp"

namespace ws::tcp {
namespace {

TEST(SeqRanges, MergesAndTrims) {
  SeqRanges<4> r;
  EXPECT_TRUE(r.insert(SeqNum(100), SeqNum(200)));
  EXPECT_TRUE(r.insert(SeqNum(300), SeqNum(400)));
  EXPECT_TRUE(r.insert(SeqNum(200), SeqNum(300)));  // bridges both
  ASSERT_EQ(r.count(), 1u);
  EXPECT_EQ(r[0].left, SeqNum(100));
  EXPECT_EQ(r[0].right, SeqNum(400));
  r.trim_below(SeqNum(150));
  EXPECT_EQ(r[0].left, SeqNum(150));
  EXPECT_EQ(r.total(), 250u);
  EXPECT_TRUE(r.covers(SeqNum(200), SeqNum(300)));
  EXPECT_FALSE(r.covers(SeqNum(100), SeqNum(300)));
}

TEST(SeqRanges, WrapsAroundZero) {
  SeqRanges<4> r;
  r.insert(SeqNum(0xfffffff0u), SeqNum(0x10));
  r.insert(SeqNum(0x10), SeqNum(0x20));
  ASSERT_EQ(r.count(), 1u);
  EXPECT_EQ(r[0].len(), 0x30u);
}

TEST(SeqRanges, FullSetRefusesOrDropsHighest) {
  SeqRanges<2> r;
  r.insert(SeqNum(10), SeqNum(20));
  r.insert(SeqNum(30), SeqNum(40));
  EXPECT_FALSE(r.insert(SeqNum(50), SeqNum(60)));
  EXPECT_TRUE(r.insert(SeqNum(0), SeqNum(5), true));
  ASSERT_EQ(r.count(), 2u);
  EXPECT_EQ(r[1].right, SeqNum(20));
}

// The out-of-order map: nothing allocated until the first range, then kFirst ranges,
// doubled as ranges need room, never beyond the bound an insert gives, and the heap
// bytes kept in the owner's tally as it grows.
TEST(GrowingSeqRanges, GrowsToTheBoundAndFindsByBinarySearch) {
  uint64_t tally = 0;
  GrowingSeqRanges r;
  r.set_tally(&tally);
  EXPECT_EQ(r.heap_bytes(), 0u);
  const size_t first = GrowingSeqRanges::kFirst;
  for (uint32_t i = 0; i < first; ++i)
    ASSERT_TRUE(r.insert(SeqNum(10 * i), SeqNum(10 * i + 5), 300));
  EXPECT_EQ(r.capacity(), first);
  EXPECT_EQ(tally, first * sizeof(SeqRange));
  for (uint32_t i = first; i < 300; ++i)
    ASSERT_TRUE(r.insert(SeqNum(10 * i), SeqNum(10 * i + 5), 300)) << i;
  EXPECT_EQ(r.capacity(), 300u);  // 128, 256, then the bound
  EXPECT_EQ(tally, 300 * sizeof(SeqRange));
  EXPECT_FALSE(r.insert(SeqNum(10 * 300), SeqNum(10 * 300 + 5), 300));     // a 301st range
  EXPECT_TRUE(r.insert(SeqNum(10 * 299 + 5), SeqNum(10 * 299 + 7), 300));  // extends one
  EXPECT_EQ(r.count(), 300u);
  EXPECT_EQ(r.find(SeqNum(10 * 150 + 4)), 150u);
  EXPECT_EQ(r.find(SeqNum(10 * 150 + 5)), r.count());  // a hole
  EXPECT_TRUE(r.covers(SeqNum(10 * 77 + 1), SeqNum(10 * 77 + 5)));
  EXPECT_FALSE(r.covers(SeqNum(10 * 77 + 1), SeqNum(10 * 77 + 6)));
  r.trim_below(SeqNum(10 * 200 + 2));
  EXPECT_EQ(r.count(), 100u);
  EXPECT_EQ(r[0].left, SeqNum(10 * 200 + 2));
  r.set_tally(nullptr);
  EXPECT_EQ(tally, 0u);
}

TEST(ByteRing, WrapsAndKeepsOutOfOrderBytesOnResize) {
  ByteRing b;
  b.resize(8);
  uint8_t d[6] = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(b.push(d), 6u);
  b.pop(5);
  EXPECT_EQ(b.push(d), 6u);  // wraps
  uint8_t out[7];
  b.copy_out(0, out);
  EXPECT_EQ(out[0], 6);
  EXPECT_EQ(out[6], 6);
  // Out-of-order byte past the end, then a resize that must keep it.
  ByteRing r;
  r.resize(4);
  uint8_t x[1] = {9};
  r.write_at(2, x);
  r.resize(16, 3);
  r.commit(3);
  uint8_t o[3];
  r.copy_out(0, o);
  EXPECT_EQ(o[2], 9);
}

// The send ring, emptied by an ACK, writes the next message where the last one began (the
// same cache line); the receive ring's pop() keeps moving, since out-of-order bytes past
// its end are addressed from its head.
TEST(ByteRing, AnEmptiedSendRingStartsAgainAtItsFirstByte) {
  ByteRing b;
  b.resize(64);
  uint8_t d[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_EQ(b.push(d), 10u);
  const uint8_t* first = b.contiguous(0, 10).data();
  b.consume(10);
  ASSERT_EQ(b.push(d), 10u);
  EXPECT_EQ(b.contiguous(0, 10).data(), first);
  b.consume(4);  // not empty: the head moves on
  EXPECT_EQ(b.contiguous(0, 6).data(), first + 4);
  EXPECT_EQ(b.contiguous(0, 6)[0], 5);
  b.pop(6);
  ASSERT_EQ(b.push(d), 10u);
  EXPECT_EQ(b.contiguous(0, 10).data(), first + 10);
}

// Spare storage goes from one connection's ring to the next one's (TcpStack's spare pools):
// the ring that adopts it counts its size and storage in its own tally, the storage source
// is left empty, and a ring that released or surrendered its storage can adopt again.
TEST(ByteRing, AdoptsSurrenderedStorageIntoItsTally) {
  RingTally from_tally, to_tally;
  ByteRing from, to;
  from.bind(&from_tally);
  to.bind(&to_tally);
  from.resize(64);
  uint8_t d[3] = {1, 2, 3};
  EXPECT_EQ(from.push(d), 3u);
  EXPECT_EQ(from_tally.allocated, 64u);
  std::unique_ptr<uint8_t[]> spare = from.surrender();
  ASSERT_NE(spare, nullptr);
  EXPECT_EQ(from_tally.capacity, 0u);
  EXPECT_EQ(from_tally.allocated, 0u);
  EXPECT_EQ(from_tally.bytes, 0u);
  to.adopt(spare, 64);
  EXPECT_EQ(spare, nullptr);
  EXPECT_EQ(to.capacity(), 64u);
  EXPECT_EQ(to.allocated(), 64u);
  EXPECT_EQ(to.size(), 0u);
  EXPECT_EQ(to_tally.capacity, 64u);
  EXPECT_EQ(to_tally.allocated, 64u);
  EXPECT_EQ(to_tally.bytes, 0u);
  EXPECT_EQ(to.push(d), 3u);
  uint8_t o[3];
  to.copy_out(0, o);
  EXPECT_EQ(o[2], 3);
  EXPECT_EQ(to_tally.bytes, 3u);
  // Back to the source, which released nothing yet: capacity 0, no storage.
  spare = to.surrender();
  EXPECT_EQ(to_tally.capacity, 0u);
  EXPECT_EQ(to_tally.allocated, 0u);
  EXPECT_EQ(to_tally.bytes, 0u);
  from.release();
  from.adopt(spare, 64);
  EXPECT_EQ(from_tally.capacity, 64u);
  EXPECT_EQ(from_tally.allocated, 64u);
  EXPECT_EQ(from.free(), 64u);
}

}  // namespace
}  // namespace ws::tcp
