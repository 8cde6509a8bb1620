// A fixed-size log-linear latency histogram: each power of two is split into
// kSub linear buckets, so any percentile is within 1/kSub (6%) of the truth,
// recording is a few instructions, and memory is constant (no allocation).
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace ws {

class LatencyHistogram {
 public:
  static constexpr uint32_t kSubBits = 4;
  static constexpr uint32_t kSub = 1u << kSubBits;
  static constexpr uint32_t kBuckets = 64 * kSub;

  void record(uint64_t v) {
    ++counts_[index(v)];
    ++count_;
    sum_ += v;
    if (v > max_) max_ = v;
    if (v < min_) min_ = v;
  }
  void merge(const LatencyHistogram& o) {
    for (uint32_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    if (o.max_ > max_) max_ = o.max_;
    if (o.min_ < min_) min_ = o.min_;
  }
  void reset() { *this = LatencyHistogram{}; }

  uint64_t count() const { return count_; }
  uint64_t sum() const { return sum_; }
  uint64_t max() const { return count_ ? max_ : 0; }
  uint64_t min() const { return count_ ? min_ : 0; }

  // The value at quantile q in [0, 1]: the upper edge of the bucket holding it,
  // clamped to the largest value seen.
  uint64_t quantile(double q) const {
    if (count_ == 0) return 0;
    auto rank = static_cast<uint64_t>(q * static_cast<double>(count_ - 1)) + 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        uint64_t hi = upper(i);
        return hi < max_ ? hi : max_;
      }
    }
    return max_;
  }

  // Observations v with 2^(b-1) < v <= 2^b fall in log2 bucket b (bucket 0: v <= 1),
  // the layout of the stats segment's Prometheus histograms. Approximate: a
  // log-linear bucket straddling a power of two is attributed to its upper half.
  template <class Out>
  void export_log2(Out&& add) const {
    for (uint32_t i = 0; i < kBuckets; ++i) {
      if (counts_[i] == 0) continue;
      uint64_t hi = upper(i);
      uint32_t b = hi <= 1 ? 0 : 64 - static_cast<uint32_t>(std::countl_zero(hi - 1));
      add(b, counts_[i]);
    }
  }

 private:
  static uint32_t index(uint64_t v) {
    if (v < kSub) return static_cast<uint32_t>(v);
    uint32_t msb = 63 - static_cast<uint32_t>(std::countl_zero(v));
    uint32_t shift = msb - kSubBits;
    uint32_t sub = static_cast<uint32_t>(v >> shift) & (kSub - 1);
    uint32_t i = (shift + 1) * kSub + sub;
    return i < kBuckets ? i : kBuckets - 1;
  }
  // Largest value that maps to bucket i.
  static uint64_t upper(uint32_t i) {
    if (i < kSub) return i;
    uint32_t shift = i / kSub - 1;
    uint64_t sub = i % kSub;
    return (((kSub + sub + 1) << shift) - 1);
  }

  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = UINT64_MAX;
};

}  // namespace ws
