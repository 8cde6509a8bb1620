// The fused copy-and-sum (csum_copy), sums of pieces at odd offsets
// (csum_add_at) and TxWriter over segments of every size: each result equals a
// one-pass RFC 1071 reference over the same bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "stack/core/checksum.hpp"
#include "stack/core/tx_writer.hpp"

namespace ws {
namespace {

// RFC 1071, word by word; an odd final byte is padded on the right.
uint16_t ref_sum16(std::span<const uint8_t> d) {
  uint64_t s = 0;
  size_t i = 0;
  for (; i + 1 < d.size(); i += 2) s += (uint32_t{d[i]} << 8) | d[i + 1];
  if (i < d.size()) s += uint32_t{d[i]} << 8;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}
uint16_t fold16(uint32_t s) { return static_cast<uint16_t>(~csum_fold(s)); }

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(CsumCopy, CopiesAndSumsLikeCsumPartialAtEveryLengthAndAlignment) {
  auto src = random_bytes(600, 1);
  std::vector<uint8_t> dst(640);
  for (size_t len = 0; len <= 300; ++len) {
    for (size_t a = 0; a < 8; ++a) {
      std::fill(dst.begin(), dst.end(), uint8_t{0x5a});
      auto in = std::span<const uint8_t>(src).subspan(a * 3, len);
      uint32_t s = csum_copy(dst.data() + a, in);
      ASSERT_EQ(fold16(s), ref_sum16(in)) << len << " at " << a;
      ASSERT_EQ(fold16(s), fold16(csum_partial(in)));
      ASSERT_TRUE(std::equal(in.begin(), in.end(), dst.begin() + static_cast<ptrdiff_t>(a)));
      ASSERT_EQ(dst[a + len], 0x5a) << "nothing written past the end";
      if (a > 0) {
        ASSERT_EQ(dst[a - 1], 0x5a);
      }
    }
  }
}

TEST(CsumAddAt, PiecesSplitAtAnyOffsetSumToTheWhole) {
  auto d = random_bytes(257, 2);
  const uint16_t whole = ref_sum16(d);
  for (size_t cut1 = 0; cut1 <= d.size(); cut1 += 1) {
    size_t cut2 = std::min(d.size(), cut1 + 1 + cut1 % 13);
    std::span<const uint8_t> s(d);
    uint32_t sum = csum_partial(s.first(cut1));
    sum = csum_add_at(sum, csum_partial(s.subspan(cut1, cut2 - cut1)), cut1);
    sum = csum_add_at(sum, csum_partial(s.subspan(cut2)), cut2);
    ASSERT_EQ(fold16(sum), whole) << cut1 << "/" << cut2;
  }
  // Partial sums near the 32-bit limit keep their carries.
  uint32_t big = 0xfffffffeu;
  EXPECT_EQ(fold16(csum_add_at(big, big, 0)), fold16(csum_add_at(csum_add_at(0, big, 0), big, 0)));
  EXPECT_EQ(fold16(csum_add_at(0, 0x12345678u, 1)), 0xac68) << "0x1234+0x5678 = 0x68ac, swapped";
}

// Writes `data` through a TxWriter into a first piece of `first` bytes and
// segments of `seg` bytes, in writes of `chunk` bytes; checks bytes and sum.
void check_writer(const std::vector<uint8_t>& data, size_t first, size_t seg, size_t chunk) {
  std::vector<std::vector<uint8_t>> mem;
  std::vector<uint8_t> head(first);
  std::vector<TxSeg> segs;
  size_t left = data.size() - first;
  mem.reserve(left / seg + 1);
  while (left > 0) {
    size_t n = std::min(left, seg);
    mem.emplace_back(n + 1, uint8_t{0xee});  // one guard byte after each segment
    segs.push_back(TxSeg{mem.back().data(), static_cast<uint32_t>(n)});
    left -= n;
  }
  TxWriter w(head, segs, true);
  for (size_t off = 0; off < data.size(); off += chunk) {
    size_t n = std::min(chunk, data.size() - off);
    ASSERT_TRUE(w.write(std::span<const uint8_t>(data).subspan(off, n)));
  }
  EXPECT_EQ(w.written(), data.size());
  EXPECT_FALSE(w.write(std::span<const uint8_t>(data).first(1))) << "the frame is full";
  std::vector<uint8_t> got(head);
  for (size_t i = 0; i < segs.size(); ++i) {
    got.insert(got.end(), segs[i].data, segs[i].data + segs[i].len);
    EXPECT_EQ(mem[i].back(), 0xee) << "segment " << i << " overrun";
  }
  EXPECT_EQ(got, data) << first << "/" << seg << "/" << chunk;
  EXPECT_EQ(fold16(w.sum()), ref_sum16(data)) << first << "/" << seg << "/" << chunk;
}

TEST(TxWriter, SegmentBoundariesAtOddAndEvenOffsets) {
  auto data = random_bytes(9000, 3);
  for (size_t first : {0, 1, 2, 7, 1979, 2048}) {
    for (size_t seg : {1, 3, 8, 999, 2048}) {
      for (size_t chunk : {1, 5, 1448, 9000}) {
        if (seg == 1 && chunk == 1) continue;  // slow and covered by the other cases
        check_writer(data, first, seg, chunk);
      }
    }
  }
}

TEST(TxWriter, WithoutSummingItOnlyCopies) {
  auto data = random_bytes(100, 4);
  std::vector<uint8_t> a(33), b(67);
  std::vector<TxSeg> segs{{b.data(), 67}};
  TxWriter w(a, segs, false);
  ASSERT_TRUE(w.write(data));
  EXPECT_EQ(w.sum(), 0u);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), data.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + 33));
}

}  // namespace
}  // namespace ws
