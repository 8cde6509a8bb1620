// Software RSS ownership (stack/steer/flow_owner.hpp): symmetric, spread, and the same
// owner for every frame of a flow whichever direction and shape it has.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/steer/flow_owner.hpp"
#include "stack/steer/toeplitz.hpp"
#include "stack/wire/arp.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/ipv6.hpp"
#include "tests/support/frames.hpp"

namespace ws {
namespace {

const Ipv4Addr kA = Ipv4Addr::from_octets(10, 81, 0, 1);
const Ipv4Addr kB = Ipv4Addr::from_octets(10, 81, 0, 2);
const MacAddr kMacA{{2, 0, 0, 0, 0, 1}};
const MacAddr kMacB{{2, 0, 0, 0, 0, 2}};

// A TCP header's first 20 bytes with the given ports (the owner reads only the ports).
std::vector<uint8_t> tcp_frame(Ipv4Addr src, uint16_t sport, Ipv4Addr dst, uint16_t dport,
                               bool more_fragments = false) {
  std::vector<uint8_t> l4(20, 0);
  store_be16(l4.data(), sport);
  store_be16(l4.data() + 2, dport);
  l4[12] = 5 << 4;
  test::Ipv4Spec ip;
  ip.src = src;
  ip.dst = dst;
  ip.protocol = wire::kIpProtoTcp;
  ip.more_fragments = more_fragments;
  ip.dont_fragment = !more_fragments;
  return test::ipv4_frame({kMacA, kMacB}, ip, l4);
}

TEST(FlowOwner, HashIsSymmetricInTheEndpoints) {
  for (uint16_t p = 32768; p < 33768; ++p) {
    EXPECT_EQ(flow_hash(kA, p, kB, 80), flow_hash(kB, 80, kA, p));
  }
  EXPECT_NE(flow_hash(kA, 40000, kB, 80), flow_hash(kA, 40001, kB, 80));
}

TEST(FlowOwner, EphemeralPortsSpreadEvenlyOverCores) {
  for (uint32_t cores : {2u, 3u, 4u, 8u}) {
    FlowOwner o(cores, {});
    std::vector<uint32_t> n(cores, 0);
    for (uint32_t p = 32768; p <= 60999; ++p) ++n[o.of_tcp(kA, static_cast<uint16_t>(p), kB, 7)];
    const double fair = (60999 - 32768 + 1) / static_cast<double>(cores);
    for (uint32_t c = 0; c < cores; ++c) {
      EXPECT_GT(n[c], fair * 0.9) << cores << " cores, core " << c;
      EXPECT_LT(n[c], fair * 1.1) << cores << " cores, core " << c;
    }
  }
}

TEST(FlowOwner, BothDirectionsOfATcpFlowHaveOneOwner) {
  FlowOwner o(4, {});
  for (uint16_t p = 40000; p < 40064; ++p) {
    const uint32_t want = o.of_tcp(kA, 7, kB, p);
    EXPECT_EQ(o.of_frame(tcp_frame(kB, p, kA, 7), 99), want);
    EXPECT_EQ(o.of_frame(tcp_frame(kA, 7, kB, p), 99), want);
  }
}

TEST(FlowOwner, IcmpErrorGoesToTheOwnerOfTheQuotedFlow) {
  FlowOwner o(4, {});
  for (uint16_t p = 40000; p < 40016; ++p) {
    // Fragmentation needed for a segment we (kA:p) sent to kB:80: the quoted datagram
    // is ours, the error comes from a router.
    auto quoted = tcp_frame(kA, p, kB, 80);
    std::span<const uint8_t> inner(quoted.data() + 14, 28);
    test::Ipv4Spec ip;
    ip.src = Ipv4Addr::from_octets(10, 81, 0, 254);
    ip.dst = kA;
    test::IcmpSpec icmp;
    icmp.type = wire::kIcmpDestUnreachable;
    icmp.code = wire::kIcmpCodeFragNeeded;
    icmp.rest = 1400;
    auto err = test::icmp_frame({kMacA, kMacB}, ip, icmp, inner);
    EXPECT_EQ(o.of_frame(err, 99), o.of_tcp(kA, p, kB, 80));
  }
}

TEST(FlowOwner, UdpAndFragmentsAreOwnedByTheHostPair) {
  FlowOwner o(4, {});
  const uint32_t hosts = o.of_hosts(kA, kB);
  test::Ipv4Spec ip;
  ip.src = kB;
  ip.dst = kA;
  for (uint16_t p = 40000; p < 40016; ++p) {
    test::UdpSpec u;
    u.src_port = p;
    EXPECT_EQ(o.of_frame(test::udp_frame({kMacA, kMacB}, ip, u, test::pattern(32)), 99), hosts);
  }
  EXPECT_EQ(o.of_frame(tcp_frame(kB, 40000, kA, 7, true), 99), hosts);
}

TEST(FlowOwner, HostPortsAreOwnedByTheHostPair) {
  FlowOwner o(4, {5201});
  for (uint16_t p = 40000; p < 40016; ++p) {
    EXPECT_EQ(o.of_frame(tcp_frame(kB, p, kA, 5201), 99), o.of_hosts(kA, kB));
  }
}

TEST(FlowOwner, ArpRepliesGoToEveryCoreAndTheRestStays) {
  FlowOwner o(2, {});
  wire::ArpRepr r;
  r.op = wire::ArpOp::kReply;
  r.sender_mac = kMacB;
  r.sender_ip = kB;
  r.target_mac = kMacA;
  r.target_ip = kA;
  EXPECT_EQ(o.of_frame(test::arp_frame({kMacA, kMacB}, test::ArpSpec(r)), 1), FlowOwner::kEvery);
  r.op = wire::ArpOp::kRequest;
  EXPECT_EQ(o.of_frame(test::arp_frame({kMacA, kMacB}, test::ArpSpec(r)), 1), 1u);
  test::Ipv4Spec ip;
  ip.src = kB;
  ip.dst = kA;
  EXPECT_EQ(o.of_frame(test::icmp_frame({kMacA, kMacB}, ip, {}, test::pattern(8)), 1), 1u);
  std::array<uint8_t, 10> runt{};
  EXPECT_EQ(o.of_frame(runt, 1), 1u);
  EXPECT_EQ(FlowOwner(1, {}).of_frame(tcp_frame(kB, 1, kA, 7), 0), 0u);
}

// An IPsec SA's peers are pinned to one core: every TCP port, UDP, ESP (protocol 50, which
// has no ports) and its fragments go there, so one core holds the SA's sequence numbers and
// replay window; other hosts still spread by their ports.
TEST(FlowOwner, PinnedPeersGoToOneCoreWhateverThePorts) {
  FlowOwner o(4, {});
  const Ipv4Addr kC = Ipv4Addr::from_octets(10, 81, 0, 3);
  o.pin(Ipv4Cidr{kB, 32}, 6);  // taken modulo the core count
  EXPECT_EQ(o.pinned(kA, kB), 2u);
  EXPECT_EQ(o.pinned(kA, kC), FlowOwner::kNone);
  for (uint16_t p = 40000; p < 40064; ++p) {
    EXPECT_EQ(o.of_frame(tcp_frame(kB, p, kA, 9), 99), 2u) << p;
    EXPECT_EQ(o.of_tcp(kA, p, kB, 9), 2u) << p;
  }
  EXPECT_EQ(o.of_hosts(kB, kA), 2u);
  test::Ipv4Spec ip;
  ip.src = kB;
  ip.dst = kA;
  ip.protocol_override = 50;
  EXPECT_EQ(o.of_frame(test::ipv4_frame({kMacA, kMacB}, ip, test::pattern(40)), 99), 2u);
  ip.src = kC;  // ESP from a host no SA covers: any core may take it (and count it)
  EXPECT_EQ(o.of_frame(test::ipv4_frame({kMacA, kMacB}, ip, test::pattern(40)), 99), 99u);
  std::set<uint32_t> others;
  for (uint16_t p = 40000; p < 40064; ++p) others.insert(o.of_tcp(kA, p, kC, 9));
  EXPECT_GT(others.size(), 1u);
}

TEST(FlowOwner, NeighbourAdvertisementsAndDadProbesGoToEveryCore) {
  FlowOwner o(2, {});
  auto frame = [](uint8_t type, const char* src) {
    std::vector<uint8_t> f(14 + 40 + 24, 0);
    wire::emit_ethernet(f.data(), kMacA, kMacB, wire::kEtherTypeIpv6);
    wire::emit_ipv6(f.data() + 14,
                    wire::Ipv6Repr{*Ipv6Addr::parse(src), *Ipv6Addr::parse("ff02::1"),
                                   wire::kIpProtoIcmpv6, 255, 0, 0, 24});
    f[14 + 40] = type;
    return f;
  };
  EXPECT_EQ(o.of_frame(frame(wire::kIcmpv6NeighborAdvert, "fe80::2"), 1), FlowOwner::kEvery);
  EXPECT_EQ(o.of_frame(frame(wire::kIcmpv6NeighborSolicit, "::"), 1), FlowOwner::kEvery);
  EXPECT_EQ(o.of_frame(frame(wire::kIcmpv6NeighborSolicit, "fe80::2"), 1), 1u);
  EXPECT_EQ(o.of_frame(frame(wire::kIcmpv6EchoRequest, "fe80::2"), 1), 1u);
}

TEST(RssPortSelector, SoftwareRoutesPickPortsTheCoreOwns) {
  FlowOwner o(2, {});
  Ipv4Cidr subnet{kA, 24};
  std::vector<RssRoute> routes{RssRoute{subnet, false, 2, RssTable{}, true, {}, false}};
  RssPortSelector c0(routes, 0, 2, o), c1(routes, 1, 2, o);
  EXPECT_TRUE(c0.active());
  Endpoint peer{kB, 7};
  uint32_t mine0 = 0, mine1 = 0;
  for (uint16_t p = 40000; p < 41000; ++p) {
    EXPECT_NE(c0(p, peer), c1(p, peer)) << "exactly one core owns port " << p;
    if (c0(p, peer)) {
      ++mine0;
      EXPECT_EQ(o.of_tcp(kA, p, kB, 7), 0u);
    } else {
      ++mine1;
    }
  }
  EXPECT_GT(mine0, 400u);
  EXPECT_GT(mine1, 400u);
}

}  // namespace
}  // namespace ws
