// TSO super-segment sizing: whole MSS multiples, never more than one IPv4 packet
// holds, and nothing when fewer than two segments would go out.
#include "stack/tcp/tso.hpp"

#include <gtest/gtest.h>

namespace ws::tcp {
namespace {

constexpr uint32_t kHdr = kTcpHeaderLen + kTimestampOptionLen;  // 32
constexpr uint32_t kMss1500 = 1500 - 40 - 12;                   // 1448
constexpr uint32_t kMss9000 = 9000 - 40 - 12;                   // 8948

TEST(TsoSizing, WholeMultiplesOfTheMss) {
  for (uint32_t avail : {2 * kMss1500, 2 * kMss1500 + 1, 10 * kMss1500 - 1, 33 * kMss1500 + 700}) {
    uint32_t n = tso_payload(avail, kMss1500, kHdr, 65535);
    EXPECT_EQ(n % kMss1500, 0u) << avail;
    EXPECT_LE(n, avail);
    EXPECT_GT(n + kMss1500, std::min(avail, 65535 - 20 - kHdr)) << "a whole MSS was left out";
  }
  EXPECT_EQ(tso_payload(10 * kMss1500 - 1, kMss1500, kHdr, 65535), 9 * kMss1500);
}

TEST(TsoSizing, NeverAboveOneIpv4Packet) {
  // 65535 - 20 - 32 = 65483 bytes of payload fit: 45 segments of 1448 (65160).
  EXPECT_EQ(tso_payload(1u << 30, kMss1500, kHdr, 65535), 45 * kMss1500);
  // A port that claims more than IPv4 can carry is held to 65535.
  EXPECT_EQ(tso_payload(1u << 30, kMss1500, kHdr, 1u << 20), 45 * kMss1500);
  // Jumbo MSS: 7 segments of 8948 = 62636.
  EXPECT_EQ(tso_payload(1u << 30, kMss9000, kHdr, 65535), 7 * kMss9000);
  for (uint32_t mss = 200; mss < 20000; mss += 97) {
    uint32_t n = tso_payload(1u << 30, mss, kHdr, 65535);
    EXPECT_LE(n + 20 + kHdr, 65535u) << mss;
    EXPECT_EQ(n % mss, 0u) << mss;
  }
}

TEST(TsoSizing, SmallerPortLimit) {
  // A port bounded by its segment count (say 16 KiB packets).
  uint32_t n = tso_payload(1u << 20, kMss1500, kHdr, 16384);
  EXPECT_EQ(n, 11 * kMss1500);
  EXPECT_LE(n + 20 + kHdr, 16384u);
}

TEST(TsoSizing, NothingBelowTwoSegmentsOrWithoutTso) {
  EXPECT_EQ(tso_payload(2 * kMss1500 - 1, kMss1500, kHdr, 65535), 0u);
  EXPECT_EQ(tso_payload(kMss1500, kMss1500, kHdr, 65535), 0u);
  EXPECT_EQ(tso_payload(1u << 20, kMss1500, kHdr, 0), 0u);
  EXPECT_EQ(tso_payload(1u << 20, 0, kHdr, 65535), 0u);
  // A limit that holds only one segment.
  EXPECT_EQ(tso_payload(1u << 20, kMss1500, kHdr, 1500), 0u);
  EXPECT_EQ(tso_payload(1u << 20, kMss9000, kHdr, 16384), 0u);
}

TEST(TsoSizing, FollowsAnMssChange) {
  // After the send MSS drops (say a path MTU of 1280), the same window yields
  // multiples of the new MSS.
  constexpr uint32_t kMss1280 = 1280 - 40 - 12;
  uint32_t before = tso_payload(30000, kMss1500, kHdr, 65535);
  uint32_t after = tso_payload(30000, kMss1280, kHdr, 65535);
  EXPECT_EQ(before, 20 * kMss1500);
  EXPECT_EQ(after, 24 * kMss1280);
  EXPECT_EQ(after % kMss1280, 0u);
}

TEST(TsoSegment, PortBoundOnCutFrames) {
  // No bound: the MSS.
  EXPECT_EQ(tso_segment(kMss1500, 0, kHdr), kMss1500);
  // net_tap counts every header against its MTU of 1500: 1500 - 14 - 20 - 32.
  EXPECT_EQ(tso_segment(kMss1500, 1500, kHdr), 1434u);
  // A bound above what the MSS needs changes nothing.
  EXPECT_EQ(tso_segment(kMss1500, 1514, kHdr), kMss1500);
  EXPECT_EQ(tso_segment(kMss1500, 66, kHdr), 0u);
  // Super-segments are whole multiples of the bounded segment.
  uint32_t seg = tso_segment(kMss1500, 1500, kHdr);
  uint32_t n = tso_payload(1u << 20, seg, kHdr, 65535);
  EXPECT_EQ(n % seg, 0u);
  EXPECT_EQ(n, 45 * seg);
}

}  // namespace
}  // namespace ws::tcp
