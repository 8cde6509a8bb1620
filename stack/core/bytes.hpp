// Explicit network byte order access. Every header field goes through these so
// that nothing depends on host endianness or alignment.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace ws {

inline uint16_t load_be16(const uint8_t* p) {
  return static_cast<uint16_t>((static_cast<uint16_t>(p[0]) << 8) | p[1]);
}
inline uint32_t load_be32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}
inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
// One swapped 32-bit store where the host order is known: GCC merges byte-wise stores of
// two adjacent fields (the timestamps of every TCP segment sent) into one 64-bit value
// put together a byte at a time, 38 instructions for what takes 6.
inline void store_be32(uint8_t* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    v = __builtin_bswap32(v);
    std::memcpy(p, &v, sizeof v);
  } else if constexpr (std::endian::native == std::endian::big) {
    std::memcpy(p, &v, sizeof v);
  } else {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
  }
}

}  // namespace ws
