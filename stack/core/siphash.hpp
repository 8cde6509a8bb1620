// SipHash-2-4 (Aumasson & Bernstein): the stack's one keyed hash, for values a peer must
// not predict (initial sequence numbers, SYN cookies, stable link-local identifiers).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ws {

// SipHash-2-4 of a short message under a 128-bit key.
uint64_t siphash24(const std::array<uint8_t, 16>& key, const uint8_t* msg, size_t len);

}  // namespace ws
