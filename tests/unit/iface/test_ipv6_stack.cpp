// IPv6 through the whole stack on a virtual clock: duplicate address detection,
// neighbour discovery both ways, ICMPv6 echo, and the drops of hostile input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"
#include "tests/support/ipv6_frames.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

using wire::Icmpv6View;
using wire::Ipv6View;

// A sent frame, checked as IPv6 with a valid ICMPv6 checksum.
struct Sent6 {
  MacAddr eth_dst;
  Ipv6Addr src, dst;
  uint8_t hop_limit = 0;
  std::vector<uint8_t> msg;
};

// IPv6 carrying ICMPv6 directly (not an MLD report behind its Hop-by-Hop header).
bool is_icmpv6(const std::vector<uint8_t>& f) {
  return f.size() > kEth + 6 && load_be16(f.data() + 12) == wire::kEtherTypeIpv6 &&
         f[kEth + 6] == wire::kIpProtoIcmpv6;
}

Sent6 parse_sent(const std::vector<uint8_t>& f) {
  Sent6 s;
  EXPECT_GE(f.size(), kEth + Ipv6View::kHeaderLen + 4);
  EXPECT_EQ(load_be16(f.data() + 12), wire::kEtherTypeIpv6);
  EXPECT_EQ(MacAddr::from_bytes(f.data() + 6), kOurMac);
  s.eth_dst = MacAddr::from_bytes(f.data());
  auto ip = *Ipv6View::parse(std::span(f).subspan(kEth));
  EXPECT_EQ(ip.version(), 6);
  EXPECT_EQ(ip.next_header(), wire::kIpProtoIcmpv6);
  s.src = ip.src();
  s.dst = ip.dst();
  s.hop_limit = ip.hop_limit();
  s.msg.assign(f.begin() + kEth + 40, f.begin() + kEth + 40 + ip.payload_len());
  uint32_t sum =
      ipv6_pseudo_sum(s.src, s.dst, wire::kIpProtoIcmpv6, static_cast<uint32_t>(s.msg.size()));
  EXPECT_EQ(csum_fold(csum_partial(s.msg, sum)), 0) << "ICMPv6 checksum";
  return s;
}

// A harness whose addresses finished DAD, with the peer's link address known.
struct Ready {
  StackHarness h{FakePacketIo::Options{}, StackConfig{}, v6_interface()};
  explicit Ready(bool learn_peer = true) {
    h.stack.start(h.now());
    h.advance(Duration::seconds(1));
    h.advance(Duration::seconds(1));
    h.io.clear_sent();
    if (learn_peer) {
      h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), ns_msg(kOur6, kPeerMac)));
      h.io.clear_sent();
    }
  }
};

TEST(Ipv6Dad, ProbesEachAddressThenUsesIt) {
  StackHarness h(FakePacketIo::Options{}, StackConfig{}, v6_interface());
  h.stack.start(h.now());
  h.advance(Duration::zero());
  auto sent = h.io.take_sent();
  std::vector<Sent6> ns;
  for (auto& f : sent) {
    if (is_icmpv6(f.bytes)) ns.push_back(parse_sent(f.bytes));
  }
  ASSERT_EQ(ns.size(), 2u);  // the link-local and the global address
  for (size_t i = 0; i < 2; ++i) {
    const Ipv6Addr target = i == 0 ? kOurLl : kOur6;
    EXPECT_TRUE(ns[i].src.is_unspecified());
    EXPECT_EQ(ns[i].dst, target.solicited_node());
    EXPECT_EQ(ns[i].eth_dst, target.solicited_node().multicast_mac());
    EXPECT_EQ(ns[i].hop_limit, 255);
    ASSERT_EQ(ns[i].msg.size(), 24u);  // RFC 4862 5.4.2: no source link-layer option
    EXPECT_EQ(ns[i].msg[0], wire::kIcmpv6NeighborSolicit);
    EXPECT_EQ(Ipv6Addr::from_bytes(ns[i].msg.data() + 8), target);
  }
  auto states = h.stack.ipv6_addresses(h.port);
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].second, Stack::Ipv6AddrState::kTentative);
  // Tentative: an echo to it is not answered (RFC 4862 5.4).
  h.rx(icmp6(V6{}, echo_msg(1, 1, 8)));
  EXPECT_EQ(h.drops(DropReason::kIpv6NotForUs), 1u);
  EXPECT_TRUE(h.io.take_sent().empty());
  h.advance(Duration::seconds(1));
  states = h.stack.ipv6_addresses(h.port);
  EXPECT_EQ(states[0].second, Stack::Ipv6AddrState::kPreferred);
  EXPECT_EQ(states[1].second, Stack::Ipv6AddrState::kPreferred);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(Ipv6Dad, AdvertisementForATentativeAddressMakesItDuplicate) {
  StackConfig cfg;
  std::vector<Ipv6Addr> reported;
  cfg.on_duplicate_address = [&](uint16_t, const Ipv6Addr& a) { reported.push_back(a); };
  StackHarness h(FakePacketIo::Options{}, cfg, v6_interface(2));
  h.stack.start(h.now());
  h.advance(Duration::zero());
  h.io.clear_sent();
  h.rx(icmp6(ndp(kPeer6, Ipv6Addr::all_nodes(), Ipv6Addr::all_nodes().multicast_mac()),
             na_msg(kOur6, wire::kNaFlagOverride, kPeerMac)));
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0], kOur6);
  EXPECT_EQ(h.stack.counters().ndp_dad_duplicates, 1u);
  for (int i = 0; i < 3; ++i) h.advance(Duration::seconds(1));
  auto states = h.stack.ipv6_addresses(h.port);
  EXPECT_EQ(states[0].second, Stack::Ipv6AddrState::kPreferred);  // the link-local one
  EXPECT_EQ(states[1].second, Stack::Ipv6AddrState::kDuplicate);
  h.io.clear_sent();
  // A duplicate address is never used: solicitations for it go unanswered.
  h.rx(icmp6(ndp(kPeer6, kOur6.solicited_node(), kOur6.solicited_node().multicast_mac()),
             ns_msg(kOur6, kPeerMac)));
  EXPECT_TRUE(h.io.take_sent().empty());
  EXPECT_EQ(h.drops(DropReason::kIpv6NotForUs) + h.drops(DropReason::kNdpNotForUs), 1u);
}

TEST(Ipv6Dad, AnotherNodesProbeForTheSameAddressMakesItDuplicate) {
  StackHarness h(FakePacketIo::Options{}, StackConfig{}, v6_interface());
  h.stack.start(h.now());
  h.advance(Duration::zero());
  h.rx(icmp6(ndp(Ipv6Addr{}, kOurLl.solicited_node(), kOurLl.solicited_node().multicast_mac()),
             ns_msg(kOurLl, std::nullopt)));
  EXPECT_EQ(h.stack.ipv6_addresses(h.port)[0].second, Stack::Ipv6AddrState::kDuplicate);
}

TEST(Ipv6Ndp, SolicitationIsAnsweredForEachAddress) {
  Ready r(false);
  StackHarness& h = r.h;
  for (const Ipv6Addr& target : {kOur6, kOurLl}) {
    SCOPED_TRACE(target.to_string());
    const Ipv6Addr from = target.is_link_local() ? kPeerLl : kPeer6;
    h.rx(icmp6(ndp(from, target.solicited_node(), target.solicited_node().multicast_mac()),
               ns_msg(target, kPeerMac)));
    auto sent = h.io.take_sent();
    ASSERT_EQ(sent.size(), 1u);
    Sent6 na = parse_sent(sent[0].bytes);
    EXPECT_EQ(na.eth_dst, kPeerMac);
    EXPECT_EQ(na.src, target);
    EXPECT_EQ(na.dst, from);
    EXPECT_EQ(na.hop_limit, 255);
    ASSERT_EQ(na.msg.size(), 32u);
    EXPECT_EQ(na.msg[0], wire::kIcmpv6NeighborAdvert);
    EXPECT_EQ(load_be32(na.msg.data() + 4), wire::kNaFlagSolicited | wire::kNaFlagOverride);
    EXPECT_EQ(Ipv6Addr::from_bytes(na.msg.data() + 8), target);
    wire::NdpOptions o;
    ASSERT_TRUE(wire::parse_ndp_options(std::span(na.msg).subspan(24), o));
    EXPECT_EQ(o.target_link, kOurMac);
  }
  // A unicast solicitation (a probe) to our address is answered the same way.
  h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), ns_msg(kOur6, kPeerMac)));
  EXPECT_EQ(h.io.take_sent().size(), 1u);
  // A DAD probe for an address we own: answered to all nodes, not solicited.
  h.rx(icmp6(ndp(Ipv6Addr{}, kOur6.solicited_node(), kOur6.solicited_node().multicast_mac()),
             ns_msg(kOur6, std::nullopt)));
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  Sent6 na = parse_sent(sent[0].bytes);
  EXPECT_EQ(na.dst, Ipv6Addr::all_nodes());
  EXPECT_EQ(na.eth_dst, Ipv6Addr::all_nodes().multicast_mac());
  EXPECT_EQ(load_be32(na.msg.data() + 4), wire::kNaFlagOverride);
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(h.stack.counters().ndp_adverts_out, 4u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(Ipv6Ndp, InvalidMessagesAreCountedAndUnanswered) {
  Ready r(false);
  StackHarness& h = r.h;
  const V6 mc = ndp(kPeer6, kOur6.solicited_node(), kOur6.solicited_node().multicast_mac());
  V6 hop = mc;
  hop.hop_limit = 254;  // routed from elsewhere (RFC 4861 7.1.1)
  h.rx(icmp6(hop, ns_msg(kOur6, kPeerMac)));
  EXPECT_EQ(h.drops(DropReason::kNdpBadHopLimit), 1u);
  auto bad_len = ns_msg(kOur6, kPeerMac);
  bad_len[25] = 0;  // option length 0
  h.rx(icmp6(mc, bad_len));
  EXPECT_EQ(h.drops(DropReason::kNdpBadOptions), 1u);
  auto bad_code = ns_msg(kOur6, kPeerMac);
  bad_code[1] = 1;
  h.rx(icmp6(mc, bad_code));
  auto mcast_target = ns_msg(Ipv6Addr::all_nodes(), kPeerMac);
  h.rx(icmp6(mc, mcast_target));
  auto short_ns = ns_msg(kOur6, std::nullopt);
  short_ns.resize(20);
  h.rx(icmp6(mc, short_ns));
  // DAD (from ::) must go to a solicited-node group and carry no link-layer option.
  h.rx(icmp6(ndp(Ipv6Addr{}, kOur6, kOurMac), ns_msg(kOur6, std::nullopt)));
  h.rx(icmp6(ndp(Ipv6Addr{}, mc.dst, mc.eth_dst), ns_msg(kOur6, kPeerMac)));
  // A solicited advertisement to a multicast group.
  h.rx(icmp6(ndp(kPeer6, Ipv6Addr::all_nodes(), Ipv6Addr::all_nodes().multicast_mac()),
             na_msg(kPeer6, wire::kNaFlagSolicited, kPeerMac)));
  EXPECT_EQ(h.drops(DropReason::kNdpMalformed), 6u);
  auto corrupt = icmp6(mc, ns_msg(kOur6, kPeerMac));
  corrupt.back() ^= 0x10;
  h.rx(corrupt);
  EXPECT_EQ(h.drops(DropReason::kIcmpv6BadChecksum), 1u);
  // A solicitation for another node's address (to our group, or to us directly).
  h.rx(icmp6(mc, ns_msg(*Ipv6Addr::parse("2001:db8::99"), kPeerMac)));
  h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), ns_msg(*Ipv6Addr::parse("2001:db8::99"), kPeerMac)));
  EXPECT_EQ(h.drops(DropReason::kNdpNotForUs), 2u);
  EXPECT_TRUE(h.io.take_sent().empty());
}

TEST(Ipv6Echo, RepliesForEveryPayloadSize) {
  Ready r;
  StackHarness& h = r.h;
  for (size_t n = 0; n <= 1452; ++n) {
    SCOPED_TRACE("payload " + std::to_string(n));
    auto req = echo_msg(static_cast<uint16_t>(n), static_cast<uint16_t>(n * 3), n);
    h.rx(icmp6(V6{}, req));
    auto sent = h.io.take_sent();
    ASSERT_EQ(sent.size(), 1u);
    Sent6 rep = parse_sent(sent[0].bytes);
    EXPECT_EQ(rep.eth_dst, kPeerMac);
    EXPECT_EQ(rep.src, kOur6);
    EXPECT_EQ(rep.dst, kPeer6);
    ASSERT_EQ(rep.msg.size(), req.size());
    EXPECT_EQ(rep.msg[0], wire::kIcmpv6EchoReply);
    EXPECT_EQ(rep.msg[1], 0);
    EXPECT_TRUE(std::equal(req.begin() + 4, req.end(), rep.msg.begin() + 4));
  }
  EXPECT_EQ(h.stack.counters().icmpv6_echo_replies_out, 1453u);
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(Ipv6Echo, UnknownNeighbourIsSolicitedFirst) {
  Ready r(false);
  StackHarness& h = r.h;
  h.rx(icmp6(V6{}, echo_msg(9, 1, 32)));
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);  // the reply waits; a solicitation goes out
  Sent6 ns = parse_sent(sent[0].bytes);
  EXPECT_EQ(ns.dst, kPeer6.solicited_node());
  EXPECT_EQ(ns.src, kOur6);  // the global address: same prefix as the target
  EXPECT_EQ(ns.msg[0], wire::kIcmpv6NeighborSolicit);
  EXPECT_EQ(ns.msg.size(), 32u);  // with our source link-layer address
  h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac),
             na_msg(kPeer6, wire::kNaFlagSolicited | wire::kNaFlagOverride, kPeerMac)));
  sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  Sent6 rep = parse_sent(sent[0].bytes);
  EXPECT_EQ(rep.msg[0], wire::kIcmpv6EchoReply);
  EXPECT_EQ(rep.eth_dst, kPeerMac);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(Ipv6Echo, NeighbourLearnedFromASolicitationIsProbedAfterTheDelay) {
  Ready r;  // the peer is known from its solicitation: STALE
  StackHarness& h = r.h;
  h.rx(icmp6(V6{}, echo_msg(3, 3, 8)));
  ASSERT_EQ(h.io.take_sent().size(), 1u);  // the reply, at once; the entry goes DELAY
  h.advance(Duration::seconds(5));         // DELAY_FIRST_PROBE_TIME: a unicast probe
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  Sent6 ns = parse_sent(sent[0].bytes);
  EXPECT_EQ(ns.msg[0], wire::kIcmpv6NeighborSolicit);
  EXPECT_EQ(ns.dst, kPeer6);
  EXPECT_EQ(ns.eth_dst, kPeerMac);
  h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), na_msg(kPeer6, wire::kNaFlagSolicited, std::nullopt)));
  for (int i = 0; i < 4; ++i) h.advance(Duration::seconds(1));
  EXPECT_TRUE(h.io.take_sent().empty());  // confirmed: no more probes
  EXPECT_EQ(h.total_drops(), 0u);
}

TEST(Ipv6Echo, UnresolvedNeighbourDropsTheReply) {
  Ready r(false);
  StackHarness& h = r.h;
  const uint64_t before = h.stack.counters().ndp_solicits_out;
  h.rx(icmp6(V6{}, echo_msg(9, 1, 32)));
  for (int i = 0; i < 4; ++i) h.advance(Duration::seconds(1));
  EXPECT_EQ(h.drops(DropReason::kNdpResolveFailed), 1u);
  EXPECT_EQ(h.stack.counters().ndp_solicits_out - before, 3u);  // MAX_MULTICAST_SOLICIT
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(Ipv6Input, HeaderChecks) {
  Ready r;
  StackHarness& h = r.h;
  auto ok = icmp6(V6{}, echo_msg(1, 1, 8));
  auto trunc = ok;
  trunc.resize(kEth + 39);
  h.rx(trunc);
  EXPECT_EQ(h.drops(DropReason::kIpv6Truncated), 1u);
  auto ver = ok;
  ver[kEth] = 0x40;
  h.rx(ver);
  EXPECT_EQ(h.drops(DropReason::kIpv6BadVersion), 1u);
  auto len = ok;
  store_be16(len.data() + kEth + 4, 200);
  h.rx(len);
  EXPECT_EQ(h.drops(DropReason::kIpv6BadPayloadLength), 1u);
  V6 msrc;
  msrc.src = Ipv6Addr::all_nodes();
  h.rx(icmp6(msrc, echo_msg(1, 1, 8)));
  EXPECT_EQ(h.drops(DropReason::kIpv6BadSource), 1u);
  V6 other;
  other.dst = *Ipv6Addr::parse("2001:db8::77");
  h.rx(icmp6(other, echo_msg(1, 1, 8)));
  EXPECT_EQ(h.drops(DropReason::kIpv6NotForUs), 1u);
  // A multicast group we are not in is filtered at the Ethernet layer.
  V6 group;
  group.dst = *Ipv6Addr::parse("ff02::1:ff00:77");
  group.eth_dst = group.dst.multicast_mac();
  h.rx(icmp6(group, echo_msg(1, 1, 8)));
  EXPECT_EQ(h.drops(DropReason::kEthNotForUs), 1u);
  // Ethernet padding after a short packet is ignored.
  auto padded = ok;
  padded.resize(padded.size() + 6, 0);
  h.rx(padded);
  EXPECT_EQ(h.io.take_sent().size(), 1u);
}

TEST(Ipv6Input, ExtensionHeadersAndParameterProblems) {
  Ready r;
  StackHarness& h = r.h;
  // Destination options (PadN) before ICMPv6: walked, then the echo is answered.
  std::vector<uint8_t> dopt = {wire::kIpProtoIcmpv6, 0, 1, 4, 0, 0, 0, 0};
  auto echo = echo_msg(2, 2, 16);
  wire::fill_icmpv6_checksum(echo, kPeer6, kOur6);
  std::vector<uint8_t> p = dopt;
  p.insert(p.end(), echo.begin(), echo.end());
  h.rx(v6_frame(V6{}, wire::kIpv6DestOptions, p));
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(parse_sent(sent[0].bytes).msg[0], wire::kIcmpv6EchoReply);
  // A type 0 routing header with segments left: refused with a Parameter Problem
  // pointing at its Segments Left... field (RFC 5095, RFC 8200 4.4).
  std::vector<uint8_t> rh0 = {wire::kIpProtoIcmpv6, 0, 0, 1, 0, 0, 0, 0};
  p = rh0;
  p.insert(p.end(), echo.begin(), echo.end());
  h.rx(v6_frame(V6{}, wire::kIpv6Routing, p));
  EXPECT_EQ(h.drops(DropReason::kIpv6RoutingType0), 1u);
  sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  Sent6 pp = parse_sent(sent[0].bytes);
  EXPECT_EQ(pp.msg[0], wire::kIcmpv6ParamProblem);
  EXPECT_EQ(pp.msg[1], 0);
  EXPECT_EQ(load_be32(pp.msg.data() + 4), 42u);
  EXPECT_EQ(pp.dst, kPeer6);
  // The quote is the offending packet.
  EXPECT_EQ(Ipv6Addr::from_bytes(pp.msg.data() + 8 + 8), kPeer6);
  // An upper layer we do not carry: Parameter Problem code 1 at the Next Header field.
  h.rx(v6_frame(V6{}, 200, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(h.drops(DropReason::kIpv6UnknownNextHeader), 1u);
  sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  pp = parse_sent(sent[0].bytes);
  EXPECT_EQ(pp.msg[1], 1);
  EXPECT_EQ(load_be32(pp.msg.data() + 4), 6u);
  // A short middle fragment is refused; a well-formed one is held for reassembly.
  std::vector<uint8_t> frag = {wire::kIpProtoIcmpv6, 0, 0, 1, 0, 0, 0, 5, 1, 2, 3};
  h.rx(v6_frame(V6{}, wire::kIpv6Fragment, frag));
  EXPECT_EQ(h.drops(DropReason::kIpv6FragmentBadLength), 1u);
  frag.resize(8 + 16);
  h.rx(v6_frame(V6{}, wire::kIpv6Fragment, frag));
  EXPECT_EQ(h.stack.reassembly6().entries(), 1u);
  // An atomic fragment (RFC 6946, 8021) is processed whole.
  std::vector<uint8_t> atomic = {wire::kIpProtoIcmpv6, 0, 0, 0, 0, 0, 0, 6};
  p = atomic;
  p.insert(p.end(), echo.begin(), echo.end());
  h.io.clear_sent();
  h.rx(v6_frame(V6{}, wire::kIpv6Fragment, p));
  sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(parse_sent(sent[0].bytes).msg[0], wire::kIcmpv6EchoReply);
}

TEST(Ipv6Input, ErrorsAreRateLimited) {
  StackConfig cfg;
  cfg.icmp_errors_per_second = 1;
  cfg.icmp_error_burst = 2;
  StackHarness h(FakePacketIo::Options{}, cfg, v6_interface(0));
  h.stack.start(h.now());
  h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), ns_msg(kOur6, kPeerMac)));
  h.io.clear_sent();
  for (int i = 0; i < 5; ++i) h.rx(v6_frame(V6{}, 200, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(h.io.take_sent().size(), 2u);
  EXPECT_EQ(h.drops(DropReason::kIcmpv6RateLimited), 3u);
}

TEST(Ipv6Input, PortWithoutIpv6DropsIt) {
  StackHarness h;
  h.rx(icmp6(V6{}, echo_msg(1, 1, 8)));
  EXPECT_EQ(h.drops(DropReason::kEthUnknownType), 1u);
  EXPECT_TRUE(h.io.take_sent().empty());
}

// Router discovery (RFC 4861 6.3): a router learned from its advertisement, used for
// off-link destinations, its MTU applied, and withdrawn by a zero lifetime.
InterfaceConfig ra_interface(bool accept_ra = true) {
  InterfaceConfig c = v6_interface(0);
  c.accept_ra = accept_ra;
  return c;
}

struct RaHost {
  StackHarness h;
  explicit RaHost(InterfaceConfig c = ra_interface())
      : h(FakePacketIo::Options{}, StackConfig{}, c) {
    h.stack.start(h.now());
    h.advance(Duration::zero());
    h.io.clear_sent();
  }
  // An echo request from a node beyond the router; the frame(s) of the reply.
  std::vector<Sent6> echo_from_far(size_t n = 16) {
    h.rx(icmp6(V6{kFar6, kOur6, 64, kOurMac}, echo_msg(4, 4, n)));
    std::vector<Sent6> out;
    for (auto& f : h.io.take_sent()) {
      Sent6 s;
      s.eth_dst = MacAddr::from_bytes(f.bytes.data());
      auto ip = *Ipv6View::parse(std::span(f.bytes).subspan(kEth));
      s.dst = ip.dst();
      s.msg.assign(f.bytes.begin() + kEth + 40, f.bytes.begin() + kEth + 40 + ip.payload_len());
      out.push_back(s);
    }
    return out;
  }
};

TEST(Ipv6RouterDiscovery, SolicitsAfterDadThreeTimesFourSecondsApart) {
  StackHarness h(FakePacketIo::Options{}, StackConfig{}, [] {
    InterfaceConfig c = v6_interface(1);
    c.accept_ra = true;
    return c;
  }());
  h.stack.start(h.now());
  std::vector<Instant> at;
  for (int i = 0; i < 20; ++i) {
    for (auto& f : h.io.take_sent()) {
      if (!is_icmpv6(f.bytes)) continue;
      Sent6 s = parse_sent(f.bytes);
      if (s.msg[0] != wire::kIcmpv6RouterSolicit) continue;
      at.push_back(h.now());
      EXPECT_EQ(s.src, kOurLl);  // after the link-local address passed DAD
      EXPECT_EQ(s.dst, Ipv6Addr::all_routers());
      EXPECT_EQ(s.eth_dst, Ipv6Addr::all_routers().multicast_mac());
      EXPECT_EQ(s.hop_limit, 255);
      ASSERT_EQ(s.msg.size(), 16u);  // with our source link-layer address
      EXPECT_EQ(s.msg[8], wire::kNdpOptSourceLinkAddr);
      EXPECT_EQ(MacAddr::from_bytes(s.msg.data() + 10), kOurMac);
    }
    h.advance(Duration::seconds(1));
  }
  ASSERT_EQ(at.size(), 3u);  // MAX_RTR_SOLICITATIONS
  EXPECT_EQ(at[1] - at[0], Duration::seconds(4));
  EXPECT_EQ(at[2] - at[1], Duration::seconds(4));
  EXPECT_EQ(h.stack.counters().ndp_rs_out, 3u);
}

TEST(Ipv6RouterDiscovery, NoSolicitationWithoutAcceptRaOrAfterAnAdvertisement) {
  RaHost off(ra_interface(false));
  for (int i = 0; i < 10; ++i) off.h.advance(Duration::seconds(1));
  EXPECT_EQ(off.h.stack.counters().ndp_rs_out, 0u);
  RaHost on;  // the first solicitation went out at start
  on.h.rx(icmp6(from_router(), ra_msg(1800, kRouterMac)));
  for (int i = 0; i < 10; ++i) on.h.advance(Duration::seconds(1));
  EXPECT_EQ(on.h.stack.counters().ndp_rs_out, 1u);  // 6.3.7: desist once one is heard
}

TEST(Ipv6RouterDiscovery, LearnedRouterCarriesOffLinkTrafficUntilWithdrawn) {
  RaHost r;
  EXPECT_EQ(r.echo_from_far().size(), 0u);  // no router yet
  EXPECT_EQ(r.h.drops(DropReason::kIpv6NoRoute), 1u);
  r.h.rx(icmp6(from_router(), ra_msg(1800, kRouterMac)));
  EXPECT_EQ(r.h.stack.ipv6_router(r.h.port, r.h.now()), kRouterLl);
  auto sent = r.echo_from_far();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].eth_dst, kRouterMac);  // via the router, its address from the option
  EXPECT_EQ(sent[0].dst, kFar6);
  EXPECT_EQ(sent[0].msg[0], wire::kIcmpv6EchoReply);
  r.h.advance(Duration::zero());
  EXPECT_EQ(r.h.stack.counters().ndp_default_routers, 1u);
  r.h.rx(icmp6(from_router(), ra_msg(0, kRouterMac)));  // RFC 4861 6.3.4: withdrawn
  EXPECT_FALSE(r.h.stack.ipv6_router(r.h.port, r.h.now()));
  EXPECT_EQ(r.echo_from_far().size(), 0u);
  EXPECT_EQ(r.h.drops(DropReason::kIpv6NoRoute), 2u);
  r.h.advance(Duration::zero());
  EXPECT_EQ(r.h.stack.counters().ndp_default_routers, 0u);
  EXPECT_TRUE(r.h.io.no_leaks());
}

TEST(Ipv6RouterDiscovery, RouterExpiresAfterItsLifetime) {
  RaHost r;
  r.h.rx(icmp6(from_router(), ra_msg(10, kRouterMac)));
  r.h.advance(Duration::seconds(9));
  EXPECT_EQ(r.h.stack.ipv6_router(r.h.port, r.h.now()), kRouterLl);
  r.h.rx(icmp6(from_router(), ra_msg(10, kRouterMac)));  // refreshed: 10 s from now
  r.h.advance(Duration::seconds(9));
  EXPECT_EQ(r.h.stack.ipv6_router(r.h.port, r.h.now()), kRouterLl);
  r.h.advance(Duration::seconds(1));
  EXPECT_FALSE(r.h.stack.ipv6_router(r.h.port, r.h.now()));
  EXPECT_EQ(r.h.stack.counters().ndp_default_routers, 0u);
}

TEST(Ipv6RouterDiscovery, ConfiguredGatewayWinsOverALearnedRouter) {
  InterfaceConfig c = ra_interface();
  c.gateway6 = *Ipv6Addr::parse("fe80::1:1");
  RaHost r(c);
  r.h.rx(icmp6(from_router(), ra_msg(1800, kRouterMac)));
  EXPECT_EQ(r.h.stack.ipv6_router(r.h.port, r.h.now()), c.gateway6);
}

TEST(Ipv6RouterDiscovery, MtuOptionIsBoundedByThePortAndTheIpv6Minimum) {
  RaHost r;
  r.h.rx(icmp6(from_router(), ra_msg(1800, kRouterMac, 1000)));  // below 1280: ignored
  EXPECT_EQ(r.h.stack.ipv6_mtu(r.h.port), 1500u);
  r.h.rx(icmp6(from_router(), ra_msg(1800, kRouterMac, 9000)));  // above the port's
  EXPECT_EQ(r.h.stack.ipv6_mtu(r.h.port), 1500u);
  r.h.rx(icmp6(from_router(), ra_msg(1800, kRouterMac, 1400)));
  EXPECT_EQ(r.h.stack.ipv6_mtu(r.h.port), 1400u);
  // A 1420-byte reply no longer fits the link: it leaves in two fragments.
  auto sent = r.echo_from_far(1420 - 8);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].eth_dst, kRouterMac);
  EXPECT_LE(sent[0].msg.size() + 40, 1400u);
}

TEST(Ipv6RouterDiscovery, InvalidAdvertisementsAreCountedAndNotLearned) {
  RaHost r;
  V6 global = from_router();
  global.src = kPeer6;
  r.h.rx(icmp6(global, ra_msg(1800, kRouterMac)));
  V6 wide = from_router();
  wide.src = *Ipv6Addr::parse("fe80:1::fe");  // in fe80::/10 but not the fe80::/64 prefix
  r.h.rx(icmp6(wide, ra_msg(1800, kRouterMac)));
  EXPECT_EQ(r.h.drops(DropReason::kNdpRaBadSource), 2u);
  r.h.rx(icmp6(from_router(254), ra_msg(1800, kRouterMac)));
  EXPECT_EQ(r.h.drops(DropReason::kNdpBadHopLimit), 1u);
  auto coded = ra_msg(1800, kRouterMac);
  coded[1] = 1;
  r.h.rx(icmp6(from_router(), coded));
  auto shorter = ra_msg(1800, std::nullopt);
  shorter.resize(12);
  r.h.rx(icmp6(from_router(), shorter));
  EXPECT_EQ(r.h.drops(DropReason::kNdpMalformed), 2u);
  auto zero_len = ra_msg(1800, kRouterMac);
  zero_len[17] = 0;  // an option of length zero (RFC 4861 4.6)
  r.h.rx(icmp6(from_router(), zero_len));
  auto long_mtu = ra_msg(1800, std::nullopt, 1400);
  long_mtu[17] = 2;  // an MTU option of 16 bytes, past the message's end
  r.h.rx(icmp6(from_router(), long_mtu));
  EXPECT_EQ(r.h.drops(DropReason::kNdpBadOptions), 2u);
  auto bad_sum = icmp6(from_router(), ra_msg(1800, kRouterMac));
  bad_sum.back() ^= 1;
  r.h.rx(bad_sum);
  EXPECT_EQ(r.h.drops(DropReason::kIcmpv6BadChecksum), 1u);
  EXPECT_EQ(r.h.stack.counters().ndp_ra_in, 7u);  // the bad checksum never got that far
  EXPECT_FALSE(r.h.stack.ipv6_router(r.h.port, r.h.now()));
  RaHost off(ra_interface(false));
  off.h.rx(icmp6(from_router(), ra_msg(1800, kRouterMac)));
  EXPECT_EQ(off.h.drops(DropReason::kNdpRaNotAccepted), 1u);
  EXPECT_FALSE(off.h.stack.ipv6_router(off.h.port, off.h.now()));
}

// ICMPv6 errors (RFC 4443): a forged Packet Too Big has no effect, a packet whose
// neighbour never answers is reported unreachable, and a reassembly that times out with
// its first fragment draws time exceeded (RFC 8200 4.5).
TEST(Ipv6Errors, ErrorForNoFlowOfOursIsCountedAndIgnored) {
  Ready r;
  StackHarness& h = r.h;
  std::vector<uint8_t> ptb(8 + 48, 0);
  ptb[0] = wire::kIcmpv6PacketTooBig;
  store_be32(ptb.data() + 4, 1280);
  wire::emit_ipv6(ptb.data() + 8, wire::Ipv6Repr{kOur6, kPeer6, 6, 64, 0, 0, 8});
  h.rx(icmp6(V6{}, ptb));
  EXPECT_EQ(h.drops(DropReason::kIcmpv6ErrorUnmatched), 1u);
  EXPECT_EQ(h.stack.counters().icmpv6_errors_in, 1u);
  EXPECT_EQ(h.stack.ipv6_mtu(h.port), 1500u);
  EXPECT_TRUE(h.io.take_sent().empty());
}

TEST(Ipv6Errors, UnresolvedNeighbourIsReportedAddressUnreachable) {
  Ready r(false);
  StackHarness& h = r.h;
  h.rx(icmp6(V6{}, echo_msg(9, 1, 32)));
  h.rx(icmp6(V6{}, echo_msg(9, 2, 32)));
  for (int i = 0; i < 4; ++i) h.advance(Duration::seconds(1));
  EXPECT_EQ(h.stack.counters().icmpv6_address_unreachable, 2u);
  EXPECT_EQ(h.drops(DropReason::kNdpResolveFailed), 2u);
  EXPECT_TRUE(h.io.no_leaks());
}

std::vector<uint8_t> first_fragment(uint32_t id, size_t len) {
  std::vector<uint8_t> p(8 + len, 0);
  p[0] = wire::kIpProtoIcmpv6;
  store_be16(p.data() + 2, 1);  // offset 0, more fragments
  store_be32(p.data() + 4, id);
  p[8] = wire::kIcmpv6EchoRequest;
  return p;
}

// The ICMPv6 errors among the frames sent since the last call (the fixture's neighbour
// probes left out).
std::vector<Sent6> errors_sent(StackHarness& h) {
  std::vector<Sent6> out;
  for (auto& f : h.io.take_sent()) {
    if (!is_icmpv6(f.bytes)) continue;
    Sent6 s = parse_sent(f.bytes);
    if (wire::is_icmpv6_error(s.msg[0])) out.push_back(s);
  }
  return out;
}

TEST(Ipv6Errors, ReassemblyTimeoutSendsTimeExceeded) {
  Ready r;
  StackHarness& h = r.h;
  h.rx(v6_frame(V6{}, wire::kIpv6Fragment, first_fragment(77, 96)));
  auto later = first_fragment(78, 96);
  store_be16(later.data() + 2, 96 | 1);  // a middle fragment alone: nothing to quote
  h.rx(v6_frame(V6{}, wire::kIpv6Fragment, later));
  h.advance(Duration::seconds(59));
  EXPECT_TRUE(errors_sent(h).empty());
  h.advance(Duration::seconds(1));
  auto sent = errors_sent(h);
  ASSERT_EQ(sent.size(), 1u);
  const Sent6& te = sent[0];
  EXPECT_EQ(te.dst, kPeer6);
  EXPECT_EQ(te.src, kOur6);
  EXPECT_EQ(te.msg[0], wire::kIcmpv6TimeExceeded);
  EXPECT_EQ(te.msg[1], wire::kIcmpv6CodeReassemblyTimeout);
  auto quoted = *Ipv6View::parse(std::span(te.msg).subspan(8));
  EXPECT_EQ(quoted.src(), kPeer6);
  EXPECT_EQ(quoted.payload_len(), 96u);
  EXPECT_EQ(te.msg.size(), 8u + 40 + 96);
  EXPECT_EQ(h.drops(DropReason::kIpv6ReassemblyTimeout), 2u);
  EXPECT_EQ(h.stack.counters().icmpv6_time_exceeded_out, 1u);
  EXPECT_EQ(h.stack.counters().icmpv6_errors_out, 1u);
}

TEST(Ipv6Errors, EveryKindIsCountedByTypeThroughOneLimiter) {
  StackConfig cfg;
  cfg.icmp_errors_per_second = 1;
  cfg.icmp_error_burst = 1;
  StackHarness h(FakePacketIo::Options{}, cfg, v6_interface(0));
  h.stack.start(h.now());
  h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), ns_msg(kOur6, kPeerMac)));
  h.io.clear_sent();
  h.rx(v6_frame(V6{}, wire::kIpv6Fragment, first_fragment(5, 96)));
  h.rx(v6_frame(V6{}, 200, {1, 2, 3, 4, 5, 6, 7, 8}));  // takes the only token
  EXPECT_EQ(h.stack.counters().icmpv6_param_problem_out, 1u);
  h.advance(Duration::seconds(60));  // refilled by then: time exceeded takes the token
  EXPECT_EQ(h.stack.counters().icmpv6_time_exceeded_out, 1u);
  h.rx(v6_frame(V6{}, 200, {1, 2, 3, 4, 5, 6, 7, 8}));  // the same bucket is empty
  EXPECT_EQ(h.drops(DropReason::kIcmpv6RateLimited), 1u);
  EXPECT_EQ(h.stack.counters().icmpv6_param_problem_out, 1u);
  EXPECT_EQ(h.stack.counters().icmpv6_errors_out, 2u);
}

// MLDv2 (RFC 3810): the solicited-node groups reported at start, twice, and on a query.
struct Mld {
  MacAddr eth_dst;
  Ipv6Addr src, dst;
  uint8_t hop_limit = 0;
  std::vector<uint8_t> hbh, msg;
};

std::vector<Mld> mld_sent(StackHarness& h) {
  std::vector<Mld> out;
  for (auto& f : h.io.take_sent()) {
    if (load_be16(f.bytes.data() + 12) != wire::kEtherTypeIpv6 || f.bytes[kEth + 6] != 0) continue;
    auto ip = *Ipv6View::parse(std::span(f.bytes).subspan(kEth));
    Mld m{MacAddr::from_bytes(f.bytes.data()), ip.src(), ip.dst(), ip.hop_limit(), {}, {}};
    const auto* p = f.bytes.data() + kEth + 40;
    m.hbh.assign(p, p + 8);
    m.msg.assign(p + 8, p + ip.payload_len());
    uint32_t sum =
        ipv6_pseudo_sum(m.src, m.dst, wire::kIpProtoIcmpv6, static_cast<uint32_t>(m.msg.size()));
    EXPECT_EQ(csum_fold(csum_partial(m.msg, sum)), 0) << "MLD checksum";
    out.push_back(m);
  }
  return out;
}

TEST(Ipv6Mld, ReportsSolicitedNodeGroupsAtStartAndWhenQueried) {
  InterfaceConfig c = v6_interface(1);
  const Ipv6Addr other = *Ipv6Addr::parse("2001:db8::abcd:1234");
  c.addresses6.push_back(Ipv6Cidr{other, 64});
  StackHarness h(FakePacketIo::Options{}, StackConfig{}, c);
  h.stack.start(h.now());
  h.advance(Duration::zero());
  auto first = mld_sent(h);
  ASSERT_EQ(first.size(), 1u);
  const Mld& m = first[0];
  EXPECT_EQ(m.eth_dst, (MacAddr{{0x33, 0x33, 0, 0, 0, 0x16}}));
  EXPECT_TRUE(m.src.is_unspecified());  // RFC 3590: the link-local address is tentative
  EXPECT_EQ(m.dst, *Ipv6Addr::parse("ff02::16"));
  EXPECT_EQ(m.hop_limit, 1);
  // Hop-by-Hop: ICMPv6 next, Router Alert (type 5, length 2, value 0 = MLD), PadN.
  EXPECT_EQ(m.hbh, (std::vector<uint8_t>{wire::kIpProtoIcmpv6, 0, 5, 2, 0, 0, 1, 0}));
  // fe80::1 and 2001:db8::1 share ff02::1:ff00:1; 2001:db8::abcd:1234 has its own group.
  ASSERT_EQ(m.msg.size(), 8u + 2 * 20);
  EXPECT_EQ(m.msg[0], wire::kIcmpv6Mldv2Report);
  EXPECT_EQ(load_be16(m.msg.data() + 6), 2u);
  const Ipv6Addr groups[] = {kOurLl.solicited_node(), other.solicited_node()};
  for (size_t i = 0; i < 2; ++i) {
    const uint8_t* r = m.msg.data() + 8 + 20 * i;
    EXPECT_EQ(r[0], wire::kMldChangeToExclude);
    EXPECT_EQ(r[1], 0);
    EXPECT_EQ(load_be16(r + 2), 0u);
    EXPECT_EQ(Ipv6Addr::from_bytes(r + 4), groups[i]);
  }
  h.advance(Duration::seconds(1));  // the second of Robustness Variable reports
  auto second = mld_sent(h);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].src, kOurLl);  // DAD is over: from the link-local address
  h.advance(Duration::seconds(1));
  h.advance(Duration::seconds(5));
  EXPECT_TRUE(mld_sent(h).empty());
  EXPECT_EQ(h.stack.counters().mld_reports_out, 2u);
  // A general query (MLDv1's 24-byte form) from a router: answered with a report.
  std::vector<uint8_t> q(24, 0);
  q[0] = wire::kIcmpv6MldQuery;
  const V6 query{kRouterLl, Ipv6Addr::all_nodes(), 1, Ipv6Addr::all_nodes().multicast_mac()};
  h.rx(icmp6(query, q));
  h.advance(Duration::zero());
  EXPECT_EQ(mld_sent(h).size(), 1u);
  EXPECT_EQ(h.stack.counters().mld_queries_in, 1u);
  // One that was forwarded (hop limit 2) or not from a link-local source: refused.
  h.rx(icmp6(V6{kRouterLl, Ipv6Addr::all_nodes(), 2, Ipv6Addr::all_nodes().multicast_mac()}, q));
  h.rx(icmp6(V6{kPeer6, Ipv6Addr::all_nodes(), 1, Ipv6Addr::all_nodes().multicast_mac()}, q));
  h.advance(Duration::zero());
  EXPECT_TRUE(mld_sent(h).empty());
  EXPECT_EQ(h.drops(DropReason::kMldBadQuery), 2u);
}

}  // namespace
}  // namespace ws::test
