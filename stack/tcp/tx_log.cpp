#include "stack/tcp/tx_log.hpp"

#include <algorithm>

namespace ws::tcp {

void TxLog::grow() {
  std::vector<TxSeg> nb(cap_ * 2);
  for (size_t i = 0; i < n_; ++i) nb[i] = (*this)[i];
  if (heap_tally_) *heap_tally_ += (nb.capacity() - heap_.capacity()) * sizeof(TxSeg);
  heap_ = std::move(nb);
  data_ = heap_.data();
  cap_ = heap_.size();
  mask_ = cap_ - 1;
  head_ = 0;
}

size_t TxLog::find(SeqNum s) const {
  size_t lo = 0, hi = n_;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if ((*this)[mid].end() > s)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// Inserting in the middle moves the entries before i back by one: splits happen at SACK
// edges and retransmissions, mostly near SND.UNA.
void TxLog::split(size_t i, SeqNum at) {
  if (n_ == cap_) grow();
  head_ = (head_ + mask_) & mask_;  // head_ - 1
  ++n_;
  for (size_t k = 0; k < i; ++k) (*this)[k] = (*this)[k + 1];
  // The entry being split is now at i + 1; its lower part goes to i. Flags are the
  // same on both halves, so the sums do not change.
  TxSeg& hi = (*this)[i + 1];
  TxSeg& lo = (*this)[i];
  lo = hi;
  lo.len = static_cast<uint32_t>(at - hi.seq);
  hi.seq = at;
  hi.len -= lo.len;
}

// sent() for a transmission that overlaps the log, or finds it full.
uint32_t TxLog::sent_again(SeqNum seq, uint32_t len, Instant now) {
  uint32_t again = 0;
  SeqNum e = seq + len;
  if (n_ > 0 && seq < end()) {
    size_t i = find(seq);
    if (i < n_ && (*this)[i].seq < seq) split(i++, seq);
    for (; i < n_ && (*this)[i].seq < e; ++i) {
      if ((*this)[i].end() > e) split(i, e);
      TxSeg& s = (*this)[i];
      account(s, -1);
      s.xmit = now;
      s.flags = static_cast<uint8_t>((s.flags | TxSeg::kRetrans) & ~TxSeg::kLost);
      account(s, +1);
      again += s.len;
    }
    seq = seq_max(seq, end());
    if (seq >= e) return again;
  }
  if (n_ == cap_) grow();
  (*this)[n_++] = TxSeg{seq, static_cast<uint32_t>(e - seq), now, 0};
  return again;
}

void TxLog::set_lost(size_t i, bool lost) {
  TxSeg& s = (*this)[i];
  if (s.has(TxSeg::kLost) == lost) return;
  account(s, -1);
  s.flags = static_cast<uint8_t>(lost ? (s.flags | TxSeg::kLost) : (s.flags & ~TxSeg::kLost));
  account(s, +1);
}

void TxLog::clear_flag(uint8_t f) {
  for (size_t i = 0; i < n_; ++i) {
    TxSeg& s = (*this)[i];
    if (!s.has(f)) continue;
    account(s, -1);
    s.flags = static_cast<uint8_t>(s.flags & ~f);
    account(s, +1);
  }
}

uint32_t TxLog::count_bytes(uint8_t flag) const {
  uint32_t sum = 0;
  for (size_t i = 0; i < n_; ++i)
    if ((*this)[i].has(flag)) sum += (*this)[i].len;
  return sum;
}

}  // namespace ws::tcp
