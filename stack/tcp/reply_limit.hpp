// RFC 5961 section 7: the throttle on ACKs that answer unacceptable segments, shared by a
// connection's input (tcp_input.cpp) and a TIME-WAIT record's (time_wait_input.cpp).
#pragma once

#include <cstdint>

#include "stack/core/time.hpp"

namespace ws::tcp {

// An unacceptable segment (out of window, or rejected by PAWS) that occupies no sequence
// space is answered at most once per 500 ms per connection (RFC 5961 section 7's ACK
// throttling; Linux's tcp_invalid_ratelimit). Reordering makes such segments in numbers,
// each reply tells the peer nothing new, and two ends that each find the other's segments
// unacceptable would otherwise trade ACKs for ever. Data (its D-SACK), SYN and FIN are
// always answered. Four bytes, so that a TIME-WAIT record holds one within its 112: the
// last reply's millisecond plus one, 0 for none yet.
class UnacceptableReplyLimit {
 public:
  static constexpr uint32_t kIntervalMs = 500;

  // Whether a segment occupying `seq_len` of sequence space is answered now; a reply
  // allowed is taken as sent.
  bool allow(uint32_t seq_len, Instant now) {
    if (seq_len != 0) return true;
    const uint32_t t = static_cast<uint32_t>(now.ns() / 1'000'000) + 1;
    if (last_ != 0 && t - last_ < kIntervalMs) return false;
    last_ = t != 0 ? t : 1;
    return true;
  }

 private:
  uint32_t last_ = 0;
};

}  // namespace ws::tcp
