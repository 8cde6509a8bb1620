#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "stack/wire/ethernet.hpp"
#include "tests/unit/wire/captured_frames.hpp"

namespace ws::wire {
namespace {

namespace td = ws::testdata;

const MacAddr kHostA = *MacAddr::parse("36:52:a6:a7:bf:74");
const MacAddr kHostB = *MacAddr::parse("42:d5:17:56:64:e4");

// The captured echo request with an 802.1Q tag (TCI `tci`) inserted after the MACs.
std::vector<uint8_t> tagged(std::span<const uint8_t> frame, uint16_t tci) {
  std::vector<uint8_t> v(frame.size() + 4);
  for (size_t i = 0; i < 12; ++i) v[i] = frame[i];
  v[12] = 0x81;
  v[13] = 0x00;
  v[14] = static_cast<uint8_t>(tci >> 8);
  v[15] = static_cast<uint8_t>(tci);
  for (size_t i = 12; i < frame.size(); ++i) v[i + 4] = frame[i];
  return v;
}

TEST(Ethernet, CapturedArpRequest) {
  auto e = EthernetView::parse(td::kArpRequest);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->dst().is_broadcast());
  EXPECT_EQ(e->src(), kHostA);
  EXPECT_EQ(e->ethertype(), kEtherTypeArp);
  EXPECT_FALSE(e->has_vlan());
  EXPECT_EQ(e->vlan_tci(), 0);
  EXPECT_EQ(e->vlan_id(), 0);
  EXPECT_EQ(e->header_len(), 14u);
  EXPECT_EQ(e->payload().size(), 28u);
  EXPECT_EQ(e->payload().data(), td::kArpRequest.data() + 14);
}

TEST(Ethernet, CapturedIpv4Frames) {
  auto e = EthernetView::parse(td::kIcmpEchoRequest);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->dst(), kHostB);
  EXPECT_EQ(e->src(), kHostA);
  EXPECT_FALSE(e->dst().is_multicast());
  EXPECT_EQ(e->ethertype(), kEtherTypeIpv4);
  EXPECT_EQ(e->payload().size(), 84u);
  auto r = EthernetView::parse(td::kTcpSynAck);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->dst(), kHostA);
  EXPECT_EQ(r->src(), kHostB);
  EXPECT_EQ(r->ethertype(), kEtherTypeIpv4);
}

TEST(Ethernet, TruncatedAtEveryLength) {
  for (size_t n = 0; n < td::kArpRequest.size(); ++n) {
    auto e = EthernetView::parse(std::span(td::kArpRequest).first(n));
    if (n < 14) {
      EXPECT_FALSE(e) << n;
    } else {
      ASSERT_TRUE(e) << n;
      EXPECT_EQ(e->payload().size(), n - 14);
      EXPECT_EQ(e->ethertype(), kEtherTypeArp);
    }
  }
}

TEST(Ethernet, VlanTaggedFrame) {
  // PCP 5, DEI 0, VID 10.
  auto f = tagged(td::kIcmpEchoRequest, 0xa00a);
  auto e = EthernetView::parse(f);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->has_vlan());
  EXPECT_EQ(e->vlan_tci(), 0xa00a);
  EXPECT_EQ(e->vlan_id(), 10);
  EXPECT_EQ(e->ethertype(), kEtherTypeIpv4);  // the inner type
  EXPECT_EQ(e->header_len(), 18u);
  ASSERT_EQ(e->payload().size(), 84u);
  EXPECT_TRUE(
      std::equal(e->payload().begin(), e->payload().end(), td::kIcmpEchoRequest.begin() + 14));
  EXPECT_EQ(e->src(), kHostA);
  EXPECT_EQ(e->dst(), kHostB);

  // VID 4095 with DEI set: the VID mask keeps 12 bits only.
  auto g = tagged(td::kArpRequest, 0x1fff);
  auto v = EthernetView::parse(g);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->vlan_id(), 0x0fff);
  EXPECT_EQ(v->ethertype(), kEtherTypeArp);
}

TEST(Ethernet, VlanTaggedTruncatedAtEveryLength) {
  auto f = tagged(td::kArpRequest, 0x0064);
  for (size_t n = 0; n <= f.size(); ++n) {
    auto e = EthernetView::parse(std::span(f).first(n));
    if (n < 18) {
      EXPECT_FALSE(e) << n;  // a tag that does not fit is a truncated frame
    } else {
      ASSERT_TRUE(e) << n;
      EXPECT_EQ(e->vlan_id(), 100);
      EXPECT_EQ(e->payload().size(), n - 18);
    }
  }
}

TEST(Ethernet, OnlyOneTagIsParsed) {
  // QinQ-style double 802.1Q: the "inner" EtherType is again 0x8100, which upper
  // layers drop as an unknown type.
  auto once = tagged(td::kArpRequest, 10);
  auto twice = tagged(once, 20);
  auto e = EthernetView::parse(twice);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->vlan_id(), 20);
  EXPECT_EQ(e->ethertype(), kEtherTypeVlan);
  // An 802.1ad S-tag (0x88a8) is not treated as a tag at all.
  auto s = once;
  s[12] = 0x88;
  s[13] = 0xa8;
  auto sv = EthernetView::parse(s);
  ASSERT_TRUE(sv);
  EXPECT_FALSE(sv->has_vlan());
  EXPECT_EQ(sv->ethertype(), 0x88a8);
}

TEST(Ethernet, EmitMatchesCapturedHeader) {
  std::array<uint8_t, 14> out{};
  EXPECT_EQ(emit_ethernet(out.data(), MacAddr::broadcast(), kHostA, kEtherTypeArp), 14u);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), td::kArpRequest.begin()));
  emit_ethernet(out.data(), kHostB, kHostA, kEtherTypeIpv4);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), td::kTcpSyn.begin()));
}

TEST(Ethernet, EmitParseRoundTrip) {
  std::array<uint8_t, 64> buf{};
  for (uint16_t type : {kEtherTypeIpv4, kEtherTypeArp, kEtherTypeIpv6, uint16_t{0x0600}}) {
    size_t n = emit_ethernet(buf.data(), kHostA, kHostB, type);
    auto e = EthernetView::parse(buf);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->header_len(), n);
    EXPECT_EQ(e->dst(), kHostA);
    EXPECT_EQ(e->src(), kHostB);
    EXPECT_EQ(e->ethertype(), type);
    EXPECT_FALSE(e->has_vlan());
  }
  for (uint16_t tci : {uint16_t{0}, uint16_t{1}, uint16_t{0x0fff}, uint16_t{0xe123}}) {
    size_t n = emit_ethernet_vlan(buf.data(), kHostA, kHostB, tci, kEtherTypeIpv4);
    EXPECT_EQ(n, 18u);
    auto e = EthernetView::parse(buf);
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->has_vlan());
    EXPECT_EQ(e->header_len(), n);
    EXPECT_EQ(e->vlan_tci(), tci);
    EXPECT_EQ(e->vlan_id(), tci & 0x0fff);
    EXPECT_EQ(e->ethertype(), kEtherTypeIpv4);
    EXPECT_EQ(e->payload().size(), buf.size() - 18);
  }
  // The tagged emitter writes exactly what tagged() builds by hand.
  auto f = tagged(td::kIcmpEchoRequest, 0xa00a);
  emit_ethernet_vlan(buf.data(), kHostB, kHostA, 0xa00a, kEtherTypeIpv4);
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 18, f.begin()));
}

}  // namespace
}  // namespace ws::wire
