#include "stack/core/siphash.hpp"

#include <bit>
#include <cstring>

namespace ws {

namespace {
inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }
inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // one load, not eight byte loads and shifts
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline void sipround(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = rotl(v1, 13);
  v1 ^= v0;
  v0 = rotl(v0, 32);
  v2 += v3;
  v3 = rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = rotl(v1, 17);
  v1 ^= v2;
  v2 = rotl(v2, 32);
}
inline void compress(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3, uint64_t m) {
  v3 ^= m;
  sipround(v0, v1, v2, v3);
  sipround(v0, v1, v2, v3);
  v0 ^= m;
}
}  // namespace

SipHasher::SipHasher(const std::array<uint8_t, 16>& key) {
  const uint64_t k0 = load_le64(key.data()), k1 = load_le64(key.data() + 8);
  v0_ = k0 ^ 0x736f6d6570736575ull;
  v1_ = k1 ^ 0x646f72616e646f6dull;
  v2_ = k0 ^ 0x6c7967656e657261ull;
  v3_ = k1 ^ 0x7465646279746573ull;
}

void SipHasher::absorb(const uint8_t* prefix, size_t len) {
  for (size_t i = 0; i + 8 <= len; i += 8) compress(v0_, v1_, v2_, v3_, load_le64(prefix + i));
  absorbed_ += len / 8 * 8;
}

uint64_t SipHasher::finish(const uint8_t* msg, size_t len) const {
  uint64_t v0 = v0_, v1 = v1_, v2 = v2_, v3 = v3_;
  const size_t full = len / 8 * 8;
  for (size_t i = 0; i < full; i += 8) compress(v0, v1, v2, v3, load_le64(msg + i));
  // The last block: the remaining bytes and the low byte of the total length.
  uint64_t b = static_cast<uint64_t>(absorbed_ + len) << 56;
  for (size_t i = full; i < len; ++i) b |= static_cast<uint64_t>(msg[i]) << (8 * (i - full));
  compress(v0, v1, v2, v3, b);
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) sipround(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t siphash24(const std::array<uint8_t, 16>& key, const uint8_t* msg, size_t len) {
  return SipHasher(key).finish(msg, len);
}

}  // namespace ws
