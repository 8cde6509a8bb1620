#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "stack/core/seqnum.hpp"

namespace ws {
namespace {

TEST(SeqNum, BasicComparisons) {
  SeqNum a(100), b(200);
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(a <= b);
  EXPECT_TRUE(b > a);
  EXPECT_TRUE(b >= a);
  EXPECT_FALSE(a > b);
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a <= a);
  EXPECT_TRUE(a >= a);
  EXPECT_FALSE(a < a);
  EXPECT_EQ(b - a, 100);
  EXPECT_EQ(a - b, -100);
  EXPECT_EQ(SeqNum().raw(), 0u);
}

TEST(SeqNum, WrapAround) {
  SeqNum hi(0xfffffff0u);
  SeqNum lo = hi + 0x20;  // wraps past zero
  EXPECT_EQ(lo.raw(), 0x10u);
  EXPECT_TRUE(hi < lo);
  EXPECT_TRUE(lo > hi);
  EXPECT_EQ(lo - hi, 0x20);
  EXPECT_EQ(hi - lo, -0x20);
  EXPECT_EQ((lo - 0x20u).raw(), 0xfffffff0u);
  EXPECT_TRUE(SeqNum(0xffffffffu) < SeqNum(0));
  EXPECT_EQ(SeqNum(0) - SeqNum(0xffffffffu), 1);
  SeqNum s(0xffffffffu);
  s += 2;
  EXPECT_EQ(s.raw(), 1u);
  // Largest unambiguous distance: 2^31 - 1.
  EXPECT_TRUE(SeqNum(0) < SeqNum(0x7fffffffu));
  EXPECT_TRUE(SeqNum(0x7fffffffu) > SeqNum(0));
  EXPECT_TRUE(SeqNum(0x80000001u) < SeqNum(0));  // more than half the space away: "before"
}

TEST(SeqNum, MinMaxAcrossWrap) {
  SeqNum a(0xfffffff0u), b(5);
  EXPECT_EQ(seq_max(a, b), b);
  EXPECT_EQ(seq_max(b, a), b);
  EXPECT_EQ(seq_min(a, b), a);
  EXPECT_EQ(seq_min(b, a), a);
}

TEST(SeqNum, InWindowIsHalfOpen) {
  SeqNum a(0xfffffff0u);
  SeqNum b = a + 0x30;  // window straddles zero
  EXPECT_TRUE(seq_in(a, a, b));
  EXPECT_TRUE(seq_in(SeqNum(0), a, b));
  EXPECT_TRUE(seq_in(b - 1u, a, b));
  EXPECT_FALSE(seq_in(b, a, b));
  EXPECT_FALSE(seq_in(a - 1u, a, b));
  EXPECT_FALSE(seq_in(a, a, a));  // empty window contains nothing
}

TEST(SeqNum, RandomDistancesAreConsistent) {
  std::mt19937_64 rng(0x5eed);
  for (int i = 0; i < 100000; ++i) {
    SeqNum a(static_cast<uint32_t>(rng()));
    uint32_t d = 1 + static_cast<uint32_t>(rng() % 0x7fffffffu);  // 1 .. 2^31-1
    SeqNum b = a + d;
    ASSERT_TRUE(a < b) << a.raw() << " " << d;
    ASSERT_TRUE(b > a);
    ASSERT_FALSE(b < a);
    ASSERT_FALSE(a >= b);
    ASSERT_EQ(b - a, static_cast<int32_t>(d));
    ASSERT_EQ(a - b, -static_cast<int32_t>(d));
    ASSERT_EQ(b - d, a);
    ASSERT_TRUE(seq_in(a, a, b));
    ASSERT_FALSE(seq_in(b, a, b));
  }
}

static_assert(SeqNum(1) < SeqNum(2));
static_assert(SeqNum(0xffffffffu) + 1 == SeqNum(0));

}  // namespace
}  // namespace ws
