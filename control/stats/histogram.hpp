// Log2 histogram bucket math, shared by the writer (observe) and the reader (bucket bounds).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "control/stats/layout.hpp"

namespace ws::stats {

// Bucket of a raw value: the smallest b with v <= 2^b, capped at the last bucket. Upper
// bounds are inclusive powers of two so they map exactly onto Prometheus `le` labels.
constexpr uint32_t histogram_bucket(uint64_t v) {
  if (v <= 1) return 0;
  uint32_t b = static_cast<uint32_t>(std::bit_width(v - 1));
  return b < kHistogramBuckets - 1 ? b : kHistogramBuckets - 1;
}

// Inclusive upper bound of bucket b in raw units (the last bucket is unbounded).
constexpr uint64_t histogram_upper_bound(uint32_t b) { return uint64_t{1} << b; }

// Observe a raw value into a histogram's words (kHistogramWords of them). Plain stores:
// only the owning core ever writes its copy.
inline void histogram_observe(uint64_t* words, uint64_t v) {
  words[histogram_bucket(v)] += 1;
  words[kHistogramSumWord] += v;
  words[kHistogramCountWord] += 1;
}

}  // namespace ws::stats
