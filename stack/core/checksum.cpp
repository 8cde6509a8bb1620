#include "stack/core/checksum.hpp"

#include <bit>
#include <cstring>

#include "stack/core/cpu.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WS_CSUM_AVX2 1
#endif

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

#ifdef WS_CSUM_AVX2
// Below this the scalar loop is as fast (measured with tests/bench/micro_bench).
constexpr size_t kAvx2Min = 128;

// Sums (and, with kCopy, copies) whole 64-byte blocks from `p`, advancing p, dst and
// n past them; returns the sum as a 128-bit accumulator of native-order words, the
// same quantity the scalar loops build. Each 64-bit lane adds the two 32-bit halves
// of its word separately (a mask and a shift, no shuffles), so carries land in the
// lane's upper half and are folded once at the end (RFC 1071 section 2, deferred
// carries): a lane gains at most 2^34 per block, far from overflowing for any
// buffer that fits in memory. Four accumulators keep the adds independent.
template <bool kCopy>
__attribute__((target("avx2"))) unsigned __int128 sum_blocks_avx2(const uint8_t*& p, uint8_t*& dst,
                                                                  size_t& n) {
  const __m256i low32 = _mm256_set1_epi64x(0xffffffffLL);
  __m256i a0 = _mm256_setzero_si256();
  __m256i a1 = a0;
  __m256i a2 = a0;
  __m256i a3 = a0;
  while (n >= 64) {
    const __m256i v0 = _mm256_loadu_si256(static_cast<const __m256i*>(static_cast<const void*>(p)));
    const __m256i v1 =
        _mm256_loadu_si256(static_cast<const __m256i*>(static_cast<const void*>(p + 32)));
    if constexpr (kCopy) {
      _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(dst)), v0);
      _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(dst + 32)), v1);
      dst += 64;
    }
    a0 = _mm256_add_epi64(a0, _mm256_and_si256(v0, low32));
    a1 = _mm256_add_epi64(a1, _mm256_srli_epi64(v0, 32));
    a2 = _mm256_add_epi64(a2, _mm256_and_si256(v1, low32));
    a3 = _mm256_add_epi64(a3, _mm256_srli_epi64(v1, 32));
    p += 64;
    n -= 64;
  }
  // The high halves weigh 2^32 in their words; 2^32 = 1 in one's-complement
  // arithmetic modulo 2^16 - 1, so every lane simply adds up (four lanes of at most
  // 2^36 per block cannot overflow either).
  const __m256i sum = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(static_cast<__m256i*>(static_cast<void*>(lanes)), sum);
  unsigned __int128 acc = lanes[0];
  acc += lanes[1];
  acc += lanes[2];
  acc += lanes[3];
  return acc;
}
#endif

}  // namespace

uint32_t csum_copy(uint8_t* dst, std::span<const uint8_t> src) {
  // The same deferred-carry sum as csum_partial, with each word stored as it is
  // loaded. Four words per step keep the loads, stores and adds in flight together.
  const uint8_t* p = src.data();
  size_t n = src.size();
  unsigned __int128 acc = 0;
#ifdef WS_CSUM_AVX2
  if (n >= kAvx2Min && cpu_has_avx2()) {
    // Through copies: had p, dst and n themselves been passed by reference, they would
    // live in memory through the loops below (their address escapes), which doubled the
    // cost of a 64-byte copy.
    const uint8_t* ap = p;
    uint8_t* ad = dst;
    size_t an = n;
    acc = sum_blocks_avx2<true>(ap, ad, an);
    p = ap;
    dst = ad;
    n = an;
  }
#endif
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
#ifdef WS_CSUM_AVX2
  if (n >= kAvx2Min && cpu_has_avx2()) {
    uint8_t* no_copy = nullptr;
    acc = sum_blocks_avx2<false>(p, no_copy, n);
  }
#endif
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
