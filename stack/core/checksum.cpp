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
  // Each step adds the halves with an end-around carry (one add, one add-with-carry), so
  // the result is 0 only for a zero sum, as the folds of csum_fold expect.
  const auto lo = static_cast<uint64_t>(acc);
  uint64_t sum = lo + static_cast<uint64_t>(acc >> 64);
  sum += sum < lo ? 1 : 0;
  const auto low32 = static_cast<uint32_t>(sum);
  uint32_t s = low32 + static_cast<uint32_t>(sum >> 32);
  s += s < low32 ? 1 : 0;
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  if constexpr (std::endian::native == std::endian::big) return s;
  return ((s & 0xff) << 8) | ((s >> 8) & 0xff);
}

// The trailing 0..7 bytes as one native-order word, zero-padded as memcpy into a zeroed
// word would leave them: summed with the others, an odd last byte is padded on the right
// (RFC 1071 section 4.1). Fixed-size pieces, not a byte loop or a variable memcpy (the
// tail of every TCP segment summed or copied). With kCopy, the bytes are copied to `dst` too.
template <bool kCopy>
uint64_t tail_word(const uint8_t* p, uint8_t* dst, size_t n) {
  uint8_t b[8] = {};
  size_t k = 0;
  if (n & 4) {
    std::memcpy(b, p, 4);
    if constexpr (kCopy) std::memcpy(dst, p, 4);
    k = 4;
  }
  if (n & 2) {
    std::memcpy(b + k, p + k, 2);
    if constexpr (kCopy) std::memcpy(dst + k, p + k, 2);
    k += 2;
  }
  if (n & 1) {
    b[k] = p[k];
    if constexpr (kCopy) dst[k] = p[k];
  }
  uint64_t w;
  std::memcpy(&w, b, 8);
  return w;
}

// `initial` (a partial sum in network order) plus a folded 16-bit one, folded to 32 bits.
uint32_t add_initial(uint32_t initial, uint32_t folded) {
  const uint64_t r = uint64_t{initial} + folded;
  return static_cast<uint32_t>((r & 0xffffffffu) + (r >> 32));
}

#ifdef WS_CSUM_AVX2
// Below this the scalar loop is as fast (measured with tests/bench/micro_bench).
constexpr size_t kAvx2Min = 128;

// Sums (and, with kCopy, copies) the whole 64-byte blocks of the first `n` bytes at `p`
// (the caller moves past them: n rounded down to 64); returns the sum as a 128-bit
// accumulator of native-order words, the same quantity the scalar loops build. Each 64-bit
// lane adds the two 32-bit halves of its word separately (a mask and a shift, no shuffles),
// so carries land in the lane's upper half and are folded once at the end (RFC 1071 section
// 2, deferred carries): a lane gains at most 2^34 per block, far from overflowing for any
// buffer that fits in memory. Four accumulators keep the adds independent. Pointers and
// count by value: through references they were stored and reloaded in every block (the
// bytes read might alias them), 19 instructions a block instead of 13.
template <bool kCopy>
__attribute__((target("avx2"))) unsigned __int128 sum_blocks_avx2(const uint8_t* p, uint8_t* dst,
                                                                  size_t n) {
  const __m256i low32 = _mm256_set1_epi64x(0xffffffffLL);
  __m256i a0 = _mm256_setzero_si256();
  __m256i a1 = a0;
  __m256i a2 = a0;
  __m256i a3 = a0;
  for (const uint8_t* end = p + (n & ~size_t{63}); p != end; p += 64) {
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

// 64-bit words summed with their carries counted apart (2^64 = 1 modulo 2^16 - 1, RFC 1071
// section 2, deferred carries): an add and an add-with-carry per word.
struct WordSum {
  uint64_t sum = 0;
  uint64_t carries = 0;
  void add(uint64_t w) {
    sum += w;
    carries += sum < w ? 1 : 0;
  }
  unsigned __int128 total() const { return (static_cast<unsigned __int128>(carries) << 64) | sum; }
};

inline uint64_t load64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// The scalar sum (with kCopy, also the copy to `dst`) of `n` bytes at `p`: four words per
// step, then single words, then the tail. Pointers and count by value, so that they stay in
// registers.
template <bool kCopy>
unsigned __int128 sum_scalar(const uint8_t* p, uint8_t* dst, size_t n) {
  WordSum a;
  while (n >= 32) {
    const uint64_t w0 = load64(p);
    const uint64_t w1 = load64(p + 8);
    const uint64_t w2 = load64(p + 16);
    const uint64_t w3 = load64(p + 24);
    if constexpr (kCopy) {
      std::memcpy(dst, &w0, 8);
      std::memcpy(dst + 8, &w1, 8);
      std::memcpy(dst + 16, &w2, 8);
      std::memcpy(dst + 24, &w3, 8);
      dst += 32;
    }
    a.add(w0);
    a.add(w1);
    a.add(w2);
    a.add(w3);
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    const uint64_t w = load64(p);
    if constexpr (kCopy) {
      std::memcpy(dst, &w, 8);
      dst += 8;
    }
    a.add(w);
    p += 8;
    n -= 8;
  }
  if (n != 0) a.add(tail_word<kCopy>(p, dst, n));
  return a.total();
}

}  // namespace

uint32_t csum_copy(uint8_t* dst, std::span<const uint8_t> src) {
  // The same deferred-carry sum as csum_partial, with each word stored as it is
  // loaded. Four words per step keep the loads, stores and adds in flight together.
  const uint8_t* p = src.data();
  size_t n = src.size();
  unsigned __int128 acc = 0;
#ifdef WS_CSUM_AVX2
  if (n >= kAvx2Min && cpu_has_avx2()) {
    acc = sum_blocks_avx2<true>(p, dst, n);
    const size_t blocks = n & ~size_t{63};
    p += blocks;
    dst += blocks;
    n -= blocks;
  }
#endif
  return fold_native(acc + sum_scalar<true>(p, dst, n));
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
    acc = sum_blocks_avx2<false>(p, nullptr, n);
    const size_t blocks = n & ~size_t{63};
    p += blocks;
    n -= blocks;
  }
#endif
  return add_initial(initial, fold_native(acc + sum_scalar<false>(p, nullptr, n)));
}

}  // namespace ws
