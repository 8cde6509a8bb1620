// Outbound ESP sequence numbers (RFC 4303 3.3.3): they start at 1, never repeat under one key
// and never wrap. The IV of every cipher here is derived from them (RFC 4106 section 3.1 for
// GCM), so a repeat would reuse a GCM nonce. Numbers are handed out only from a range that is
// already durably reserved (see SeqStore); the owner extends it off the fast path.
#pragma once

#include <cstdint>

#include "stack/ipsec/replay.hpp"

namespace ws::ipsec {

class OutboundSequence {
 public:
  enum class Take { ok, wait, exhausted };

  // Numbers below limit() exist: 2^32 without ESN; with ESN 2^64 - 1 (the last one is given
  // up so that the limit fits in 64 bits).
  explicit OutboundSequence(bool esn) : limit_(esn ? UINT64_MAX : uint64_t{1} << 32) {}
  uint64_t limit() const { return limit_; }

  // Numbers [next, end) are durably reserved; neither ever moves back. end <= limit().
  void grant(uint64_t next, uint64_t end);

  // The next number: ok; wait when the reservation is used up (the store is behind);
  // exhausted when the space is spent, for good.
  Take take(EspSeq& out);

  // Less than half the last block is left: time to reserve the next one.
  bool wants_more() const { return end_ < limit_ && end_ - next_ < block_ / 2; }
  uint64_t next() const { return next_; }
  uint64_t reserved_end() const { return end_; }
  bool exhausted() const { return next_ >= limit_; }

 private:
  uint64_t limit_;
  uint64_t next_ = 1;
  uint64_t end_ = 1;  // exclusive
  uint64_t block_ = 0;
};

}  // namespace ws::ipsec
