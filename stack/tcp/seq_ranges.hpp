// Sorted sets of disjoint sequence ranges [left, right). SeqRanges<N> has a fixed
// capacity and no allocation; GrowingSeqRanges (the receiver's out-of-order map, which
// the RFC 2018 SACK blocks come from) is allocated at its first insert and grows, up to
// a bound its owner gives, when a range finds no room.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "stack/core/seqnum.hpp"
#include "stack/tcp/buffer_tally.hpp"

namespace ws::tcp {

struct SeqRange {
  SeqNum left;
  SeqNum right;
  uint32_t len() const { return static_cast<uint32_t>(right - left); }
};

// The set operations, on ranges r[0, n) in storage of `cap`: one implementation for both
// kinds of set.
namespace seq_ranges {

// The first range whose right edge is at or beyond x, or n (binary search: the ranges are
// sorted and disjoint, so the right edges increase).
inline size_t first_reaching(const SeqRange* r, size_t n, SeqNum x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].right < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Adds [l, rr), merging neighbours. When the storage is full and the range overlaps
// nothing, returns false (if drop_highest, the highest range makes room instead).
inline bool insert(SeqRange* r, size_t& n, size_t cap, SeqNum l, SeqNum rr, bool drop_highest) {
  if (!(l < rr)) return true;
  size_t i = first_reaching(r, n, l);  // the first range that could touch [l, rr)
  size_t j = i;
  SeqNum nl = l, nr = rr;
  while (j < n && r[j].left <= rr) {
    nl = seq_min(nl, r[j].left);
    nr = seq_max(nr, r[j].right);
    ++j;
  }
  if (j == i) {  // no overlap: insert at i
    if (n == cap) {
      if (!drop_highest || i == cap) return false;
      --n;
    }
    std::move_backward(r + i, r + n, r + n + 1);
    r[i] = {l, rr};
    ++n;
    return true;
  }
  r[i] = {nl, nr};
  std::move(r + j, r + n, r + i + 1);
  n -= j - i - 1;
  return true;
}

// Forgets everything below x (ranges are cut at x).
inline void trim_below(SeqRange* r, size_t& n, SeqNum x) {
  size_t k = first_reaching(r, n, x + 1);
  std::move(r + k, r + n, r);
  n -= k;
  if (n > 0 && r[0].left < x) r[0].left = x;
}

// The index of the range holding x, or n if none does.
inline size_t find(const SeqRange* r, size_t n, SeqNum x) {
  size_t i = first_reaching(r, n, x + 1);
  return i < n && r[i].left <= x ? i : n;
}

// Whether [l, rr) is fully covered: only the first range reaching rr can.
inline bool covers(const SeqRange* r, size_t n, SeqNum l, SeqNum rr) {
  size_t i = first_reaching(r, n, rr);
  return i < n && r[i].left <= l;
}

inline uint64_t total(const SeqRange* r, size_t n) {
  uint64_t t = 0;
  for (size_t i = 0; i < n; ++i) t += r[i].len();
  return t;
}

}  // namespace seq_ranges

template <size_t N>
class SeqRanges {
 public:
  size_t count() const { return n_; }
  bool empty() const { return n_ == 0; }
  const SeqRange& operator[](size_t i) const { return r_[i]; }
  void clear() { n_ = 0; }
  bool insert(SeqNum l, SeqNum r, bool drop_highest = false) {
    return seq_ranges::insert(r_.data(), n_, N, l, r, drop_highest);
  }
  void trim_below(SeqNum x) { seq_ranges::trim_below(r_.data(), n_, x); }
  bool covers(SeqNum l, SeqNum r) const { return seq_ranges::covers(r_.data(), n_, l, r); }
  size_t find(SeqNum x) const { return seq_ranges::find(r_.data(), n_, x); }
  uint64_t total() const { return seq_ranges::total(r_.data(), n_); }

 private:
  std::array<SeqRange, N> r_{};
  size_t n_ = 0;
};

// The receiver's out-of-order map. It is empty for nearly every connection (all idle
// ones), so its storage is allocated at the first insert, for kFirst ranges, and kept
// for the connection's life (a path that reorders once will again). A range that finds
// the storage full doubles it, up to the bound the insert gives: a window of W bytes
// holds at most W / (2 MSS) holes, and heavy reordering of a large window has more
// than kFirst (25 % of a 2.5 MB flight reordered made several hundred). A few
// allocations per connection at most, none per segment once grown.
class GrowingSeqRanges {
 public:
  static constexpr size_t kFirst = 128;
  GrowingSeqRanges() = default;
  GrowingSeqRanges(const GrowingSeqRanges&) = delete;
  GrowingSeqRanges& operator=(const GrowingSeqRanges&) = delete;
  ~GrowingSeqRanges() { set_tally(nullptr); }
  // heap_bytes() is counted into *t from now on (and out of the former tally).
  void set_tally(uint64_t* t) { rebind_heap_tally(heap_tally_, t, heap_bytes()); }
  size_t count() const { return n_; }
  bool empty() const { return n_ == 0; }
  size_t capacity() const { return cap_; }
  const SeqRange& operator[](size_t i) const { return r_[i]; }
  void clear() { n_ = 0; }
  // Adds [l, r); false when it needs a range beyond max_ranges (at least kFirst).
  bool insert(SeqNum l, SeqNum r, size_t max_ranges) {
    if (seq_ranges::insert(r_.get(), n_, cap_, l, r, false)) return true;
    const size_t limit = std::max(max_ranges, kFirst);
    if (cap_ >= limit) return false;
    grow(limit);
    return seq_ranges::insert(r_.get(), n_, cap_, l, r, false);
  }
  void trim_below(SeqNum x) { seq_ranges::trim_below(r_.get(), n_, x); }
  bool covers(SeqNum l, SeqNum r) const { return seq_ranges::covers(r_.get(), n_, l, r); }
  size_t find(SeqNum x) const { return seq_ranges::find(r_.get(), n_, x); }
  size_t heap_bytes() const { return cap_ * sizeof(SeqRange); }

 private:
  void grow(size_t limit) {
    const size_t cap = cap_ == 0 ? kFirst : std::min(2 * cap_, limit);
    auto r = std::make_unique<SeqRange[]>(cap);
    std::copy(r_.get(), r_.get() + n_, r.get());
    if (heap_tally_) *heap_tally_ += (cap - cap_) * sizeof(SeqRange);
    r_ = std::move(r);
    cap_ = cap;
  }

  std::unique_ptr<SeqRange[]> r_;
  size_t n_ = 0;
  size_t cap_ = 0;
  uint64_t* heap_tally_ = nullptr;
};

}  // namespace ws::tcp
