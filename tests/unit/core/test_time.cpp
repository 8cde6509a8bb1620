#include <gtest/gtest.h>

#include "stack/core/time.hpp"

namespace ws {
namespace {

TEST(Duration, UnitsAndConversions) {
  EXPECT_EQ(Duration::nanos(7).ns(), 7);
  EXPECT_EQ(Duration::micros(3).ns(), 3000);
  EXPECT_EQ(Duration::millis(200).ns(), 200'000'000);
  EXPECT_EQ(Duration::seconds(120).ns(), 120'000'000'000);
  EXPECT_EQ(Duration::millis(1500).us(), 1'500'000);
  EXPECT_EQ(Duration::millis(1500).ms(), 1500);
  EXPECT_DOUBLE_EQ(Duration::millis(1500).secs(), 1.5);
  EXPECT_EQ(Duration::nanos(999).us(), 0);  // truncates
  EXPECT_EQ(Duration::zero().ns(), 0);
  EXPECT_EQ(Duration{}, Duration::zero());
  // Hours of virtual time do not overflow.
  EXPECT_EQ(Duration::seconds(86400 * 365).ms(), int64_t{86400} * 365 * 1000);
}

TEST(Duration, Arithmetic) {
  Duration d = Duration::millis(200);
  EXPECT_EQ(d + Duration::millis(50), Duration::millis(250));
  EXPECT_EQ(d - Duration::millis(250), Duration::millis(-50));
  EXPECT_EQ(d * 3, Duration::millis(600));
  EXPECT_EQ(d / 8, Duration::millis(25));
  d += Duration::micros(1);
  EXPECT_EQ(d.ns(), 200'001'000);
  EXPECT_LT(Duration::millis(1), Duration::millis(2));
  EXPECT_GT(Duration::max(), Duration::seconds(1'000'000'000));
  EXPECT_LT(Duration::millis(-1), Duration::zero());
}

TEST(Instant, ArithmeticAndOrdering) {
  Instant t0 = Instant::from_ns(1'000'000);
  Instant t1 = t0 + Duration::millis(5);
  EXPECT_EQ(t1.ns(), 6'000'000u);
  EXPECT_EQ(t1 - t0, Duration::millis(5));
  EXPECT_EQ(t0 - t1, Duration::millis(-5));
  EXPECT_EQ(t1 - Duration::millis(5), t0);
  EXPECT_LT(t0, t1);
  Instant t = t0;
  t += Duration::micros(10);
  EXPECT_EQ(t.ns(), 1'010'000u);
  EXPECT_EQ(t0 + Duration::millis(-1), Instant::from_ns(0));
  EXPECT_EQ(Instant{}.ns(), 0u);
}

TEST(Instant, NeverIsAbsorbingAndLatest) {
  Instant n = Instant::never();
  EXPECT_TRUE(n.is_never());
  EXPECT_FALSE(Instant::from_ns(0).is_never());
  EXPECT_TRUE((n + Duration::seconds(1)).is_never());
  EXPECT_TRUE((n + Duration::max()).is_never());
  Instant m = n;
  m += Duration::millis(1);
  EXPECT_TRUE(m.is_never());
  EXPECT_GT(n, Instant::from_ns(~uint64_t{0} - 1));
  // A deadline "max duration from now" stays ahead of now for any realistic clock
  // (up to ~146 years of nanoseconds since the origin).
  Instant now = Instant::from_ns(uint64_t{1} << 62);
  EXPECT_GT(now + Duration::max(), now);
}

TEST(Instant, Earliest) {
  Instant a = Instant::from_ns(10);
  Instant b = Instant::from_ns(20);
  EXPECT_EQ(earliest(a, b), a);
  EXPECT_EQ(earliest(b, a), a);
  EXPECT_EQ(earliest(Instant::never(), b), b);
  EXPECT_EQ(earliest(a, Instant::never()), a);
  EXPECT_TRUE(earliest(Instant::never(), Instant::never()).is_never());
}

}  // namespace
}  // namespace ws
