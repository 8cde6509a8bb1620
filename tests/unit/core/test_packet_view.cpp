// PacketView: a window over a list of segments. Every operation is checked
// against the same bytes laid out contiguously, for every way of cutting them
// into two and three pieces (odd lengths and empty pieces included).
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "stack/core/checksum.hpp"
#include "stack/core/packet_view.hpp"

namespace ws {
namespace {

std::vector<uint8_t> bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 37 + 11 + (i >> 3));
  return v;
}

// The pieces of `b` cut at `cuts` (sorted offsets; repeats make empty pieces).
std::vector<PacketView::Segment> cut(const std::vector<uint8_t>& b, std::vector<size_t> cuts) {
  std::vector<PacketView::Segment> segs;
  size_t from = 0;
  cuts.push_back(b.size());
  for (size_t c : cuts) {
    segs.emplace_back(b.data() + from, c - from);
    from = c;
  }
  return segs;
}

std::vector<uint8_t> flat(const PacketView& v) {
  std::vector<uint8_t> out(v.size());
  EXPECT_TRUE(v.copy_out(0, out));
  return out;
}

TEST(PacketView, OneSegmentIsContiguousAndInPlace) {
  auto b = bytes(100);
  PacketView v(b);
  EXPECT_EQ(v.size(), 100u);
  EXPECT_TRUE(v.contiguous());
  EXPECT_EQ(v.head().data(), b.data());
  uint64_t pulled = 0;
  uint8_t scratch[60];
  auto h = v.pullup(60, scratch, pulled);
  EXPECT_EQ(h.data(), b.data()) << "read in place";
  EXPECT_EQ(pulled, 0u);
  EXPECT_EQ(v.tail(30).head().data(), b.data() + 30);
  EXPECT_EQ(csum_fold(v.csum()), csum_fold(csum_partial(b)));
  // A view shorter than its one segment sums its own bytes only, from `initial`.
  EXPECT_EQ(csum_fold(v.first(33).csum(0x1234)),
            csum_fold(csum_partial(std::span(b).first(33), 0x1234)));
}

// Checksums over two and three pieces at every cut equal the contiguous sum,
// for even and odd totals and odd pieces anywhere (RFC 1071 byte swapping).
TEST(PacketView, ChecksumOverEveryCutEqualsTheContiguousSum) {
  for (size_t n : {1u, 2u, 7u, 20u, 61u, 64u}) {
    auto b = bytes(n);
    const uint32_t want = csum_fold(csum_partial(b, 0x1234));
    for (size_t i = 0; i <= n; ++i) {
      const auto v2_segs = cut(b, {i});  // outlives the view
      PacketView v2(v2_segs, n);
      ASSERT_EQ(csum_fold(v2.csum(0x1234)), want) << n << " cut " << i;
      for (size_t j = i; j <= n; ++j) {
        const auto v3_segs = cut(b, {i, j});  // outlives the view
        PacketView v3(v3_segs, n);
        ASSERT_EQ(csum_fold(v3.csum(0x1234)), want) << n << " cuts " << i << "," << j;
      }
    }
  }
}

TEST(PacketView, LongBuffersOfOddPiecesSumAsOne) {
  auto b = bytes(9001);
  std::vector<size_t> cuts;
  for (size_t c = 1; c < b.size(); c += 2047) cuts.push_back(c);  // odd pieces
  const auto v_segs = cut(b, cuts);                               // outlives the view
  PacketView v(v_segs, b.size());
  EXPECT_EQ(csum_fold(v.csum()), csum_fold(csum_partial(b)));
  EXPECT_EQ(flat(v), b);
}

// A header read through pullup at every position of the cut: the same bytes,
// copied only when the cut falls inside it.
TEST(PacketView, PullupCopiesOnlyAStraddlingHeader) {
  auto b = bytes(120);
  for (size_t c = 0; c <= b.size(); ++c) {
    const auto v_segs = cut(b, {c});  // outlives the view
    PacketView v(v_segs, b.size());
    for (size_t off : {0u, 14u, 34u}) {
      uint8_t scratch[60];
      uint64_t pulled = 0;
      auto h = v.tail(off).pullup(40, scratch, pulled);
      ASSERT_EQ(h.size(), 40u);
      EXPECT_TRUE(std::equal(h.begin(), h.end(), b.begin() + static_cast<ptrdiff_t>(off)));
      bool straddles = c > off && c < off + 40;
      EXPECT_EQ(pulled, straddles ? 1u : 0u) << "cut " << c << " header at " << off;
      EXPECT_EQ(h.data() == scratch, straddles);
    }
  }
}

TEST(PacketView, TailAndFirstSkipAndClipAcrossPieces) {
  auto b = bytes(50);
  const auto v_segs = cut(b, {0, 3, 3, 17, 40});  // empty pieces; outlives the view
  PacketView v(v_segs, b.size());
  for (size_t off = 0; off <= b.size(); ++off) {
    for (size_t len = 0; len + off <= b.size(); len += 7) {
      PacketView w = v.tail(off).first(len);
      ASSERT_EQ(w.size(), len);
      std::vector<uint8_t> want(b.begin() + static_cast<ptrdiff_t>(off),
                                b.begin() + static_cast<ptrdiff_t>(off + len));
      ASSERT_EQ(flat(w), want) << off << "+" << len;
      size_t pieces_total = 0;
      w.for_each([&](std::span<const uint8_t> s) {
        EXPECT_FALSE(s.empty()) << "for_each skips empty pieces";
        pieces_total += s.size();
      });
      EXPECT_EQ(pieces_total, len);
    }
  }
  EXPECT_TRUE(v.tail(50).empty());
  EXPECT_TRUE(v.tail(51).empty());
}

// A chain whose claimed length exceeds its pieces reads short; reads past the
// end fail without touching anything.
TEST(PacketView, TruncatedChainsReadShortAndRefuseReadsPastTheEnd) {
  auto b = bytes(30);
  const auto v_segs = cut(b, {10, 20});  // outlives the view
  PacketView v(v_segs, 1000);
  EXPECT_EQ(v.size(), 30u);
  uint8_t out[40] = {};
  EXPECT_FALSE(v.copy_out(0, out));
  EXPECT_FALSE(v.copy_out(31, std::span(out, 0)));
  EXPECT_TRUE(v.copy_out(30, std::span(out, 0)));
  EXPECT_FALSE(v.copy_out(25, std::span(out, 6)));
  uint64_t pulled = 0;
  uint8_t scratch[60];
  EXPECT_TRUE(v.pullup(31, scratch, pulled).empty());
  EXPECT_TRUE(v.tail(25).pullup(6, scratch, pulled).empty());
  EXPECT_EQ(pulled, 0u);
  // Scratch too small for a straddling header: refused, not overrun.
  EXPECT_TRUE(v.pullup(12, std::span(scratch, 8), pulled).empty());
  PacketView none(std::span<const PacketView::Segment>{}, 10);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.csum(), 0u);
}

// A chain longer than the datagram: first() bounds every read to it.
TEST(PacketView, FirstIgnoresBytesBeyondTheDatagram) {
  auto b = bytes(100);
  const auto v_segs = cut(b, {40, 90});  // outlives the view
  PacketView v(v_segs, b.size());
  PacketView d = v.first(41);
  EXPECT_EQ(d.size(), 41u);
  EXPECT_EQ(csum_fold(d.csum()), csum_fold(csum_partial(std::span(b).first(41))));
  EXPECT_FALSE(d.contiguous());
  EXPECT_TRUE(v.first(40).contiguous());
}

}  // namespace
}  // namespace ws
