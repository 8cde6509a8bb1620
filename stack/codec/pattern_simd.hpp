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

}  // namespace ws::pattern
