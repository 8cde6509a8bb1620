#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "stack/wire/arp.hpp"
#include "tests/unit/wire/captured_frames.hpp"

namespace ws::wire {
namespace {

namespace td = ws::testdata;

const MacAddr kHostA = *MacAddr::parse("36:52:a6:a7:bf:74");
const MacAddr kHostB = *MacAddr::parse("42:d5:17:56:64:e4");
const Ipv4Addr kIpA = *Ipv4Addr::parse("10.99.0.1");
const Ipv4Addr kIpB = *Ipv4Addr::parse("10.99.0.2");

std::vector<uint8_t> body(std::span<const uint8_t> frame) {
  return {frame.begin() + td::kEthLen, frame.end()};
}

TEST(Arp, CapturedRequest) {
  ArpError err = ArpError::kTruncated;
  auto a = ArpView::parse(td::l3_of(td::kArpRequest), &err);
  ASSERT_TRUE(a);
  EXPECT_EQ(err, ArpError::kNone);
  EXPECT_EQ(a->op(), static_cast<uint16_t>(ArpOp::kRequest));
  EXPECT_EQ(a->sender_mac(), kHostA);
  EXPECT_EQ(a->sender_ip(), kIpA);
  EXPECT_TRUE(a->target_mac().is_zero());
  EXPECT_EQ(a->target_ip(), kIpB);
}

TEST(Arp, CapturedReply) {
  auto a = ArpView::parse(td::l3_of(td::kArpReply));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->op(), static_cast<uint16_t>(ArpOp::kReply));
  EXPECT_EQ(a->sender_mac(), kHostB);
  EXPECT_EQ(a->sender_ip(), kIpB);
  EXPECT_EQ(a->target_mac(), kHostA);
  EXPECT_EQ(a->target_ip(), kIpA);
}

TEST(Arp, EthernetPaddingIsIgnored) {
  // On the wire a 42-byte ARP frame is padded to the 60-byte minimum.
  auto b = body(td::kArpRequest);
  b.resize(46, 0);
  auto a = ArpView::parse(b);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->target_ip(), kIpB);
}

TEST(Arp, TruncatedAtEveryLength) {
  auto b = body(td::kArpReply);
  for (size_t n = 0; n < ArpView::kLen; ++n) {
    ArpError err = ArpError::kNone;
    EXPECT_FALSE(ArpView::parse(std::span(b).first(n), &err)) << n;
    EXPECT_EQ(err, ArpError::kTruncated) << n;
  }
  EXPECT_TRUE(ArpView::parse(std::span(b).first(ArpView::kLen)));
  EXPECT_FALSE(ArpView::parse({}));  // without an error pointer
}

TEST(Arp, BadFormatFields) {
  struct Case {
    size_t off;
    uint8_t value;
    const char* what;
  };
  for (const Case& c : {
           Case{0, 0x01, "htype 0x0101"},
           Case{1, 0x06, "htype 6 (IEEE 802)"},
           Case{1, 0x00, "htype 0"},
           Case{2, 0x86, "ptype 0x8600"},
           Case{3, 0x06, "ptype 0x0806"},
           Case{4, 0x08, "hlen 8"},
           Case{4, 0x00, "hlen 0"},
           Case{5, 0x10, "plen 16 (IPv6-sized)"},
           Case{5, 0x06, "plen 6"},
           Case{5, 0x00, "plen 0"},
       }) {
    auto b = body(td::kArpRequest);
    b[c.off] = c.value;
    ArpError err = ArpError::kNone;
    EXPECT_FALSE(ArpView::parse(b, &err)) << c.what;
    EXPECT_EQ(err, ArpError::kBadFormat) << c.what;
  }
}

TEST(Arp, OpcodeIsNotValidatedByTheView) {
  // The view reports any opcode; the ARP layer decides what it handles (RARP = 3).
  auto b = body(td::kArpRequest);
  b[7] = 3;
  auto a = ArpView::parse(b);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->op(), 3);
}

TEST(Arp, EmitReproducesCapturedBodies) {
  std::array<uint8_t, ArpView::kLen> out{};
  EXPECT_EQ(emit_arp(out.data(), ArpRepr{ArpOp::kRequest, kHostA, kIpA, MacAddr{}, kIpB}),
            ArpView::kLen);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), td::kArpRequest.begin() + td::kEthLen));
  emit_arp(out.data(), ArpRepr{ArpOp::kReply, kHostB, kIpB, kHostA, kIpA});
  EXPECT_TRUE(std::equal(out.begin(), out.end(), td::kArpReply.begin() + td::kEthLen));
}

TEST(Arp, EmitParseRoundTrip) {
  std::array<uint8_t, ArpView::kLen> out{};
  ArpRepr r{ArpOp::kReply, *MacAddr::parse("02:00:00:00:00:01"),
            Ipv4Addr::from_octets(255, 0, 128, 1), MacAddr::broadcast(), Ipv4Addr::broadcast()};
  emit_arp(out.data(), r);
  auto a = ArpView::parse(out);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->op(), 2);
  EXPECT_EQ(a->sender_mac(), r.sender_mac);
  EXPECT_EQ(a->sender_ip(), r.sender_ip);
  EXPECT_EQ(a->target_mac(), r.target_mac);
  EXPECT_EQ(a->target_ip(), r.target_ip);
}

}  // namespace
}  // namespace ws::wire
