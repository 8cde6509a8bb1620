// The anti-replay window (RFC 4303 3.4.3, RFC 6479 bitmap) and ESN high-half inference
// (RFC 4303 appendix A2.2): edges, stale bits after jumps, duplicates within one burst, and a
// comparison with a plain model over random arrival orders.
#include "stack/ipsec/replay.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace ws::ipsec {
namespace {

using V = ReplayVerdict;

EspSeq S(uint64_t v) { return EspSeq(v); }

TEST(ReplayWindow, FirstPacketsAndZero) {
  ReplayWindow w(64, false);
  EXPECT_EQ(w.check(S(0)), V::outside_window);  // ESP never sends 0
  EXPECT_EQ(w.check(S(1)), V::ok);
  EXPECT_EQ(w.accept(S(1)), V::ok);
  EXPECT_EQ(w.check(S(1)), V::replayed);
  EXPECT_EQ(w.accept(S(1)), V::replayed);
  EXPECT_EQ(w.accept(S(3)), V::ok);
  EXPECT_EQ(w.accept(S(2)), V::ok);
  EXPECT_EQ(w.accept(S(2)), V::replayed);
  EXPECT_EQ(w.top(), S(3));
}

TEST(ReplayWindow, EdgesOfEverySize) {
  for (uint32_t size : {32u, 64u, 100u, 1024u, 4096u}) {
    SCOPED_TRACE(size);
    ReplayWindow w(size, false);
    const uint64_t top = 10000;
    ASSERT_EQ(w.accept(S(top)), V::ok);
    EXPECT_EQ(w.check(S(top - size + 1)), V::ok);  // the oldest number still inside
    EXPECT_EQ(w.check(S(top - size)), V::outside_window);
    EXPECT_EQ(w.accept(S(top - size + 1)), V::ok);
    EXPECT_EQ(w.accept(S(top - size + 1)), V::replayed);
    // One step forward pushes the oldest out.
    ASSERT_EQ(w.accept(S(top + 1)), V::ok);
    EXPECT_EQ(w.check(S(top - size + 1)), V::outside_window);
    EXPECT_EQ(w.check(S(top - size + 2)), V::ok);
  }
}

TEST(ReplayWindow, AJumpClearsBitsThatWouldAlias) {
  // 64 packets of window use 4 words (256 bits); 300 and 556 share a bit, as do 299 and 555.
  ReplayWindow w(64, false);
  for (uint64_t s = 1; s <= 300; ++s) ASSERT_EQ(w.accept(S(s)), V::ok);
  ASSERT_EQ(w.accept(S(556)), V::ok);
  for (uint64_t s = 556 - 63; s < 556; ++s) EXPECT_EQ(w.check(S(s)), V::ok) << s;
  // A jump of many window lengths clears everything.
  ASSERT_EQ(w.accept(S(1000000)), V::ok);
  for (uint64_t s = 1000000 - 63; s < 1000000; ++s) EXPECT_EQ(w.check(S(s)), V::ok) << s;
}

TEST(ReplayWindow, DuplicatesInOneBurstPassTheCheckButOnlyOneIsAccepted) {
  ReplayWindow w(1024, false);
  ASSERT_EQ(w.accept(S(5)), V::ok);
  // Both copies of 7 are checked before either is decrypted...
  EXPECT_EQ(w.check(S(7)), V::ok);
  EXPECT_EQ(w.check(S(7)), V::ok);
  // ...and the window, updated after each verifies, takes only the first.
  EXPECT_EQ(w.accept(S(7)), V::ok);
  EXPECT_EQ(w.accept(S(7)), V::replayed);
}

TEST(ReplayWindow, OffAcceptsEverythingButZero) {
  ReplayWindow w(0, false);
  EXPECT_EQ(w.accept(S(5)), V::ok);
  EXPECT_EQ(w.accept(S(5)), V::ok);
  EXPECT_EQ(w.accept(S(1)), V::ok);
  EXPECT_EQ(w.check(S(0)), V::outside_window);
}

// A model: accepted numbers in a set; the window is [top - size + 1, top].
TEST(ReplayWindow, MatchesAModelOverRandomArrivals) {
  std::mt19937_64 rng(42);
  for (uint32_t size : {32u, 64u, 96u, 1024u, 4096u}) {
    ReplayWindow w(size, false);
    std::set<uint64_t> seen;
    uint64_t top = 0;
    uint64_t sent = 0;
    for (int i = 0; i < 200000; ++i) {
      // Mostly new numbers, some reordered up to 1.5 windows back, some far jumps.
      uint64_t s;
      const uint64_t r = rng() % 100;
      if (r < 60 || sent == 0) {
        s = ++sent;
      } else if (r < 98) {
        s = sent - std::min<uint64_t>(sent - 1, rng() % (size + size / 2 + 1));
      } else {
        sent += rng() % (4 * size + 1);
        s = sent;
      }
      V want = (top != 0 && top - std::min(top, s) >= size && s <= top) ? V::outside_window
               : seen.count(s)                                          ? V::replayed
                                                                        : V::ok;
      ASSERT_EQ(w.accept(S(s)), want) << "size " << size << " seq " << s << " top " << top;
      if (want == V::ok) {
        seen.insert(s);
        top = std::max(top, s);
      }
    }
  }
}

TEST(EsnInference, WithoutEsnTheLowHalfIsTheNumber) {
  ReplayWindow w(1024, false);
  EspSeq s;
  ASSERT_TRUE(w.infer(0xfffffff0u, s));
  EXPECT_EQ(s, S(0xfffffff0u));
}

TEST(EsnInference, CaseAWindowInsideOneSubspace) {
  ReplayWindow w(1024, true);
  ASSERT_EQ(w.accept(EspSeq::from_halves(5, 2000)), V::ok);
  EspSeq s;
  ASSERT_TRUE(w.infer(2000 - 1023, s));  // the window's bottom
  EXPECT_EQ(s, EspSeq::from_halves(5, 977));
  ASSERT_TRUE(w.infer(976, s));  // below the window: the next subspace
  EXPECT_EQ(s, EspSeq::from_halves(6, 976));
  ASSERT_TRUE(w.infer(3000, s));  // ahead in this subspace
  EXPECT_EQ(s, EspSeq::from_halves(5, 3000));
}

TEST(EsnInference, CaseBWindowSpanningTwoSubspaces) {
  ReplayWindow w(1024, true);
  ASSERT_EQ(w.accept(EspSeq::from_halves(5, 100)), V::ok);
  EspSeq s;
  ASSERT_TRUE(w.infer(100, s));
  EXPECT_EQ(s, EspSeq::from_halves(5, 100));
  ASSERT_TRUE(w.infer(0xffffffffu - 10, s));  // the previous subspace's end, in the window
  EXPECT_EQ(s, EspSeq::from_halves(4, 0xffffffffu - 10));
  ASSERT_TRUE(w.infer(0xffffffffu - 922, s));  // Tl - W + 1 = 100 - 1023, wrapped: the bottom
  EXPECT_EQ(s, EspSeq::from_halves(4, 0xffffffffu - 922));
  ASSERT_TRUE(w.infer(0xffffffffu - 923, s));  // just below it: ahead in this subspace
  EXPECT_EQ(s, EspSeq::from_halves(5, 0xffffffffu - 923));
}

TEST(EsnInference, NothingBeforeTheFirstSubspace) {
  ReplayWindow w(1024, true);
  EspSeq s;
  EXPECT_FALSE(w.infer(0xffffffffu, s));  // would be subspace -1
  ASSERT_TRUE(w.infer(1, s));
  EXPECT_EQ(s, S(1));
}

TEST(EsnInference, AcrossTheLowWrapBothWays) {
  ReplayWindow w(1024, true);
  ASSERT_EQ(w.accept(S(0xfffffffeu)), V::ok);
  EspSeq s;
  ASSERT_TRUE(w.infer(1, s));  // the sender crossed into subspace 1
  EXPECT_EQ(s, S((uint64_t{1} << 32) | 1));
  ASSERT_EQ(w.accept(s), V::ok);
  ASSERT_TRUE(w.infer(0xfffffffdu, s));  // a late packet from before the crossing
  EXPECT_EQ(s, S(0xfffffffdu));
  EXPECT_EQ(w.accept(s), V::ok);
  ASSERT_TRUE(w.infer(0xfffffffeu, s));
  EXPECT_EQ(w.accept(s), V::replayed);
  ASSERT_TRUE(w.infer(0, s));  // low 0 of subspace 1 is a real number with ESN
  EXPECT_EQ(s, S(uint64_t{1} << 32));
  EXPECT_EQ(w.accept(s), V::ok);
}

}  // namespace
}  // namespace ws::ipsec
