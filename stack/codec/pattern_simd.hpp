// Vector paths of the payload pattern (framing.hpp): whole 8-byte words, 64 bytes
// at a time with AVX2 where the CPU has it. A bulk `source` spends most of its
// time writing the pattern (a third of its samples at MTU 9000 before this).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ws::pattern {

// Writes words [word, word + words) of the pattern with this key to `out` (8 bytes
// each, little-endian), 8 words per step; returns how many it wrote: a multiple of
// 8, or 0 without AVX2. The caller writes the rest.
size_t fill_words(uint64_t key, uint64_t word, uint8_t* out, size_t words);

// How many of words [word, word + words) at `in` match, counted in steps of 8: stops
// at the first step with a mismatch (the caller's byte loop then finds it); 0
// without AVX2.
size_t match_words(uint64_t key, uint64_t word, const uint8_t* in, size_t words);

// A message from offset 0 of whole steps of 8 words, at most kStartWords (a ping's, a
// small source message's), is its key added to a table of the words' mix terms: a load
// and an add per 32 bytes, no multiplies, no per-word set-up. `words` is a multiple of 8 in
// (0, kStartWords].
inline constexpr size_t kStartWords = 64;
// Writes words [0, words); false (nothing written) without AVX2.
bool fill_start(uint64_t key, uint8_t* out, size_t words);
// True when AVX2 ran and words [0, words) at `in` all match; false otherwise (the
// caller's general check then finds the first wrong byte, or does the work itself).
bool match_start(uint64_t key, const uint8_t* in, size_t words);
// Whether a fill or check of `bytes` from offset 0 takes the two above.
inline constexpr bool start_sized(uint64_t offset, size_t bytes) {
  return offset == 0 && (bytes & 63) == 0 && bytes != 0 && bytes <= kStartWords * 8;
}

}  // namespace ws::pattern
