// UDP and TCP over IPv6 through the whole stack on a virtual clock: pseudo-header
// checksums both ways, the zero UDP checksum refused, port unreachable over ICMPv6, the
// IPv6 MSS, RSTs to closed ports, and IPv4 beside it on the same interface.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stack/apps/tcp_clients.hpp"
#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/iface/tcp_transport.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"
#include "stack/wire/tcp.hpp"
#include "stack/wire/udp.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

using wire::Ipv6View;

const Ipv6Addr kOur6 = *Ipv6Addr::parse("2001:db8::1");
const Ipv6Addr kPeer6 = *Ipv6Addr::parse("2001:db8::2");
constexpr size_t kEth = 14;

// A frame peer -> us with `l4` (checksum already filled) after the fixed IPv6 header.
std::vector<uint8_t> frame6(uint8_t proto, const std::vector<uint8_t>& l4,
                            const Ipv6Addr& src = kPeer6) {
  std::vector<uint8_t> f(kEth + Ipv6View::kHeaderLen + l4.size());
  wire::emit_ethernet(f.data(), kOurMac, kPeerMac, wire::kEtherTypeIpv6);
  wire::emit_ipv6(f.data() + kEth,
                  wire::Ipv6Repr{src, kOur6, proto, 64, 0, 0, static_cast<uint16_t>(l4.size())});
  std::copy(l4.begin(), l4.end(), f.begin() + kEth + Ipv6View::kHeaderLen);
  return f;
}

std::vector<uint8_t> udp6(uint16_t sport, uint16_t dport, size_t n, bool zero_checksum = false) {
  std::vector<uint8_t> u(8 + n);
  wire::emit_udp(u.data(), sport, dport, static_cast<uint16_t>(n));
  for (size_t i = 0; i < n; ++i) u[8 + i] = static_cast<uint8_t>(i * 13 + n);
  store_be16(u.data() + 6, 0);
  const uint32_t s = pseudo_sum(kPeer6, kOur6, wire::kIpProtoUdp, static_cast<uint32_t>(u.size()));
  uint16_t c = csum_fold(csum_partial(u, s));
  store_be16(u.data() + 6, zero_checksum ? 0 : (c == 0 ? 0xffff : c));
  return u;
}

std::vector<uint8_t> tcp6(const wire::TcpRepr& r) {
  std::vector<uint8_t> t(r.header_len());
  wire::emit_tcp(t.data(), r);
  const uint32_t s = pseudo_sum(kPeer6, kOur6, wire::kIpProtoTcp, static_cast<uint32_t>(t.size()));
  store_be16(t.data() + 16, csum_fold(csum_partial(t, s)));
  return t;
}

// A segment from the peer's port 40000 to `port`.
wire::TcpRepr peer_segment(uint16_t port, uint32_t seq, uint8_t flags) {
  wire::TcpRepr r;
  r.src_port = 40000;
  r.dst_port = port;
  r.seq = SeqNum(seq);
  r.flags = flags;
  r.window = 65535;
  return r;
}

// A sent IPv6 frame: its upper-layer protocol and payload, checked against its
// pseudo-header checksum (RFC 8200 8.1).
struct Sent6 {
  uint8_t proto = 0;
  Ipv6Addr src, dst;
  std::vector<uint8_t> l4;
};

Sent6 parse_sent(const std::vector<uint8_t>& f) {
  Sent6 s;
  EXPECT_EQ(load_be16(f.data() + 12), wire::kEtherTypeIpv6);
  EXPECT_EQ(MacAddr::from_bytes(f.data()), kPeerMac);
  auto ip = *Ipv6View::parse(std::span(f).subspan(kEth));
  s.proto = ip.next_header();
  s.src = ip.src();
  s.dst = ip.dst();
  s.l4.assign(f.begin() + kEth + 40, f.begin() + kEth + 40 + ip.payload_len());
  const uint32_t sum = pseudo_sum(s.src, s.dst, s.proto, static_cast<uint32_t>(s.l4.size()));
  EXPECT_EQ(csum_fold(csum_partial(s.l4, sum)), 0) << "checksum of protocol " << int{s.proto};
  return s;
}

// A stack with an IPv4 and an IPv6 address (DAD done, the peer's link address known),
// TCP attached and a UDP echo socket on port 7.
struct DualStack {
  DualStack() {
    InterfaceConfig c = default_interface();
    c.addresses6 = {Ipv6Cidr{kOur6, 64}};
    c.link_local = *Ipv6Addr::parse("fe80::1");
    h = std::make_unique<StackHarness>(FakePacketIo::Options{}, StackConfig{}, c);
    tcp = std::make_unique<tcp::TcpStack>(h->stack, h->stack.drops(), tcp::TcpConfig{});
    transport = std::make_unique<tcp::TcpTransport>(*tcp);
    h->stack.set_tcp(transport.get());
    h->stack.start(h->now());
    h->advance(Duration::seconds(1));
    h->advance(Duration::seconds(1));
    // The peer's solicitation teaches us its link address.
    std::vector<uint8_t> ns(32, 0);
    ns[0] = wire::kIcmpv6NeighborSolicit;
    kOur6.to_bytes(ns.data() + 8);
    wire::emit_ndp_link_option(ns.data() + 24, wire::kNdpOptSourceLinkAddr, kPeerMac);
    wire::fill_icmpv6_checksum(ns, kPeer6, kOur6);
    auto f = frame6(wire::kIpProtoIcmpv6, ns);
    f[kEth + Ipv6View::kHopLimitOff] = 255;
    h->rx(f);
    h->learn();
    h->stack.udp_bind(7, [](UdpSocket& s, const UdpDatagram& d, Instant now) {
      s.send_to(d.src, d.payload, now);
    });
    h->io.clear_sent();
  }
  std::unique_ptr<StackHarness> h;
  std::unique_ptr<tcp::TcpStack> tcp;
  std::unique_ptr<tcp::TcpTransport> transport;
};

TEST(Ipv6Udp, EchoOfEveryDatagramSize) {
  DualStack d;
  StackHarness& h = *d.h;
  for (size_t n = 0; n <= 1452; ++n) {
    SCOPED_TRACE("payload " + std::to_string(n));
    const auto req = udp6(40000, 7, n);
    h.rx(frame6(wire::kIpProtoUdp, req));
    auto sent = h.io.take_sent();
    ASSERT_EQ(sent.size(), 1u);
    Sent6 rep = parse_sent(sent[0].bytes);
    ASSERT_EQ(rep.proto, wire::kIpProtoUdp);
    EXPECT_EQ(rep.src, kOur6);
    EXPECT_EQ(rep.dst, kPeer6);
    ASSERT_EQ(rep.l4.size(), req.size());
    EXPECT_EQ(load_be16(rep.l4.data()), 7);
    EXPECT_EQ(load_be16(rep.l4.data() + 2), 40000);
    EXPECT_TRUE(std::equal(req.begin() + 8, req.end(), rep.l4.begin() + 8));
  }
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(Ipv6Udp, LargerThanTheMtuLeavesInFragments) {
  DualStack d;
  StackHarness& h = *d.h;
  h.rx(frame6(wire::kIpProtoUdp, udp6(40000, 7, 1452)));
  ASSERT_EQ(h.io.take_sent().size(), 1u);
  // 1453 bytes of payload need 1501 bytes of IPv6 packet: a datagram sent by the socket
  // that large is cut (RFC 8200 4.5), as IPv6 routers never do it.
  auto* s = h.stack.udp_bind(9, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_NE(s, nullptr);
  std::vector<uint8_t> big(3000, 0x5a);
  ASSERT_TRUE(s->send_to(Endpoint{IpAddr(kPeer6), 9}, big, h.now()));
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 3u);
  for (const auto& f : sent) {
    auto ip = *Ipv6View::parse(std::span(f.bytes).subspan(kEth));
    EXPECT_EQ(ip.next_header(), wire::kIpv6Fragment);
    EXPECT_LE(40u + ip.payload_len(), 1500u);
  }
}

TEST(Ipv6Udp, ZeroChecksumIsRefused) {
  DualStack d;
  StackHarness& h = *d.h;
  h.rx(frame6(wire::kIpProtoUdp, udp6(40000, 7, 10, true)));
  EXPECT_TRUE(h.io.take_sent().empty());
  EXPECT_EQ(h.drops(DropReason::kUdp6ZeroChecksum), 1u);
  EXPECT_EQ(family_total(h.stack.counters().udp_in), 0u);
}

TEST(Ipv6Udp, BadChecksumAndReservedSourceAreDropped) {
  DualStack d;
  StackHarness& h = *d.h;
  auto u = udp6(40000, 7, 10);
  u[9] ^= 1;
  h.rx(frame6(wire::kIpProtoUdp, u));
  EXPECT_EQ(h.drops(DropReason::kUdpBadChecksum), 1u);
  // ::/64 reads as IPv4 in IpAddr: such a source is refused before UDP.
  h.rx(frame6(wire::kIpProtoUdp, udp6(40000, 7, 10), *Ipv6Addr::parse("::a00:2")));
  EXPECT_EQ(h.drops(DropReason::kIpv6BadSource), 1u);
  EXPECT_TRUE(h.io.take_sent().empty());
}

TEST(Ipv6Udp, ClosedPortDrawsPortUnreachable) {
  DualStack d;
  StackHarness& h = *d.h;
  const auto req = udp6(40000, 4444, 20);
  h.rx(frame6(wire::kIpProtoUdp, req));
  EXPECT_EQ(h.drops(DropReason::kUdpPortUnreachable), 1u);
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  Sent6 e = parse_sent(sent[0].bytes);
  ASSERT_EQ(e.proto, wire::kIpProtoIcmpv6);
  EXPECT_EQ(e.l4[0], wire::kIcmpv6DestUnreachable);
  EXPECT_EQ(e.l4[1], wire::kIcmpv6CodePortUnreachable);
  // The quote starts at the offending IPv6 header.
  auto quoted = *Ipv6View::parse(std::span(e.l4).subspan(8));
  EXPECT_EQ(quoted.src(), kPeer6);
  EXPECT_EQ(quoted.next_header(), wire::kIpProtoUdp);
}

TEST(Ipv6Tcp, SynGetsASynAckWithTheIpv6Mss) {
  DualStack d;
  StackHarness& h = *d.h;
  ASSERT_TRUE(d.tcp->listen(80, {[](tcp::Connection&) { return true; }}));
  wire::TcpRepr syn = peer_segment(80, 1000, wire::tcpflag::kSyn);
  syn.mss = 1440;
  h.rx(frame6(wire::kIpProtoTcp, tcp6(syn)));
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  Sent6 sa = parse_sent(sent[0].bytes);
  ASSERT_EQ(sa.proto, wire::kIpProtoTcp);
  EXPECT_EQ(sa.src, kOur6);
  auto v = *wire::TcpView::parse(sa.l4);
  EXPECT_EQ(v.flags(), wire::tcpflag::kSyn | wire::tcpflag::kAck);
  EXPECT_EQ(v.ack(), SeqNum(1001));
  wire::TcpOptions o;
  ASSERT_TRUE(v.parse_options(o));
  ASSERT_TRUE(o.mss);
  EXPECT_EQ(*o.mss, 1500 - 60);  // RFC 8200 8.3: MTU less 40 + 20 bytes of headers
  // The handshake completes over IPv6.
  wire::TcpRepr ack = peer_segment(80, 1001, wire::tcpflag::kAck);
  ack.ack = v.seq() + 1;
  h.rx(frame6(wire::kIpProtoTcp, tcp6(ack)));
  EXPECT_EQ(d.tcp->counters().connections_accepted, 1u);
  EXPECT_EQ(d.tcp->mss_to(IpAddr(kPeer6)), 1440u);
  EXPECT_EQ(d.tcp->mss_to(IpAddr(kPeerIp)), 1460u);
}

// A Packet Too Big quoting a segment in flight lowers the connection's MSS to the
// reported MTU less 60 (RFC 8201 4); one whose quoted sequence number lies outside
// SND.UNA..SND.MAX is ignored (RFC 5927 4.1), and so is one for no connection.
TEST(Ipv6Tcp, PacketTooBigLowersTheMssOnlyWhenItQuotesDataInFlight) {
  DualStack d;
  StackHarness& h = *d.h;
  tcp::Connection* conn = nullptr;
  ASSERT_TRUE(d.tcp->listen(80, {[&](tcp::Connection& c) {
                              conn = &c;
                              return true;
                            }}));
  wire::TcpRepr syn = peer_segment(80, 1000, wire::tcpflag::kSyn);
  syn.mss = 1440;
  h.rx(frame6(wire::kIpProtoTcp, tcp6(syn)));
  const Sent6 synack = parse_sent(h.io.take_sent().at(0).bytes);
  auto sa = *wire::TcpView::parse(synack.l4);
  wire::TcpRepr ack = peer_segment(80, 1001, wire::tcpflag::kAck);
  ack.ack = sa.seq() + 1;
  h.rx(frame6(wire::kIpProtoTcp, tcp6(ack)));
  ASSERT_NE(conn, nullptr);
  std::vector<uint8_t> data(4000, 0x42);
  ASSERT_EQ(conn->send(data), data.size());
  d.tcp->poll(h.now());
  auto sent = h.io.take_sent();
  ASSERT_FALSE(sent.empty());
  const std::vector<uint8_t> first = sent[0].bytes;
  EXPECT_EQ(first.size(), kEth + 1500u);  // full-sized: 1440 bytes of payload
  // A Packet Too Big quoting `quoted` (the start of a packet we sent) with `mtu`.
  auto ptb = [&](std::vector<uint8_t> quoted, uint32_t mtu) {
    std::vector<uint8_t> m(8);
    m[0] = wire::kIcmpv6PacketTooBig;
    store_be32(m.data() + 4, mtu);
    m.insert(m.end(), quoted.begin(), quoted.end());
    wire::fill_icmpv6_checksum(m, kPeer6, kOur6);
    return frame6(wire::kIpProtoIcmpv6, m);
  };
  std::vector<uint8_t> quote(first.begin() + kEth, first.begin() + kEth + 1240 - 48);
  // Forged: a sequence number before SND.UNA.
  std::vector<uint8_t> forged = quote;
  store_be32(forged.data() + 40 + 4, sa.seq().raw() - 5000);
  h.rx(ptb(forged, 1400));
  EXPECT_EQ(d.tcp->counters().icmp_ignored_sequence, 1u);
  EXPECT_EQ(d.tcp->counters().pmtu_reductions, 0u);
  // For another port: no connection.
  std::vector<uint8_t> other = quote;
  store_be16(other.data() + 40 + 2, 40001);
  h.rx(ptb(other, 1400));
  EXPECT_EQ(d.tcp->counters().icmp_ignored_no_connection, 1u);
  // Genuine: the segments resent at once fit 1400 bytes.
  h.io.clear_sent();
  h.rx(ptb(quote, 1400));
  EXPECT_EQ(d.tcp->counters().pmtu_reductions, 1u);
  EXPECT_EQ(d.tcp->counters().icmp_accepted, 1u);
  d.tcp->poll(h.now());
  sent = h.io.take_sent();
  ASSERT_FALSE(sent.empty());
  for (const auto& f : sent) EXPECT_LE(f.bytes.size(), kEth + 1400u);
  EXPECT_EQ(sent[0].bytes.size(), kEth + 1400u);  // 1340 = 1400 - 60 bytes of payload
}

// TCP and UDP count each family apart (family_index): IPv6 traffic moves the IPv6
// entries only, IPv4 traffic the IPv4 ones, and the totals are their sums.
TEST(Families, TcpAndUdpAreCountedPerFamily) {
  DualStack d;
  StackHarness& h = *d.h;
  ASSERT_TRUE(d.tcp->listen(80, {[](tcp::Connection&) { return true; }}));
  // IPv6: a handshake to port 80, a SYN to closed port 81 (RST), a UDP echo.
  h.rx(frame6(wire::kIpProtoTcp, tcp6(peer_segment(80, 1000, wire::tcpflag::kSyn))));
  const Sent6 synack = parse_sent(h.io.take_sent().at(0).bytes);
  auto sa = *wire::TcpView::parse(synack.l4);
  wire::TcpRepr ack = peer_segment(80, 1001, wire::tcpflag::kAck);
  ack.ack = sa.seq() + 1;
  h.rx(frame6(wire::kIpProtoTcp, tcp6(ack)));
  h.rx(frame6(wire::kIpProtoTcp, tcp6(peer_segment(81, 5, wire::tcpflag::kSyn))));
  h.rx(frame6(wire::kIpProtoUdp, udp6(40000, 7, 10)));
  tcp::TcpCounters c = d.tcp->counters();
  const tcp::TcpFamilyCounters& f = c.family;
  EXPECT_EQ(f.segments_in, (FamilyCount{0, 3}));
  EXPECT_EQ(f.segments_out, (FamilyCount{0, 2}));  // the SYN,ACK and the RST
  EXPECT_EQ(f.resets_sent, (FamilyCount{0, 1}));
  EXPECT_EQ(f.connections_accepted, (FamilyCount{0, 1}));
  EXPECT_EQ(f.connections_established, (FamilyCount{0, 1}));
  EXPECT_EQ(f.connections_opened, (FamilyCount{0, 0}));
  EXPECT_EQ(f.state[static_cast<size_t>(tcp::TcpState::kEstablished)], (FamilyCount{0, 1}));
  EXPECT_EQ(c.segments_in, 3u);
  EXPECT_EQ(c.segments_out, 2u);
  EXPECT_EQ(c.connections_accepted, 1u);
  EXPECT_EQ(h.stack.counters().udp_in, (FamilyCount{0, 1}));
  EXPECT_EQ(h.stack.counters().udp_out, (FamilyCount{0, 1}));

  // IPv4 on the same interface: a UDP echo and an active open.
  h.learn();
  const std::vector<uint8_t> payload(12, 0x33);
  UdpSpec u;
  u.src_port = 40000;
  u.dst_port = 7;
  h.rx(udp_frame(StackHarness::eth_in(), StackHarness::ip_in(), u, payload));
  tcp::Connection* out = d.tcp->connect({IpAddr(kPeerIp), 9}, {}, 0, h.now());
  ASSERT_NE(out, nullptr);
  c = d.tcp->counters();
  EXPECT_EQ(c.family.segments_out, (FamilyCount{1, 2}));  // our SYN
  EXPECT_EQ(c.family.connections_opened, (FamilyCount{1, 0}));
  EXPECT_EQ(c.family.state[static_cast<size_t>(tcp::TcpState::kSynSent)], (FamilyCount{1, 0}));
  EXPECT_EQ(c.family.segments_in, (FamilyCount{0, 3}));
  EXPECT_EQ(c.connections_opened, 1u);
  EXPECT_EQ(h.stack.counters().udp_in, (FamilyCount{1, 1}));
  EXPECT_EQ(h.stack.counters().udp_out, (FamilyCount{1, 1}));
}

// RFC 4862 5.4: an address is not used while duplicate address detection runs. A client
// whose target is IPv6 waits for it instead of failing its connects, then opens.
TEST(Ipv6Tcp, ClientWaitsForDadBeforeConnecting) {
  InterfaceConfig c = default_interface();
  c.addresses6 = {Ipv6Cidr{kOur6, 64}};
  c.link_local = *Ipv6Addr::parse("fe80::1");
  StackHarness h(FakePacketIo::Options{}, StackConfig{}, c);
  tcp::TcpStack tcp(h.stack, h.stack.drops(), tcp::TcpConfig{});
  tcp::TcpTransport transport(tcp);
  h.stack.set_tcp(&transport);
  h.stack.start(h.now());
  ClientParams p;
  p.target = {IpAddr(kPeer6), 9};
  p.framing = Framing::kNone;
  p.duration = Duration::zero();
  TcpSourceService source("source", p, tcp);
  ASSERT_TRUE(source.start(h.stack, h.now()));
  source.poll(h.now());
  EXPECT_TRUE(tcp.source_pending(IpAddr(kPeer6)));
  EXPECT_FALSE(tcp.source_pending(IpAddr(kPeerIp)));  // IPv4 has no tentative state
  EXPECT_EQ(tcp.counters().connections_opened, 0u);
  EXPECT_EQ(tcp.counters().connect_failed, 0u);
  h.advance(Duration::seconds(1));
  h.advance(Duration::seconds(1));
  EXPECT_FALSE(tcp.source_pending(IpAddr(kPeer6)));
  source.poll(h.now());
  EXPECT_EQ(tcp.counters().connections_opened, 1u);
  EXPECT_EQ(tcp.count_in(tcp::TcpState::kSynSent), 1u);
  EXPECT_EQ(tcp.counters().connect_failed, 0u);
  source.stop(h.now());
  tcp.shutdown_all(h.now());
}

TEST(Ipv6Tcp, ClosedPortDrawsARst) {
  DualStack d;
  StackHarness& h = *d.h;
  wire::TcpRepr syn = peer_segment(81, 77, wire::tcpflag::kSyn);
  h.rx(frame6(wire::kIpProtoTcp, tcp6(syn)));
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 1u);
  Sent6 rst = parse_sent(sent[0].bytes);
  ASSERT_EQ(rst.proto, wire::kIpProtoTcp);
  auto v = *wire::TcpView::parse(rst.l4);
  EXPECT_EQ(v.flags(), wire::tcpflag::kRst | wire::tcpflag::kAck);
  EXPECT_EQ(v.ack(), SeqNum(78));
  // A damaged segment is dropped under the TCP checksum reason, not answered.
  auto bad = tcp6(syn);
  bad[4] ^= 1;
  h.rx(frame6(wire::kIpProtoTcp, bad));
  EXPECT_EQ(h.drops(DropReason::kTcpBadChecksum), 1u);
  EXPECT_TRUE(h.io.take_sent().empty());
}

}  // namespace
}  // namespace ws::test
