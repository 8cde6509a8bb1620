// IPv6 output's path cache (stack/iface/tx_path_cache.hpp): frames on a kept path are the
// frames the full path writes, and a path stops being used as soon as the neighbour cache or
// the default router would answer differently, or sending would move a neighbour entry
// (RFC 4861 7.3.3).
#include <gtest/gtest.h>

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

using wire::Ipv6View;

const Ipv6Addr kPeer6b = *Ipv6Addr::parse("2001:db8::3");
constexpr uint32_t kSolicitedOverride = wire::kNaFlagSolicited | wire::kNaFlagOverride;

// A stack whose addresses passed DAD.
struct Host6 {
  StackHarness h;
  explicit Host6(StackConfig cfg = {}, InterfaceConfig c = v6_interface())
      : h(FakePacketIo::Options{}, cfg, c) {
    h.stack.start(h.now());
    h.advance(Duration::seconds(1));
    h.advance(Duration::seconds(1));
    h.io.clear_sent();
  }
  // `n` bytes to `to`:9 from a bound UDP socket: the frames that went out.
  std::vector<std::vector<uint8_t>> send(const Ipv6Addr& to, size_t n = 100) {
    UdpSocket* s = h.stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
    EXPECT_NE(s, nullptr);
    s->send_to(Endpoint{to, 9}, pattern(n), h.now());
    h.stack.udp_unbind(5555);
    std::vector<std::vector<uint8_t>> out;
    for (auto& f : h.io.take_sent()) out.push_back(f.bytes);
    return out;
  }
  // The one frame a datagram to `to` went out as.
  std::vector<uint8_t> send_one(const Ipv6Addr& to, size_t n = 100) {
    auto out = send(to, n);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? std::vector<uint8_t>{} : out.back();
  }
  // `ip` answers a solicitation with `mac`: a REACHABLE entry (RFC 4861 7.2.5).
  void reachable(const Ipv6Addr& ip, const MacAddr& mac) {
    const auto sent = send(ip);  // unknown: a solicitation, the datagram waits
    ASSERT_EQ(sent.size(), 1u);
    h.rx(icmp6(ndp(ip, kOur6, kOurMac), na_msg(ip, kSolicitedOverride, mac)));
    ASSERT_EQ(h.io.take_sent().size(), 1u);  // the datagram that waited
  }
};

bool is_unicast_probe(const std::vector<uint8_t>& f, const Ipv6Addr& target, const MacAddr& to) {
  return load_be16(f.data() + 12) == wire::kEtherTypeIpv6 &&
         f[kEth + Ipv6View::kNextHeaderOff] == wire::kIpProtoIcmpv6 &&
         f[kEth + Ipv6View::kHeaderLen] == wire::kIcmpv6NeighborSolicit &&
         MacAddr::from_bytes(f.data()) == to &&
         Ipv6Addr::from_bytes(f.data() + kEth + Ipv6View::kHeaderLen + 8) == target;
}

// A UDP datagram's frame: its addresses, length and checksum (RFC 8200 8.1).
void expect_udp6(const std::vector<uint8_t>& f, const MacAddr& mac, const Ipv6Addr& dst, size_t n) {
  ASSERT_GE(f.size(), kEth + Ipv6View::kHeaderLen + 8);
  EXPECT_EQ(MacAddr::from_bytes(f.data()), mac);
  EXPECT_EQ(MacAddr::from_bytes(f.data() + 6), kOurMac);
  EXPECT_EQ(load_be16(f.data() + 12), wire::kEtherTypeIpv6);
  auto ip = *Ipv6View::parse(std::span(f).subspan(kEth));
  EXPECT_EQ(ip.src(), kOur6);
  EXPECT_EQ(ip.dst(), dst);
  EXPECT_EQ(ip.next_header(), wire::kIpProtoUdp);
  EXPECT_EQ(ip.hop_limit(), 64);
  ASSERT_EQ(ip.payload_len(), 8 + n);
  std::span<const uint8_t> l4(f.data() + kEth + Ipv6View::kHeaderLen, 8 + n);
  EXPECT_EQ(csum_fold(csum_partial(l4, pseudo_sum(ip.src(), dst, wire::kIpProtoUdp,
                                                  static_cast<uint32_t>(l4.size())))),
            0);
}

TEST(TxPath6, FramesOnAKeptPathAreTheFullPathsFrames) {
  Host6 t;
  t.reachable(kPeer6, kPeerMac);
  const uint64_t out0 = t.h.stack.counters().ipv6_out;
  const uint64_t frames0 = t.h.stack.counters().tx_frames;
  const auto first = t.send_one(kPeer6);  // the full path, which keeps the path
  const auto second = t.send_one(kPeer6);
  const auto third = t.send_one(kPeer6, 1200);
  const auto tiny = t.send_one(kPeer6, 0);
  EXPECT_EQ(first, second);
  expect_udp6(first, kPeerMac, kPeer6, 100);
  expect_udp6(third, kPeerMac, kPeer6, 1200);
  expect_udp6(tiny, kPeerMac, kPeer6, 0);
  EXPECT_EQ(tiny.size(), 14u + 40u + 8u);
  EXPECT_EQ(t.h.stack.counters().ipv6_out - out0, 4u);
  EXPECT_EQ(t.h.stack.counters().tx_frames - frames0, 4u);
  EXPECT_TRUE(t.h.io.no_leaks());
}

TEST(TxPath6, ANewLinkAddressIsUsedAtOnce) {
  Host6 t;
  t.reachable(kPeer6, kPeerMac);
  t.send_one(kPeer6);
  EXPECT_EQ(MacAddr::from_bytes(t.send_one(kPeer6).data()), kPeerMac);
  // RFC 4861 7.2.5: an advertisement with Override replaces the cached address.
  t.h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), na_msg(kPeer6, kSolicitedOverride, kOtherMac)));
  expect_udp6(t.send_one(kPeer6), kOtherMac, kPeer6, 100);
}

// RFC 4861 7.3.3: a REACHABLE entry whose time is over turns STALE when next used, and DELAY
// then PROBE follow. A kept path must not send past that time as if nothing moved.
TEST(TxPath6, AReachableEntryPastItsTimeIsProbedWhileInUse) {
  StackConfig cfg;
  cfg.ndp.reachable_time = Duration::seconds(10);
  Host6 t(cfg);
  t.reachable(kPeer6, kPeerMac);
  t.send_one(kPeer6);
  t.send_one(kPeer6);
  t.h.clock.advance(Duration::millis(10'500));             // past REACHABLE, before any poll()
  expect_udp6(t.send_one(kPeer6), kPeerMac, kPeer6, 100);  // STALE, then DELAY
  t.h.advance(cfg.ndp.delay_first_probe);
  const auto probes = t.h.io.take_sent();
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_TRUE(is_unicast_probe(probes[0].bytes, kPeer6, kPeerMac));
}

// A neighbour learned from its solicitation is STALE; the first datagram moves it to DELAY,
// datagrams in DELAY and PROBE keep its address, and an entry whose probes went unanswered
// is gone: the next datagram waits behind a new multicast solicitation.
TEST(TxPath6, AnUnansweredProbeEndsThePath) {
  Host6 t;
  t.h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), ns_msg(kOur6, kPeerMac)));
  t.h.io.clear_sent();
  for (int i = 0; i < 3; ++i) expect_udp6(t.send_one(kPeer6), kPeerMac, kPeer6, 100);
  t.h.advance(Duration::seconds(5));  // DELAY_FIRST_PROBE_TIME: PROBE
  ASSERT_EQ(t.h.io.sent_count(), 1u);
  EXPECT_TRUE(is_unicast_probe(t.h.io.take_sent()[0].bytes, kPeer6, kPeerMac));
  expect_udp6(t.send_one(kPeer6), kPeerMac, kPeer6, 100);
  expect_udp6(t.send_one(kPeer6), kPeerMac, kPeer6, 100);
  for (int i = 0; i < 3; ++i) t.h.advance(Duration::seconds(1));  // MAX_UNICAST_SOLICIT
  t.h.io.clear_sent();
  const auto sent = t.send(kPeer6);
  ASSERT_EQ(sent.size(), 1u);  // a multicast solicitation; the datagram waits
  EXPECT_EQ(MacAddr::from_bytes(sent[0].data()), kPeer6.solicited_node().multicast_mac());
  EXPECT_EQ(t.h.io.outstanding(), 1u);
}

TEST(TxPath6, OffLinkDestinationsFollowTheDefaultRouter) {
  InterfaceConfig c = v6_interface(0);
  c.accept_ra = true;
  Host6 t({}, c);
  t.h.rx(icmp6(from_router(), ra_msg(1800, kRouterMac)));
  t.h.advance(Duration::zero());  // the timers the advertisement moved
  t.h.io.clear_sent();
  for (int i = 0; i < 3; ++i) expect_udp6(t.send_one(kFar6), kRouterMac, kFar6, 100);
  // RFC 4861 6.3.4: a lifetime of zero withdraws the router; nothing leaves for kFar6.
  // Before any poll(): the path kept for kFar6 must not outlive its router.
  t.h.rx(icmp6(from_router(), ra_msg(0, std::nullopt)));
  t.h.io.clear_sent();
  const uint64_t no_route = t.h.drops(DropReason::kIpv6NoRoute);
  EXPECT_TRUE(t.send(kFar6).empty());
  EXPECT_EQ(t.h.drops(DropReason::kIpv6NoRoute), no_route + 1);
  // Advertised again, by a router at another link address.
  t.h.rx(icmp6(from_router(), ra_msg(1800, kOtherMac)));
  t.h.io.clear_sent();
  expect_udp6(t.send_one(kFar6), kOtherMac, kFar6, 100);
  EXPECT_TRUE(t.h.io.no_leaks());
}

TEST(TxPath6, DestinationsTakenInTurnEachGetTheirOwnAddress) {
  Host6 t;
  t.reachable(kPeer6, kPeerMac);
  t.reachable(kPeer6b, kOtherMac);
  for (int i = 0; i < 4; ++i) {
    expect_udp6(t.send_one(kPeer6), kPeerMac, kPeer6, 100);
    expect_udp6(t.send_one(kPeer6b, 64), kOtherMac, kPeer6b, 64);
  }
}

// A configured neighbour (InterfaceConfig::static_neighbors): the first datagram goes out
// at once, with no solicitation, and a later advertisement naming another address changes
// nothing.
TEST(TxPath6, StaticNeighbourNeedsNoSolicitation) {
  InterfaceConfig c = v6_interface();
  c.static_neighbors = {{kPeer6, kPeerMac}};
  Host6 t(StackConfig{}, c);
  expect_udp6(t.send_one(kPeer6), kPeerMac, kPeer6, 100);
  t.h.rx(icmp6(ndp(kPeer6, kOur6, kOurMac), na_msg(kPeer6, kSolicitedOverride, kOtherMac)));
  t.h.io.clear_sent();
  t.h.advance(Duration::seconds(3600));
  t.h.io.clear_sent();
  expect_udp6(t.send_one(kPeer6), kPeerMac, kPeer6, 100);
}

}  // namespace
}  // namespace ws::test
