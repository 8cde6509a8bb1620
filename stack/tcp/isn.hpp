// Initial sequence numbers per RFC 6528: ISN = M + F(localip, localport, remoteip,
// remoteport, secretkey), where M is a 4-microsecond timer and F a keyed hash.
#pragma once

#include <array>
#include <cstdint>

#include "stack/core/addr.hpp"
#include "stack/core/siphash.hpp"
#include "stack/core/time.hpp"

namespace ws::tcp {

using ::ws::siphash24;

class IsnGenerator {
 public:
  explicit IsnGenerator(const std::array<uint8_t, 32>& secret);
  // RFC 6528 section 3. `now` drives M (one tick every 4 microseconds).
  uint32_t isn(Endpoint local, Endpoint remote, Instant now) const;
  // A per-connection timestamp offset (RFC 7323 section 5.4 / appendix on randomised
  // TSval).
  uint32_t ts_offset(Endpoint local, Endpoint remote) const;
  // Both at once, from one keyed hash: F is its low half, the timestamp offset its high
  // half (halves of a PRF output tell nothing about each other, so a peer that sees
  // TSvals learns nothing about F). What a new connection needs: one SipHash, not two.
  struct Initial {
    uint32_t isn = 0;
    uint32_t ts_offset = 0;
    uint32_t f = 0;  // F alone: the ISN less the clock
  };
  Initial initial(Endpoint local, Endpoint remote, Instant now) const;
  // The values of a tuple at `now` from those initial() gave it before: F and the offset
  // depend on the tuple and the secret only, so a connection that takes over its tuple's
  // TIME_WAIT block needs no second hash.
  static Initial again(const Initial& before, Instant now) {
    return {ticks(now) + before.f, before.ts_offset, before.f};
  }
  // The same keyed hash of a number: values an attacker must not predict (the
  // challenge-ACK budget, tcp_stack.cpp).
  uint64_t prf(uint64_t x) const;

 private:
  uint64_t hash(Endpoint local, Endpoint remote) const;
  // M: 4 us ticks (RFC 6528 section 3).
  static uint32_t ticks(Instant now) { return static_cast<uint32_t>(now.ns() / 4000); }
  // SipHash under the first half of the secret with the second half absorbed as the
  // messages' common prefix (so that all 32 bytes matter), once, here.
  SipHasher salted_;
};

}  // namespace ws::tcp
