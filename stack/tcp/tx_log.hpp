// The sender's record of every segment in flight: one entry per transmitted segment
// (as it went on the wire: a TSO super-segment is logged as the pieces the port cuts),
// covering [SND.UNA, SND.MAX) in sequence order without gaps. Each entry keeps its last
// transmission time and whether it was SACKed, is deemed lost, or was retransmitted.
// This is the SACK scoreboard (RFC 6675 section 3) and the per-segment state RACK needs
// (RFC 8985 section 6.1: xmit_ts, end_seq). Bytes SACKed and bytes lost are kept as
// running sums, so the pipe is O(1); a SACK block costs a binary search plus the
// entries it covers, however many holes the window has.
//
// Storage is a ring of entries: 16 inside the log itself (a connection that never has
// more segments in flight allocates nothing), then on the heap, doubling when full (an
// allocation per doubling, as the send buffer grows; none per segment once the window
// has been reached). The log points into itself: it is neither copied nor moved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stack/core/seqnum.hpp"
#include "stack/core/time.hpp"
#include "stack/tcp/buffer_tally.hpp"

namespace ws::tcp {

struct TxSeg {
  static constexpr uint8_t kSacked = 1;   // selectively acknowledged
  static constexpr uint8_t kLost = 2;     // deemed lost and not retransmitted since
  static constexpr uint8_t kRetrans = 4;  // retransmitted at least once
  SeqNum seq;
  uint32_t len = 0;  // sequence space (a FIN counts one)
  Instant xmit;      // last transmission
  uint8_t flags = 0;
  SeqNum end() const { return seq + len; }
  bool has(uint8_t f) const { return (flags & f) != 0; }
};

// NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): inline_ is raw entry storage
class TxLog {
 public:
  static constexpr size_t kInline = 16;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): inline_, as above
  TxLog() = default;
  TxLog(const TxLog&) = delete;
  TxLog& operator=(const TxLog&) = delete;
  ~TxLog() { set_tally(nullptr); }
  // heap_bytes() is counted into *t from now on (and out of the former tally).
  void set_tally(uint64_t* t) { rebind_heap_tally(heap_tally_, t, heap_bytes()); }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  TxSeg& operator[](size_t i) { return data_[(head_ + i) & mask_]; }
  const TxSeg& operator[](size_t i) const { return data_[(head_ + i) & mask_]; }
  SeqNum end() const { return n_ == 0 ? SeqNum() : (*this)[n_ - 1].end(); }
  uint32_t sacked_bytes() const { return sacked_; }
  uint32_t lost_bytes() const { return lost_; }
  size_t capacity() const { return cap_; }
  size_t heap_bytes() const { return heap_.capacity() * sizeof(TxSeg); }

  void clear() {
    n_ = head_ = 0;
    sacked_ = lost_ = 0;
  }
  // clear(), and the storage given back (TIME_WAIT).
  void release() {
    clear();
    if (heap_tally_) *heap_tally_ -= heap_bytes();
    heap_ = std::vector<TxSeg>();  // frees the storage (clear() would keep it)
    data_ = inline_entries();
    cap_ = kInline;
    mask_ = kInline - 1;
  }
  // Every SACK mark dropped (the receiver reneged, RFC 2018 section 8).
  void forget_sacks() { clear_flag(TxSeg::kSacked); }
  // Every loss mark dropped (the losses were found spurious).
  void clear_lost() { clear_flag(TxSeg::kLost); }
  // A transmission of [seq, seq + len) at `now`: appended past the end, or updating
  // (after splitting at the edges) the entries it covers. Returns the bytes of it that
  // were sent before (a retransmission). Inline: a new segment past the end (every
  // segment sent, nearly) is four stores; a retransmission goes out of line. Field by
  // field: GCC built a whole TxSeg on the stack from two 8-byte stores and copied it with
  // one 16-byte load, which cannot be forwarded from them and stalled every segment sent.
  uint32_t sent(SeqNum seq, uint32_t len, Instant now) {
    if (len == 0) return 0;
    if ((n_ > 0 && seq < end()) || n_ == cap_) return sent_again(seq, len, now);
    TxSeg& e = (*this)[n_++];
    e.seq = seq;
    e.len = len;
    e.xmit = now;
    e.flags = 0;
    return 0;
  }
  // Cumulative acknowledgment up to `una`: drops the entries below it (the first one
  // is trimmed if `una` falls inside it). `fn(const TxSeg&)` sees each entry fully
  // acknowledged that was not SACKed before.
  template <class Fn>
  void ack(SeqNum una, Fn&& fn);
  // Marks the entries inside [l, r) SACKed, splitting at the edges; `fn(const TxSeg&)`
  // sees each newly SACKed one. Returns the bytes newly SACKed.
  template <class Fn>
  uint32_t sack(SeqNum l, SeqNum r, Fn&& fn);
  // Sets or clears kLost on entry i, keeping the sums.
  void set_lost(size_t i, bool lost);
  // Index of the first entry whose end lies above `s` (size() if none).
  size_t find(SeqNum s) const;
  // Splits entry i at `at` (strictly inside it); entry i keeps the lower part.
  void split(size_t i, SeqNum at);
  // Recomputed sums, for tests: equal to sacked_bytes()/lost_bytes() when consistent.
  uint32_t count_bytes(uint8_t flag) const;

 private:
  // Inline: every entry acknowledged passes through it.
  void account(const TxSeg& s, int sign) {
    const uint32_t v = static_cast<uint32_t>(sign) * s.len;
    if (s.has(TxSeg::kSacked)) sacked_ += v;
    if (s.has(TxSeg::kLost)) lost_ += v;
  }
  uint32_t sent_again(SeqNum seq, uint32_t len, Instant now);
  void clear_flag(uint8_t f);
  void grow();
  TxSeg* inline_entries() { return reinterpret_cast<TxSeg*>(inline_); }
  // Raw storage (TxSeg is an implicit-lifetime aggregate): every entry is written before
  // it is read, and zeroing 16 of them was a part of every connection's set-up.
  alignas(TxSeg) std::byte inline_[kInline * sizeof(TxSeg)];
  std::vector<TxSeg> heap_;
  TxSeg* data_ = inline_entries();
  size_t cap_ = kInline;
  size_t head_ = 0, n_ = 0, mask_ = kInline - 1;
  uint32_t sacked_ = 0, lost_ = 0;
  uint64_t* heap_tally_ = nullptr;
};

template <class Fn>
void TxLog::ack(SeqNum una, Fn&& fn) {
  while (n_ > 0) {
    TxSeg& s = (*this)[0];
    if (s.end() <= una) {
      account(s, -1);
      if (!s.has(TxSeg::kSacked)) fn(static_cast<const TxSeg&>(s));
      head_ = (head_ + 1) & mask_;
      --n_;
      continue;
    }
    if (s.seq < una) {
      account(s, -1);
      s.len -= static_cast<uint32_t>(una - s.seq);
      s.seq = una;
      account(s, +1);
    }
    break;
  }
  // Empty: the next entry goes to the ring's start again, so a connection with one
  // segment in flight at a time (requests and responses) keeps writing the same cache
  // line instead of a new one of the ring's six per segment.
  if (n_ == 0) head_ = 0;
}

template <class Fn>
uint32_t TxLog::sack(SeqNum l, SeqNum r, Fn&& fn) {
  uint32_t newly = 0;
  size_t i = find(l);
  if (i < n_ && (*this)[i].seq < l) split(i++, l);
  for (; i < n_ && (*this)[i].seq < r; ++i) {
    if ((*this)[i].end() > r) split(i, r);
    TxSeg& s = (*this)[i];
    if (s.has(TxSeg::kSacked)) continue;
    account(s, -1);
    s.flags = static_cast<uint8_t>((s.flags | TxSeg::kSacked) & ~TxSeg::kLost);
    account(s, +1);
    newly += s.len;
    fn(static_cast<const TxSeg&>(s));
  }
  return newly;
}

}  // namespace ws::tcp
