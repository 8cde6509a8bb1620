// The vector paths of the payload pattern (stack/codec/pattern_simd) against the
// byte-wise definition: long fills at every alignment, word indices that wrap the
// 32 bits the mix term uses, and the check finding every wrong byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "stack/codec/framing.hpp"
#include "stack/codec/pattern_simd.hpp"
#include "stack/core/cpu.hpp"

namespace ws {
namespace {

using Bytes = std::vector<uint8_t>;

TEST(PatternSimd, LongFillsMatchBytewiseAtEveryAlignment) {
  for (uint64_t seq : {0ull, 3ull, 1ull << 33}) {
    for (uint64_t off = 0; off < 24; ++off) {
      for (size_t len : {63u, 64u, 65u, 71u, 72u, 127u, 128u, 129u, 600u, 9000u}) {
        Bytes b(len);
        fill_pattern(seq, off, b);
        for (size_t i = 0; i < len; ++i) {
          ASSERT_EQ(b[i], pattern_byte(seq, off + i))
              << seq << " " << off << " " << len << " " << i;
        }
        EXPECT_EQ(check_pattern(seq, off, b), len);
      }
    }
  }
}

TEST(PatternSimd, WordIndicesAcrossTwoToThe32Wrap) {
  // mix() uses the low 32 bits of the word index; offsets of a framing-none stream
  // pass 2^35 bytes (2^32 words) after 32 GiB.
  const uint64_t start = ((uint64_t{1} << 32) - 5) * 8;
  Bytes b(200);
  fill_pattern(0, start, b);
  for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], pattern_byte(0, start + i)) << i;
  EXPECT_EQ(check_pattern(0, start, b), b.size());
}

TEST(PatternSimd, MessagesFromTheStartMatchBytewise) {
  // Whole steps of 8 words from offset 0 take the table of mix terms (fill_start and
  // match_start) up to 512 bytes; 576 and the sizes between steps take the general path.
  for (uint64_t seq : {0ull, 9ull, 1ull << 40}) {
    for (size_t len = 56; len <= 584; len += 8) {
      EXPECT_EQ(pattern::start_sized(0, len), len % 64 == 0 && len <= 512) << len;
      Bytes b(len);
      fill_pattern(seq, 0, b);
      for (size_t i = 0; i < len; ++i) ASSERT_EQ(b[i], pattern_byte(seq, i)) << seq << " " << len;
      EXPECT_EQ(check_pattern(seq, 0, b), len);
      EXPECT_NE(check_pattern(seq + 1, 0, b), len);  // another message's key
    }
  }
  EXPECT_FALSE(pattern::start_sized(8, 64));
  EXPECT_FALSE(pattern::start_sized(0, 0));
}

TEST(PatternSimd, CheckFromTheStartFindsEveryWrongByte) {
  for (size_t len : {64u, 512u}) {
    Bytes m(len);
    fill_pattern(77, 0, m);
    for (size_t i = 0; i < len; ++i) {
      Bytes bad = m;
      bad[i] ^= 0x40;
      ASSERT_EQ(check_pattern(77, 0, bad), i) << len;
    }
  }
}

TEST(PatternSimd, CheckReportsEveryWrongByteInALongMessage) {
  Bytes m(2048);
  fill_pattern(41, 16, m);
  for (size_t i = 0; i < m.size(); ++i) {
    Bytes bad = m;
    bad[i] ^= 0x01;
    ASSERT_EQ(check_pattern(41, 16, bad), i);
  }
}

TEST(PatternSimd, VectorPathRunsWhereTheCpuHasIt) {
  // On an AVX2 machine (this project's target) whole steps of 8 words are written
  // by the vector path; elsewhere it declines and the scalar loop does everything.
  Bytes b(640);
  size_t words = pattern::fill_words(pattern_key(5), 0, b.data(), b.size() / 8);
  EXPECT_EQ(words, cpu_has_avx2() ? 80u : 0u);
  if (words != 0) {
    for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], pattern_byte(5, i)) << i;
    EXPECT_EQ(pattern::match_words(pattern_key(5), 0, b.data(), 80), 80u);
    b[333] ^= 4;
    EXPECT_EQ(pattern::match_words(pattern_key(5), 0, b.data(), 80), 40u);  // 333 is in step 5
  }
}

}  // namespace
}  // namespace ws
