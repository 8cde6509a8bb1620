#include "control/stats/histogram.hpp"

#include <gtest/gtest.h>

namespace ws::stats {
namespace {

TEST(HistogramBucket, ZeroAndOneShareBucketZero) {
  EXPECT_EQ(histogram_bucket(0), 0u);
  EXPECT_EQ(histogram_bucket(1), 0u);
}

TEST(HistogramBucket, UpperBoundsArePowersOfTwoInclusive) {
  for (uint32_t b = 1; b < kHistogramBuckets - 1; ++b) {
    uint64_t ub = histogram_upper_bound(b);
    EXPECT_EQ(histogram_bucket(ub), b) << "2^" << b << " belongs to bucket " << b;
    EXPECT_EQ(histogram_bucket(ub / 2 + 1), b) << "just above 2^" << b - 1;
    EXPECT_EQ(histogram_bucket(ub + 1), b + 1);
  }
}

TEST(HistogramBucket, HugeValuesLandInTheLastBucket) {
  EXPECT_EQ(histogram_bucket(UINT64_MAX), kHistogramBuckets - 1);
  EXPECT_EQ(histogram_bucket((uint64_t{1} << 62) + 1), kHistogramBuckets - 1);
}

TEST(HistogramObserve, CountsSumAndBuckets) {
  uint64_t w[kHistogramWords] = {};
  for (uint64_t v : {0ull, 3ull, 4ull, 5ull, 1000ull}) histogram_observe(w, v);
  EXPECT_EQ(w[0], 1u);
  EXPECT_EQ(w[2], 2u);   // 3 and 4: (2, 4]
  EXPECT_EQ(w[3], 1u);   // 5: (4, 8]
  EXPECT_EQ(w[10], 1u);  // 1000: (512, 1024]
  EXPECT_EQ(w[kHistogramSumWord], 1012u);
  EXPECT_EQ(w[kHistogramCountWord], 5u);
}

}  // namespace
}  // namespace ws::stats
