#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "stack/core/checksum.hpp"
#include "stack/wire/udp.hpp"
#include "tests/unit/wire/captured_frames.hpp"

namespace ws::wire {
namespace {

namespace td = ws::testdata;

const Ipv4Addr kIpA = *Ipv4Addr::parse("10.99.0.1");
const Ipv4Addr kIpB = *Ipv4Addr::parse("10.99.0.2");

std::vector<uint8_t> l4(std::span<const uint8_t> frame) {
  auto s = td::l4_of(frame);
  return {s.begin(), s.end()};
}

TEST(Udp, CapturedDnsQuery) {
  auto u = UdpView::parse(td::l4_of(td::kUdpDnsQuery));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->src_port(), 40000);
  EXPECT_EQ(u->dst_port(), 5353);
  EXPECT_EQ(u->length(), 37);
  EXPECT_EQ(u->checksum(), 0x5810);
  EXPECT_TRUE(u->length_valid());
  ASSERT_EQ(u->payload().size(), 29u);
  EXPECT_EQ(u->payload()[0], 0x12);  // DNS transaction id 0x1234
  EXPECT_EQ(u->payload()[1], 0x34);
  std::string_view qname(reinterpret_cast<const char*>(u->payload().data()) + 13, 7);
  EXPECT_EQ(qname, "example");
  EXPECT_EQ(u->datagram().size(), 37u);
  EXPECT_EQ(csum_fold(csum_partial(u->datagram(), ipv4_pseudo_sum(kIpA, kIpB, 17, 37))), 0);
}

TEST(Udp, TruncatedAtEveryLength) {
  auto b = td::l4_of(td::kUdpDnsQuery);
  for (size_t n = 0; n <= b.size(); ++n) {
    auto u = UdpView::parse(b.first(n));
    ASSERT_EQ(u.has_value(), n >= UdpView::kHeaderLen) << n;
    // Declared 37 bytes: valid only when all of them are present.
    if (u) {
      EXPECT_EQ(u->length_valid(), n == b.size()) << n;
    }
  }
}

TEST(Udp, BadLengthField) {
  for (uint16_t len : {0, 1, 7, 38, 0xffff}) {
    auto b = l4(td::kUdpDnsQuery);
    store_be16(b.data() + 4, len);
    auto u = UdpView::parse(b);
    ASSERT_TRUE(u);
    EXPECT_FALSE(u->length_valid()) << len;
  }
  for (uint16_t len : {8, 9, 36, 37}) {
    auto b = l4(td::kUdpDnsQuery);
    store_be16(b.data() + 4, len);
    auto u = UdpView::parse(b);
    ASSERT_TRUE(u);
    ASSERT_TRUE(u->length_valid()) << len;
    EXPECT_EQ(u->payload().size(), len - 8u);  // trailing bytes beyond length ignored
  }
}

TEST(Udp, EmitReproducesCapturedDatagram) {
  auto want = td::l4_of(td::kUdpDnsQuery);
  std::vector<uint8_t> out(want.size(), 0xcc);
  std::copy(want.begin() + 8, want.end(), out.begin() + 8);
  EXPECT_EQ(emit_udp(out.data(), 40000, 5353, 29), 8u);
  EXPECT_EQ(load_be16(out.data() + 6), 0);  // checksum left for the IP output path
  uint16_t c = csum_fold(csum_partial(out, ipv4_pseudo_sum(kIpA, kIpB, 17, 37)));
  store_be16(out.data() + 6, c);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), want.begin()));
}

TEST(Udp, EmitParseRoundTrip) {
  std::array<uint8_t, 8> out{};
  emit_udp(out.data(), 65535, 1, 0);
  auto u = UdpView::parse(out);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->src_port(), 65535);
  EXPECT_EQ(u->dst_port(), 1);
  EXPECT_EQ(u->length(), 8);
  EXPECT_TRUE(u->length_valid());
  EXPECT_TRUE(u->payload().empty());
}

}  // namespace
}  // namespace ws::wire
