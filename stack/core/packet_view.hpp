// A received packet as the stack reads it: a window over a list of byte segments
// (the data areas of an mbuf chain in the data plane, heap memory in tests).
// Headers are read in place when they lie inside one segment; one that straddles
// a segment boundary is pulled up into a small caller-owned buffer (the only
// copy). Checksums run over the segments (RFC 1071 section 4.1 sums pieces of
// any length, see csum()), and payload is handed on as the segments' spans.
//
// The view does not own anything: the segment array and the bytes must outlive
// it (the data plane keeps both for the duration of Stack::receive). Copying a
// view is cheap and safe: the first segment's window is held inline, the rest
// is a pointer into the caller's array.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "stack/core/checksum.hpp"

namespace ws {

// The owner of the buffers behind a received frame (the data plane's mbufs), for
// the stack to keep a frame's bytes past Stack::receive instead of copying them:
// retain() takes a reference, release() gives it back. retain() may refuse (the
// buffer pool is running low), and the stack then copies.
class RxHolder {
 public:
  virtual bool retain(const void* frame) = 0;
  virtual void release(const void* frame) = 0;

 protected:
  ~RxHolder() = default;
};

class PacketView {
 public:
  using Segment = std::span<const uint8_t>;
  // The most segments a data plane hands over for one frame: 64 KiB of IPv4
  // packet in 2 KiB mbufs is 33; room for smaller buffers (memif's 2 KiB default
  // less headroom) with margin. Longer chains are dropped by the data plane.
  static constexpr size_t kMaxSegments = 64;

  PacketView() = default;
  // One contiguous buffer.
  explicit PacketView(Segment one) : head_(one), len_(one.size()) {}
  // `segs` in order; `len` bytes from the start of the first one (clipped to what
  // the segments hold, so a chain shorter than its claimed length reads short).
  PacketView(std::span<const Segment> segs, size_t len) {
    if (segs.empty()) return;
    head_ = segs[0];
    rest_ = segs.data() + 1;
    nrest_ = segs.size() - 1;
    while (head_.empty() && nrest_ > 0) {  // empty leading segments hold nothing
      head_ = *rest_++;
      --nrest_;
    }
    size_t have = head_.size();
    for (size_t i = 0; i < nrest_; ++i) have += rest_[i].size();
    len_ = std::min(len, have);
    if (head_.size() > len_) head_ = head_.first(len_);
  }

  // The buffers' owner, when the bytes may be held (see RxHolder); views made
  // from this one (tail, first) keep it.
  void set_owner(RxHolder* holder, const void* frame) {
    holder_ = holder;
    frame_ = frame;
  }
  RxHolder* holder() const { return holder_; }
  const void* frame() const { return frame_; }
  // The view's pieces in order (as for_each gives them), at most out.size();
  // returns how many, or 0 when there are more than that.
  size_t pieces(std::span<Segment> out) const {
    size_t n = 0;
    bool fits = true;
    for_each([&](Segment s) {
      if (n == out.size()) {
        fits = false;
        return;
      }
      out[n++] = s;
    });
    return fits ? n : 0;
  }

  size_t size() const { return len_; }
  bool empty() const { return len_ == 0; }
  // True when every byte of the view lies in its first segment.
  bool contiguous() const { return head_.size() >= len_; }
  // The view's bytes in its first segment (all of them when contiguous()).
  Segment head() const { return head_.first(std::min(head_.size(), len_)); }

  // The view less its first `n` bytes (empty if n >= size()).
  PacketView tail(size_t n) const {
    PacketView v;
    if (n >= len_) return v;
    v.holder_ = holder_;
    v.frame_ = frame_;
    v.len_ = len_ - n;
    if (n < head_.size()) {
      v.head_ = head_.subspan(n);
      v.rest_ = rest_;
      v.nrest_ = nrest_;
      return v;
    }
    n -= head_.size();
    size_t i = 0;
    while (i < nrest_ && n >= rest_[i].size()) n -= rest_[i++].size();
    // i < nrest_ here: the segments hold at least len_ bytes.
    v.head_ = rest_[i].subspan(n);
    v.rest_ = rest_ + i + 1;
    v.nrest_ = nrest_ - i - 1;
    if (v.head_.size() > v.len_) v.head_ = v.head_.first(v.len_);
    return v;
  }
  // The first `n` bytes of the view (all of it if n >= size()).
  PacketView first(size_t n) const {
    PacketView v = *this;
    if (n >= len_) return v;
    v.len_ = n;
    if (v.head_.size() > n) v.head_ = v.head_.first(n);
    return v;
  }

  // Calls f(span) for each non-empty piece of the view, in order.
  template <class F>
  void for_each(F&& f) const {
    size_t left = len_;
    Segment h = head();
    if (!h.empty()) f(h);
    left -= h.size();
    for (size_t i = 0; i < nrest_ && left > 0; ++i) {
      Segment s = rest_[i].first(std::min(rest_[i].size(), left));
      left -= s.size();
      if (!s.empty()) f(s);
    }
  }

  // Copies out.size() bytes starting `off` bytes into the view; false (and
  // nothing copied) when the view is shorter than that.
  bool copy_out(size_t off, std::span<uint8_t> out) const {
    if (off > len_ || out.size() > len_ - off) return false;
    size_t pos = 0;  // offset of the current piece in the view
    size_t done = 0;
    for_each([&](Segment s) {
      if (done == out.size()) return;
      size_t end = pos + s.size();
      if (end > off + done) {
        size_t from = off + done - pos;
        size_t n = std::min(s.size() - from, out.size() - done);
        std::memcpy(out.data() + done, s.data() + from, n);
        done += n;
      }
      pos = end;
    });
    return true;
  }

  // The first `n` bytes as one span: in place when they lie in the first
  // segment, otherwise copied into `scratch` (which must hold n bytes) and
  // `pulled` is incremented. Empty when the view is shorter than n.
  Segment pullup(size_t n, std::span<uint8_t> scratch, uint64_t& pulled) const {
    if (n > len_) return {};
    if (head_.size() >= n) return head_.first(n);
    if (scratch.size() < n) return {};
    copy_out(0, scratch.first(n));
    ++pulled;
    return scratch.first(n);
  }

  // One's-complement sum of the view added to `initial` (as csum_partial, not
  // complemented). Pieces of odd length are allowed anywhere: a piece that
  // starts at an odd offset of the view contributes its sum byte-swapped (RFC
  // 1071 section 2(B), byte order independence), so the result equals the sum
  // of the same bytes laid out contiguously.
  uint32_t csum(uint32_t initial = 0) const {
    // A view within one segment (every segment TCP verifies that arrived in one buffer):
    // one csum_partial from `initial`, the same sum (inline for a segment without data).
    if (head_.size() >= len_) return csum_short(head_.first(len_), initial);
    uint64_t acc = initial;
    bool odd = false;
    for_each([&](Segment s) {
      uint32_t p = csum_partial(s);
      p = (p & 0xffff) + (p >> 16);
      p = (p & 0xffff) + (p >> 16);
      if (odd) p = ((p & 0xff) << 8) | (p >> 8);
      acc += p;
      odd ^= (s.size() & 1) != 0;
    });
    while (acc >> 32) acc = (acc & 0xffffffffu) + (acc >> 32);
    return static_cast<uint32_t>(acc);
  }

 private:
  Segment head_;                   // the view's bytes in its first segment
  const Segment* rest_ = nullptr;  // the following segments, whole
  size_t nrest_ = 0;
  size_t len_ = 0;  // bytes in the view
  RxHolder* holder_ = nullptr;
  const void* frame_ = nullptr;
};

}  // namespace ws
