#include "stack/ipsec/sequence.hpp"

#include <algorithm>

namespace ws::ipsec {

void OutboundSequence::grant(uint64_t next, uint64_t end) {
  next_ = std::max(next_, next);
  end = std::min(end, limit_);
  if (end > end_) {
    block_ = end - std::max(end_, next_);
    end_ = end;
  }
}

OutboundSequence::Take OutboundSequence::take(EspSeq& out) {
  if (next_ >= limit_) return Take::exhausted;
  if (next_ >= end_) return Take::wait;
  out = EspSeq(next_++);
  return Take::ok;
}

}  // namespace ws::ipsec
