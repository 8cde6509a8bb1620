// A token bucket (RFC 2697's single-rate idea): `rate` tokens a second, at most `burst`
// saved up. Limits what the stack sends in answer to packets anyone can forge: ICMP
// errors (as Linux's icmp_ratelimit), RSTs for segments to no connection (RFC 5961
// section 7). Time is a parameter; the bucket starts full.
#pragma once

#include <algorithm>
#include <cstdint>

#include "stack/core/time.hpp"

namespace ws {

class TokenBucket {
 public:
  TokenBucket(uint32_t rate, uint32_t burst) : rate_(rate), burst_(burst), tokens_(burst) {}
  // Takes one token if there is one.
  bool take(Instant now) {
    if (now > refill_at_) {
      tokens_ = std::min<double>(burst_, tokens_ + (now - refill_at_).secs() * rate_);
      refill_at_ = now;
    }
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }

 private:
  uint32_t rate_;
  uint32_t burst_;
  double tokens_;
  Instant refill_at_;
};

}  // namespace ws
