// A small sorted set of disjoint sequence ranges [left, right), fixed capacity, no
// allocation. Used for the receiver's out-of-order map (RFC 2018 SACK blocks come from
// it) and the sender's SACK scoreboard (RFC 6675 section 3).
#pragma once

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

template <size_t N>
class SeqRanges {
 public:
  size_t count() const { return n_; }
  bool empty() const { return n_ == 0; }
  const SeqRange& operator[](size_t i) const { return r_[i]; }
  void clear() { n_ = 0; }

  // Adds [l, r), merging neighbours. When the set is full and the range overlaps
  // nothing, returns false (if drop_highest, the highest range makes room instead).
  bool insert(SeqNum l, SeqNum r, bool drop_highest = false) {
    if (!(l < r)) return true;
    size_t i = 0;
    while (i < n_ && r_[i].right < l) ++i;  // first range that could touch [l, r)
    size_t j = i;
    SeqNum nl = l, nr = r;
    while (j < n_ && r_[j].left <= r) {
      nl = seq_min(nl, r_[j].left);
      nr = seq_max(nr, r_[j].right);
      ++j;
    }
    if (j == i) {  // no overlap: insert at i
      if (n_ == N) {
        if (!drop_highest || i == N) return false;
        --n_;
      }
      for (size_t k = n_; k > i; --k) r_[k] = r_[k - 1];
      r_[i] = {l, r};
      ++n_;
      return true;
    }
    r_[i] = {nl, nr};
    size_t removed = j - i - 1;
    for (size_t k = i + 1; k + removed < n_; ++k) r_[k] = r_[k + removed];
    n_ -= removed;
    return true;
  }
  // Forgets everything below x (ranges are cut at x).
  void trim_below(SeqNum x) {
    size_t k = 0;
    while (k < n_ && r_[k].right <= x) ++k;
    for (size_t i = k; i < n_; ++i) r_[i - k] = r_[i];
    n_ -= k;
    if (n_ > 0 && r_[0].left < x) r_[0].left = x;
  }
  // Whether [l, r) is fully covered.
  bool covers(SeqNum l, SeqNum r) const {
    for (size_t i = 0; i < n_; ++i)
      if (r_[i].left <= l && r <= r_[i].right) return true;
    return false;
  }
  uint64_t total() const {
    uint64_t t = 0;
    for (size_t i = 0; i < n_; ++i) t += r_[i].len();
    return t;
  }

 private:
  std::array<SeqRange, N> r_{};
  size_t n_ = 0;
};

// SeqRanges<N> whose array is allocated at the first insert: the receiver's out-of-order
// map is empty for nearly every connection (all idle ones), and N ranges inline would
// be most of a TCB. Once allocated it stays for the connection's life (a path that
// reorders once will again): one allocation per connection at most, none per segment.
template <size_t N>
class LazySeqRanges {
 public:
  LazySeqRanges() = default;
  LazySeqRanges(const LazySeqRanges&) = delete;
  LazySeqRanges& operator=(const LazySeqRanges&) = delete;
  ~LazySeqRanges() { set_tally(nullptr); }
  // heap_bytes() is counted into *t from now on (and out of the former tally).
  void set_tally(uint64_t* t) { rebind_heap_tally(heap_tally_, t, heap_bytes()); }
  size_t count() const { return r_ ? r_->count() : 0; }
  bool empty() const { return count() == 0; }
  const SeqRange& operator[](size_t i) const { return (*r_)[i]; }
  void clear() {
    if (r_) r_->clear();
  }
  bool insert(SeqNum l, SeqNum r, bool drop_highest = false) {
    if (!r_) {
      r_ = std::make_unique<SeqRanges<N>>();
      if (heap_tally_) *heap_tally_ += heap_bytes();
    }
    return r_->insert(l, r, drop_highest);
  }
  void trim_below(SeqNum x) {
    if (r_) r_->trim_below(x);
  }
  bool covers(SeqNum l, SeqNum r) const { return r_ && r_->covers(l, r); }
  uint64_t total() const { return r_ ? r_->total() : 0; }
  size_t heap_bytes() const { return r_ ? sizeof(SeqRanges<N>) : 0; }

 private:
  std::unique_ptr<SeqRanges<N>> r_;
  uint64_t* heap_tally_ = nullptr;
};

}  // namespace ws::tcp
