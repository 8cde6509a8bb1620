// Initial sequence numbers per RFC 6528: ISN = M + F(localip, localport, remoteip,
// remoteport, secretkey), where M is a 4-microsecond timer and F a keyed hash.
#pragma once

#include <array>
#include <cstdint>

#include "stack/core/addr.hpp"
#include "stack/core/time.hpp"

namespace ws::tcp {

// SipHash-2-4 (Aumasson & Bernstein) of a short message under a 128-bit key.
uint64_t siphash24(const std::array<uint8_t, 16>& key, const uint8_t* msg, size_t len);

class IsnGenerator {
 public:
  explicit IsnGenerator(const std::array<uint8_t, 32>& secret);
  // RFC 6528 section 3. `now` drives M (one tick every 4 microseconds).
  uint32_t isn(Endpoint local, Endpoint remote, Instant now) const;
  // A per-connection timestamp offset (RFC 7323 section 5.4 / appendix on randomised
  // TSval), from the same keyed hash with a different domain byte.
  uint32_t ts_offset(Endpoint local, Endpoint remote) const;

 private:
  uint64_t hash(Endpoint local, Endpoint remote, uint8_t domain) const;
  std::array<uint8_t, 16> key_{};
  std::array<uint8_t, 16> salt_{};
};

}  // namespace ws::tcp
