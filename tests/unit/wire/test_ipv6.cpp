// IPv6 fixed header, the extension-header walk, ICMPv6 checksums and NDP options.
// Fixtures were built with scapy 2.5 (its checksums are the independent reference).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stack/core/checksum.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws::wire {
namespace {

std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> v;
  for (size_t i = 0; i + 1 < s.size(); i += 2) v.push_back(std::stoi(s.substr(i, 2), nullptr, 16));
  return v;
}

// IPv6(src=fe80::1, dst=ff02::1:ff00:2, hlim=255) / NS(tgt=2001:db8::2) / SrcLLAddr
const std::string kNs =
    "6000000000203afffe800000000000000000000000000001ff0200000000000000000001ff000002"
    "87004b5f0000000020010db80000000000000000000000020101020000000001";
// IPv6(2001:db8::2 -> 2001:db8::1) / EchoRequest(id=0x1234, seq=7, "abcdefg")
const std::string kEcho =
    "60000000000f3a4020010db800000000000000000000000220010db8000000000000000000000001"
    "800080d81234000761626364656667";

TEST(Ipv6View, FixedHeaderFields) {
  auto b = unhex(kNs);
  auto ip = Ipv6View::parse(b);
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->version(), 6);
  EXPECT_EQ(ip->payload_len(), 32);
  EXPECT_EQ(ip->next_header(), kIpProtoIcmpv6);
  EXPECT_EQ(ip->hop_limit(), 255);
  EXPECT_EQ(ip->src().to_string(), "fe80::1");
  EXPECT_EQ(ip->dst().to_string(), "ff02::1:ff00:2");
  EXPECT_FALSE(Ipv6View::parse(std::span(b).first(39)));
}

TEST(Ipv6View, EmitMatchesScapy) {
  auto want = unhex(kEcho);
  uint8_t out[40];
  Ipv6Repr r{*Ipv6Addr::parse("2001:db8::2"),
             *Ipv6Addr::parse("2001:db8::1"),
             kIpProtoIcmpv6,
             64,
             0,
             0,
             15};
  emit_ipv6(out, r);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 40),
            std::vector<uint8_t>(want.begin(), want.begin() + 40));
  Ipv6Repr tc = r;
  tc.traffic_class = 0xab;
  tc.flow_label = 0x12345;
  emit_ipv6(out, tc);
  auto ip = Ipv6View::parse(out);
  EXPECT_EQ(ip->traffic_class(), 0xab);
  EXPECT_EQ(ip->flow_label(), 0x12345u);
}

TEST(Icmpv6, ChecksumsAgreeWithScapy) {
  for (const auto& hex : {kNs, kEcho}) {
    auto b = unhex(hex);
    auto ip = *Ipv6View::parse(b);
    std::span<uint8_t> msg(b.data() + 40, ip.payload_len());
    // Verifying: the sum over pseudo header and message folds to zero.
    uint32_t sum = ipv6_pseudo_sum(ip.src(), ip.dst(), kIpProtoIcmpv6, ip.payload_len());
    EXPECT_EQ(csum_fold(csum_partial(msg, sum)), 0);
    const uint16_t want = load_be16(msg.data() + 2);
    fill_icmpv6_checksum(msg, ip.src(), ip.dst());
    EXPECT_EQ(load_be16(msg.data() + 2), want);
    msg[msg.size() - 1] ^= 1;  // one bit off: the check fails
    EXPECT_NE(csum_fold(csum_partial(msg, sum)), 0);
  }
  auto b = unhex(kEcho);
  auto icmp = Icmpv6View::parse(std::span(b).subspan(40));
  ASSERT_TRUE(icmp);
  EXPECT_EQ(icmp->type(), kIcmpv6EchoRequest);
  EXPECT_EQ(icmp->word1(), 0x12340007u);
}

TEST(NdpOptions, ParseAndRefuse) {
  auto b = unhex(kNs);
  NdpOptions o;
  ASSERT_TRUE(parse_ndp_options(std::span(b).subspan(40 + kNdpNeighborLen), o));
  ASSERT_TRUE(o.source_link);
  EXPECT_EQ(o.source_link->to_string(), "02:00:00:00:00:01");
  EXPECT_FALSE(o.target_link);

  uint8_t opt[8];
  emit_ndp_link_option(opt, kNdpOptTargetLinkAddr, *MacAddr::parse("02:00:00:00:00:09"));
  NdpOptions t;
  ASSERT_TRUE(parse_ndp_options(opt, t));
  EXPECT_EQ(t.target_link->to_string(), "02:00:00:00:00:09");

  const std::vector<std::vector<uint8_t>> bad = {
      {1, 0, 0, 0, 0, 0, 0, 0},                          // length 0 (RFC 4861 4.6)
      {1, 2, 0, 0, 0, 0, 0, 0},                          // runs past the end
      {1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},  // link option of 16 bytes
      {1},                                               // a lone byte
  };
  for (const auto& v : bad) {
    NdpOptions x;
    EXPECT_FALSE(parse_ndp_options(v, x)) << v.size();
  }
  std::vector<uint8_t> unknown = {200, 1, 0, 0, 0, 0, 0, 0};  // skipped
  NdpOptions u;
  EXPECT_TRUE(parse_ndp_options(unknown, u));
  EXPECT_TRUE(parse_ndp_options({}, u));
}

// An extension header: next header, length in 8-byte units less one, `body` padded.
std::vector<uint8_t> ext(uint8_t next, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> h(2 + body.size());
  h[0] = next;
  for (size_t i = 0; i < body.size(); ++i) h[2 + i] = body[i];
  while (h.size() % 8 != 0) h.push_back(0);
  h[1] = static_cast<uint8_t>(h.size() / 8 - 1);
  return h;
}

std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

std::optional<DropReason> walk(const std::vector<uint8_t>& p, uint8_t first, Ipv6Chain& c,
                               bool mcast = false) {
  return walk_ipv6_chain(PacketView(std::span<const uint8_t>(p)), first, mcast, c);
}

const std::vector<uint8_t> kUdp8 = {0, 7, 0, 7, 0, 8, 0, 0};

TEST(Ipv6Chain, NoExtensionHeaders) {
  Ipv6Chain c;
  EXPECT_FALSE(walk(kUdp8, 17, c));
  EXPECT_EQ(c.upper, 17);
  EXPECT_EQ(c.upper_off, 0u);
  EXPECT_EQ(c.upper_field, 6u);
}

// RFC 7112: a first fragment must hold the whole chain and the upper-layer header.
TEST(Ipv6Chain, FirstFragmentCompleteness) {
  auto complete = [](const std::vector<uint8_t>& p, uint8_t next) {
    return first_fragment_complete(PacketView(std::span<const uint8_t>(p)), next);
  };
  EXPECT_TRUE(complete(kUdp8, 17));
  EXPECT_FALSE(complete({0, 7, 0, 7, 0, 8, 0}, 17));  // 7 of UDP's 8 bytes
  EXPECT_TRUE(complete(std::vector<uint8_t>(20, 0), 6));
  EXPECT_FALSE(complete(std::vector<uint8_t>(19, 0), 6));
  EXPECT_TRUE(complete({128, 0, 0, 0}, kIpProtoIcmpv6));
  EXPECT_FALSE(complete({128, 0}, kIpProtoIcmpv6));
  EXPECT_FALSE(complete(ext(kIpProtoIcmpv6, {}), kIpv6DestOptions));  // nothing after it
  EXPECT_TRUE(complete(cat({ext(kIpProtoIcmpv6, {}), {128, 0, 0, 0}}), kIpv6DestOptions));
  EXPECT_FALSE(complete({kIpProtoIcmpv6, 0, 1, 4}, kIpv6DestOptions));  // runs past the end
  EXPECT_TRUE(complete({}, 200));  // an unknown protocol: no header length to ask for
}

TEST(Ipv6Chain, HopByHopAndDestOptionsWithPadding) {
  // Hop-by-hop with PadN and a router alert (type 5: 00 bits, skipped), then
  // destination options with Pad1s, then UDP.
  auto p = cat({ext(kIpv6DestOptions, {1, 1, 0, 5, 2, 0, 0}), ext(17, {0, 0, 0, 0, 0, 0}), kUdp8});
  Ipv6Chain c;
  EXPECT_FALSE(walk(p, kIpv6HopByHop, c));
  EXPECT_EQ(c.upper, 17);
  EXPECT_EQ(c.upper_off, 24u);
  EXPECT_EQ(c.upper_field, 56u);  // the destination options' Next Header
  EXPECT_FALSE(c.send_param_problem);
}

TEST(Ipv6Chain, HopByHopNotFirstIsRefused) {
  auto p = cat({ext(kIpv6HopByHop, {}), ext(17, {}), kUdp8});
  Ipv6Chain c;
  EXPECT_EQ(walk(p, kIpv6DestOptions, c), DropReason::kIpv6ExtBadOrder);
  EXPECT_TRUE(c.send_param_problem);
  EXPECT_EQ(c.param_code, 1);
  EXPECT_EQ(c.param_pointer, 40u);  // the Next Header field of the destination options
}

TEST(Ipv6Chain, UnknownOptionActions) {
  // RFC 8200 4.2: 00 skip, 01 discard, 10 discard + report, 11 report unless multicast.
  const std::pair<uint8_t, bool> cases[] = {
      {0x1e, false}, {0x5e, false}, {0x9e, true}, {0xde, true}};
  for (const auto& [type, report] : cases) {
    auto p = cat({ext(17, {type, 2, 0, 0, 1, 0}), kUdp8});
    Ipv6Chain c;
    auto r = walk(p, kIpv6DestOptions, c);
    if (type == 0x1e) {
      EXPECT_FALSE(r);
      continue;
    }
    EXPECT_EQ(r, DropReason::kIpv6UnknownOption) << int(type);
    EXPECT_EQ(c.send_param_problem, report) << int(type);
    if (report) {
      EXPECT_EQ(c.param_code, 2);
      EXPECT_EQ(c.param_pointer, 42u);  // from the start of the IPv6 header
    }
  }
  auto p = cat({ext(17, {0xde, 2, 0, 0, 1, 0}), kUdp8});
  Ipv6Chain c;
  EXPECT_EQ(walk(p, kIpv6DestOptions, c, true), DropReason::kIpv6UnknownOption);
  EXPECT_FALSE(c.send_param_problem);
}

TEST(Ipv6Chain, OptionRunningPastItsHeader) {
  auto p = cat({ext(17, {1, 9, 0, 0, 0, 0}), kUdp8});  // PadN of 9 in 6 bytes
  Ipv6Chain c;
  EXPECT_EQ(walk(p, kIpv6DestOptions, c), DropReason::kIpv6ExtTruncated);
}

TEST(Ipv6Chain, RoutingHeaders) {
  // Type 0 with segments left: refused (RFC 5095); with none left: ignored (RFC 8200 4.4).
  auto rh0 = cat({ext(17, {0, 1, 0, 0, 0, 0}), kUdp8});
  Ipv6Chain c;
  EXPECT_EQ(walk(rh0, kIpv6Routing, c), DropReason::kIpv6RoutingType0);
  EXPECT_EQ(c.param_code, 0);
  EXPECT_EQ(c.param_pointer, 42u);
  auto rh0_done = cat({ext(17, {0, 0, 0, 0, 0, 0}), kUdp8});
  Ipv6Chain d;
  EXPECT_FALSE(walk(rh0_done, kIpv6Routing, d));
  EXPECT_EQ(d.upper, 17);
  auto rh4 = cat({ext(17, {4, 2, 0, 0, 0, 0}), kUdp8});
  Ipv6Chain e;
  EXPECT_EQ(walk(rh4, kIpv6Routing, e), DropReason::kIpv6RoutingHeader);
}

TEST(Ipv6Chain, FragmentHeaders) {
  // A first fragment: the walk stops after the fragment header.
  std::vector<uint8_t> frag = {17, 0, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef};  // offset 0, M
  auto p = cat({frag, kUdp8});
  Ipv6Chain c;
  EXPECT_FALSE(walk(p, kIpv6Fragment, c));
  ASSERT_TRUE(c.fragment);
  EXPECT_EQ(c.upper, kIpv6Fragment);
  EXPECT_EQ(c.upper_off, 8u);
  EXPECT_TRUE(c.fragment->more);
  EXPECT_EQ(c.fragment->offset, 0u);
  EXPECT_EQ(c.fragment->ident, 0xdeadbeefu);
  EXPECT_EQ(c.fragment->next_header, 17);
  // A later one: offset 1448.
  frag[2] = static_cast<uint8_t>(1448 >> 8);
  frag[3] = static_cast<uint8_t>(1448 & 0xf8);
  Ipv6Chain d;
  EXPECT_FALSE(walk(cat({frag, kUdp8}), kIpv6Fragment, d));
  EXPECT_EQ(d.fragment->offset, 1448u);
  EXPECT_FALSE(d.fragment->more);
  // An atomic fragment (RFC 6946): stepped over, the packet continues whole.
  std::vector<uint8_t> atomic = {17, 0, 0, 0, 0, 0, 0, 1};
  Ipv6Chain a;
  EXPECT_FALSE(walk(cat({atomic, kUdp8}), kIpv6Fragment, a));
  EXPECT_FALSE(a.fragment);
  EXPECT_EQ(a.upper, 17);
  EXPECT_EQ(a.upper_off, 8u);
}

TEST(Ipv6Chain, BoundsAndTruncation) {
  std::vector<uint8_t> p;
  for (size_t i = 0; i < kIpv6MaxExtHeaders + 1; ++i) {
    auto h = ext(i == kIpv6MaxExtHeaders ? 17 : kIpv6DestOptions, {});
    p.insert(p.end(), h.begin(), h.end());
  }
  p.insert(p.end(), kUdp8.begin(), kUdp8.end());
  Ipv6Chain c;
  EXPECT_EQ(walk(p, kIpv6DestOptions, c), DropReason::kIpv6ExtChainTooLong);
  // The largest header (2 KiB) fits; but a chain past kIpv6MaxChainBytes does not go on.
  std::vector<uint8_t> big = ext(kIpv6DestOptions, std::vector<uint8_t>(600, 0));
  auto two = cat({big, ext(17, {}), kUdp8});
  Ipv6Chain d;
  EXPECT_EQ(walk(two, kIpv6DestOptions, d), DropReason::kIpv6ExtChainTooLong);
  auto hbh = ext(17, {});
  Ipv6Chain e;
  EXPECT_EQ(walk(std::vector<uint8_t>(hbh.begin(), hbh.begin() + 5), kIpv6HopByHop, e),
            DropReason::kIpv6ExtTruncated);
  Ipv6Chain f;
  EXPECT_EQ(walk({}, kIpv6HopByHop, f), DropReason::kIpv6ExtTruncated);
  Ipv6Chain g;
  EXPECT_EQ(walk({17, 0, 0, 1}, kIpv6Fragment, g), DropReason::kIpv6ExtTruncated);
}

TEST(Ipv6Chain, ChainedPacketView) {
  // The same chain split across three segments reads the same.
  auto p = cat({ext(kIpv6DestOptions, {1, 1, 0, 5, 2, 0, 0}), ext(17, {0, 0, 0, 0, 0, 0}), kUdp8});
  std::span<const uint8_t> all(p);
  PacketView::Segment segs[] = {all.first(3), all.subspan(3, 10), all.subspan(13)};
  Ipv6Chain c;
  EXPECT_FALSE(walk_ipv6_chain(PacketView(segs, p.size()), kIpv6HopByHop, false, c));
  EXPECT_EQ(c.upper_off, 24u);
}

}  // namespace
}  // namespace ws::wire
