#include "stack/core/checksum.hpp"

#include <bit>
#include <cstring>

namespace ws {

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
  uint64_t sum = static_cast<uint64_t>(acc) + static_cast<uint64_t>(acc >> 64);
  if (sum < static_cast<uint64_t>(acc)) ++sum;  // end-around carry of the add above
  uint64_t s = (sum & 0xffffffffu) + (sum >> 32);
  s = (s & 0xffffffffu) + (s >> 32);
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  uint32_t net = static_cast<uint32_t>(((s & 0xff) << 8) | ((s >> 8) & 0xff));
  if constexpr (std::endian::native == std::endian::big) net = static_cast<uint32_t>(s);

  uint64_t r = static_cast<uint64_t>(initial) + net;
  while (n >= 2) {
    r += (static_cast<uint32_t>(p[0]) << 8) | p[1];
    p += 2;
    n -= 2;
  }
  if (n == 1) r += static_cast<uint32_t>(p[0]) << 8;
  while (r >> 32) r = (r & 0xffffffffu) + (r >> 32);
  return static_cast<uint32_t>(r);
}

}  // namespace ws
