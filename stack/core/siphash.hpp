// SipHash-2-4 (Aumasson & Bernstein): the stack's one keyed hash, for values a peer must
// not predict (initial sequence numbers, SYN cookies, stable link-local identifiers).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ws {

// SipHash-2-4 of a short message under a 128-bit key.
uint64_t siphash24(const std::array<uint8_t, 16>& key, const uint8_t* msg, size_t len);

// The same hash taken in two steps: a fixed prefix of whole 8-byte blocks is absorbed
// once (a salt that every message starts with), and finish() hashes prefix + `msg`
// from that state. Equal to siphash24(key, prefix || msg), without re-compressing the
// prefix per message.
class SipHasher {
 public:
  explicit SipHasher(const std::array<uint8_t, 16>& key);
  // `len` must be a multiple of 8.
  void absorb(const uint8_t* prefix, size_t len);
  uint64_t finish(const uint8_t* msg, size_t len) const;

 private:
  uint64_t v0_ = 0, v1_ = 0, v2_ = 0, v3_ = 0;
  size_t absorbed_ = 0;
};

}  // namespace ws
