#include "stack/codec/pattern_simd.hpp"

#include <array>

#include "stack/core/cpu.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WS_PATTERN_AVX2 1
#endif

namespace ws::pattern {

#ifdef WS_PATTERN_AVX2
namespace {

// The pattern of 8 consecutive words from `idx` (their low 32 bits, one per lane):
// byte j of word w is key byte (j % 8) + mix(w), mix(w) = (w * 0x9E3779B1 mod 2^32)
// >> 24 (framing.hpp). The 32-bit multiply gives the 8 mix values, a byte shuffle
// spreads each over its word, and a byte add (no carries between bytes, as the
// scalar SWAR form) adds the key.
struct Eight {
  __m256i lo;  // words 0..3
  __m256i hi;  // words 4..7
};

__attribute__((target("avx2"))) inline Eight eight_words(__m256i idx, __m256i key) {
  const __m256i mix = _mm256_srli_epi32(
      _mm256_mullo_epi32(idx, _mm256_set1_epi32(static_cast<int>(0x9E3779B1u))), 24);
  // Each 128-bit half of the shuffle source holds two mix values (bytes 0 and 4);
  // the control repeats byte 0 over the first word and byte 4 over the second.
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0,
                                          0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
  const __m256i src_lo = _mm256_permute4x64_epi64(mix, 0x50);  // qwords 0,0,1,1
  const __m256i src_hi = _mm256_permute4x64_epi64(mix, 0xFA);  // qwords 2,2,3,3
  return {_mm256_add_epi8(_mm256_shuffle_epi8(src_lo, spread), key),
          _mm256_add_epi8(_mm256_shuffle_epi8(src_hi, spread), key)};
}

// The pattern from word `word` on, 8 words per next().
struct Words {
  __m256i key;
  __m256i idx;
  __attribute__((target("avx2"))) Words(uint64_t k, uint64_t word)
      : key(_mm256_set1_epi64x(static_cast<int64_t>(k))),
        idx(_mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(word))),
                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))) {}
  __attribute__((target("avx2"))) Eight next() {
    Eight e = eight_words(idx, key);
    idx = _mm256_add_epi32(idx, _mm256_set1_epi32(8));
    return e;
  }
};

// The mix term of words 0 .. kStartWords - 1, each spread over its word's 8 bytes: the
// part of the pattern no message's key changes, so a message from offset 0 is its key
// added to these bytes.
alignas(64) constexpr std::array<uint8_t, kStartWords* 8> kStartMix = [] {
  std::array<uint8_t, kStartWords * 8> t{};
  for (size_t w = 0; w < kStartWords; ++w) {
    const auto mix = static_cast<uint8_t>((static_cast<uint32_t>(w) * 0x9E3779B1u) >> 24);
    for (size_t j = 0; j < 8; ++j) t[w * 8 + j] = mix;
  }
  return t;
}();

__attribute__((target("avx2"))) inline __m256i start_bytes(size_t at, __m256i key) {
  const auto* m = static_cast<const void*>(kStartMix.data() + at);
  return _mm256_add_epi8(_mm256_load_si256(static_cast<const __m256i*>(m)), key);
}

__attribute__((target("avx2"))) void fill_start_avx2(uint64_t key, uint8_t* out, size_t words) {
  const __m256i k = _mm256_set1_epi64x(static_cast<int64_t>(key));
  for (size_t at = 0; at < words * 8; at += 32)
    _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(out + at)), start_bytes(at, k));
}

__attribute__((target("avx2"))) bool match_start_avx2(uint64_t key, const uint8_t* in,
                                                      size_t words) {
  const __m256i k = _mm256_set1_epi64x(static_cast<int64_t>(key));
  for (size_t at = 0; at < words * 8; at += 32) {
    const __m256i a =
        _mm256_loadu_si256(static_cast<const __m256i*>(static_cast<const void*>(in + at)));
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, start_bytes(at, k))) != -1) return false;
  }
  return true;
}

__attribute__((target("avx2"))) size_t fill_avx2(uint64_t key, uint64_t word, uint8_t* out,
                                                 size_t words) {
  Words w(key, word);
  size_t done = 0;
  for (; words - done >= 8; done += 8) {
    Eight e = w.next();
    _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(out + done * 8)), e.lo);
    _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(out + done * 8 + 32)), e.hi);
  }
  return done;
}

__attribute__((target("avx2"))) size_t match_avx2(uint64_t key, uint64_t word, const uint8_t* in,
                                                  size_t words) {
  Words w(key, word);
  size_t done = 0;
  for (; words - done >= 8; done += 8) {
    Eight e = w.next();
    const __m256i a =
        _mm256_loadu_si256(static_cast<const __m256i*>(static_cast<const void*>(in + done * 8)));
    const __m256i b = _mm256_loadu_si256(
        static_cast<const __m256i*>(static_cast<const void*>(in + done * 8 + 32)));
    const __m256i eq = _mm256_and_si256(_mm256_cmpeq_epi8(a, e.lo), _mm256_cmpeq_epi8(b, e.hi));
    if (_mm256_movemask_epi8(eq) != -1) break;
  }
  return done;
}

}  // namespace
#endif

bool fill_start(uint64_t key, uint8_t* out, size_t words) {
#ifdef WS_PATTERN_AVX2
  if (cpu_has_avx2()) {
    fill_start_avx2(key, out, words);
    return true;
  }
#endif
  (void)key;
  (void)out;
  (void)words;
  return false;
}

bool match_start(uint64_t key, const uint8_t* in, size_t words) {
#ifdef WS_PATTERN_AVX2
  if (cpu_has_avx2()) return match_start_avx2(key, in, words);
#endif
  (void)key;
  (void)in;
  (void)words;
  return false;
}

size_t fill_words(uint64_t key, uint64_t word, uint8_t* out, size_t words) {
#ifdef WS_PATTERN_AVX2
  if (words >= 8 && cpu_has_avx2()) return fill_avx2(key, word, out, words);
#endif
  (void)key;
  (void)word;
  (void)out;
  (void)words;
  return 0;
}

size_t match_words(uint64_t key, uint64_t word, const uint8_t* in, size_t words) {
#ifdef WS_PATTERN_AVX2
  if (words >= 8 && cpu_has_avx2()) return match_avx2(key, word, in, words);
#endif
  (void)key;
  (void)word;
  (void)in;
  (void)words;
  return 0;
}

}  // namespace ws::pattern
