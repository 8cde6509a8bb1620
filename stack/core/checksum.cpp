#include "stack/core/checksum.hpp"

#include <bit>
#include <cstring>

namespace ws {

namespace {

// Folds a 128-bit accumulator of native-order 64-bit words to a 16-bit one's
// complement sum in network byte order (not complemented).
uint32_t fold_native(unsigned __int128 acc) {
  uint64_t sum = static_cast<uint64_t>(acc) + static_cast<uint64_t>(acc >> 64);
  if (sum < static_cast<uint64_t>(acc)) ++sum;  // end-around carry of the add above
  uint64_t s = (sum & 0xffffffffu) + (sum >> 32);
  s = (s & 0xffffffffu) + (s >> 32);
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  if constexpr (std::endian::native == std::endian::big) return static_cast<uint32_t>(s);
  return static_cast<uint32_t>(((s & 0xff) << 8) | ((s >> 8) & 0xff));
}

// Adds the trailing 0..7 bytes (big-endian 16-bit words, an odd last byte padded
// on the right) to `r` and folds to 32 bits.
uint32_t add_tail(uint64_t r, const uint8_t* p, size_t n) {
  while (n >= 2) {
    r += (static_cast<uint32_t>(p[0]) << 8) | p[1];
    p += 2;
    n -= 2;
  }
  if (n == 1) r += static_cast<uint32_t>(p[0]) << 8;
  while (r >> 32) r = (r & 0xffffffffu) + (r >> 32);
  return static_cast<uint32_t>(r);
}

}  // namespace

uint32_t csum_copy(uint8_t* dst, std::span<const uint8_t> src) {
  // The same deferred-carry sum as csum_partial, with each word stored as it is
  // loaded. Four words per step keep the loads, stores and adds in flight together.
  const uint8_t* p = src.data();
  size_t n = src.size();
  unsigned __int128 acc = 0;
  while (n >= 32) {
    uint64_t w[4];
    std::memcpy(w, p, 32);
    std::memcpy(dst, w, 32);
    acc += w[0];
    acc += w[1];
    acc += w[2];
    acc += w[3];
    p += 32;
    dst += 32;
    n -= 32;
  }
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    std::memcpy(dst, &w, 8);
    acc += w;
    p += 8;
    dst += 8;
    n -= 8;
  }
  if (n != 0) std::memcpy(dst, p, n);
  return add_tail(fold_native(acc), p, n);
}

uint32_t csum_partial(std::span<const uint8_t> data, uint32_t initial) {
  // Sum 64-bit native-order words into a wide accumulator; carries fold back at the
  // end (RFC 1071 section 2, "deferred carries"). A one's-complement sum of
  // byte-swapped words is the byte-swapped sum ("byte order independence"), so the
  // native sum is swapped once into network order at the end.
  const uint8_t* p = data.data();
  size_t n = data.size();
  unsigned __int128 acc = 0;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    acc += w;
    p += 8;
    n -= 8;
  }
  return add_tail(static_cast<uint64_t>(initial) + fold_native(acc), p, n);
}

}  // namespace ws
