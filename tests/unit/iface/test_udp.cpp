// UDP through the stack: the echo and sink services, port unreachable, checksum
// and length validation, ICMP error rate limiting, MTU and buffer exhaustion,
// ARP before the first reply, and transmit checksum offload.
#include <gtest/gtest.h>

#include <string>

#include "stack/apps/udp_services.hpp"
#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

using wire::IcmpView;
using wire::Ipv4View;
using wire::UdpView;

constexpr size_t kEth = 14;
constexpr uint16_t kEchoPort = 7;
constexpr uint16_t kSinkPort = 9;
constexpr uint16_t kClosedPort = 4444;
constexpr uint16_t kPeerPort = 40000;

std::vector<uint8_t> udp_in(std::span<const uint8_t> payload, uint16_t dport = kEchoPort,
                            Ipv4Spec ip = StackHarness::ip_in(), UdpSpec u = {}) {
  u.dst_port = dport;
  u.src_port = kPeerPort;
  return udp_frame(StackHarness::eth_in(), ip, u, payload);
}

struct Parsed {
  Ipv4View ip;
  UdpView udp;
};

// Parses and checks the headers of a UDP datagram we sent to the peer.
std::optional<Parsed> parse_udp_out(const std::vector<uint8_t>& f) {
  auto ip = Ipv4View::parse(std::span(f).subspan(kEth));
  if (!ip || ip->protocol() != wire::kIpProtoUdp || ip->total_len() + kEth > f.size()) {
    return std::nullopt;
  }
  auto udp = UdpView::parse(ip->payload());
  if (!udp || !udp->length_valid()) return std::nullopt;
  return Parsed{*ip, *udp};
}

class EchoFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(echo.start(h.stack, h.now()));
    ASSERT_TRUE(sink.start(h.stack, h.now()));
    h.learn();
  }
  void TearDown() override {
    echo.stop(h.now());
    sink.stop(h.now());
  }
  StackHarness h;
  UdpEchoService echo{"echo", kEchoPort};
  UdpSinkService sink{"sink", kSinkPort};
};

using UdpEcho = EchoFixture;

TEST_F(UdpEcho, RoundTripEveryPayloadSizeByteForByte) {
  for (size_t n = 1; n <= 1472; ++n) {
    SCOPED_TRACE("payload " + std::to_string(n));
    auto payload = pattern(n, static_cast<uint8_t>(n));
    h.rx(udp_in(payload));
    auto sent = h.io.take_sent();
    ASSERT_EQ(sent.size(), 1u);
    const auto& f = sent[0].bytes;
    ASSERT_EQ(f.size(), std::max<size_t>(60, kEth + 20 + 8 + n));
    EXPECT_EQ(MacAddr::from_bytes(f.data()), kPeerMac);
    EXPECT_EQ(MacAddr::from_bytes(f.data() + 6), kOurMac);
    auto p = parse_udp_out(f);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->ip.src(), kOurIp);
    EXPECT_EQ(p->ip.dst(), kPeerIp);
    EXPECT_EQ(p->ip.total_len(), 20 + 8 + n);
    EXPECT_EQ(p->udp.src_port(), kEchoPort);
    EXPECT_EQ(p->udp.dst_port(), kPeerPort);
    EXPECT_EQ(p->udp.length(), 8 + n);
    EXPECT_TRUE(ipv4_checksum_ok(f));
    EXPECT_TRUE(udp_checksum_ok(f));
    EXPECT_NE(p->udp.checksum(), 0);
    auto got = p->udp.payload();
    ASSERT_EQ(got.size(), n);
    ASSERT_TRUE(std::equal(payload.begin(), payload.end(), got.begin()));
    EXPECT_EQ(sent[0].flags, 0u);  // no offloads on this port
  }
  EXPECT_EQ(echo.counters().rx_messages, 1472u);
  EXPECT_EQ(echo.counters().tx_messages, 1472u);
  EXPECT_EQ(echo.counters().rx_bytes, 1472u * 1473u / 2);
  EXPECT_EQ(echo.counters().tx_bytes, 1472u * 1473u / 2);
  EXPECT_EQ(echo.counters().send_failures, 0u);
  EXPECT_EQ(h.stack.counters().udp_in[kFamilyIpv4], 1472u);
  EXPECT_EQ(h.stack.counters().udp_out[kFamilyIpv4], 1472u);
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST_F(UdpEcho, EmptyDatagramIsEchoed) {
  h.rx(udp_in({}));
  ASSERT_EQ(h.io.sent_count(), 1u);
  auto p = parse_udp_out(h.io.sent()[0].bytes);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->udp.length(), 8);
  EXPECT_TRUE(udp_checksum_ok(h.io.sent()[0].bytes));
}

TEST_F(UdpEcho, SinkCountsAndSendsNothing) {
  size_t bytes = 0;
  for (size_t n : {1u, 100u, 1472u, 0u, 33u}) {
    h.rx(udp_in(pattern(n), kSinkPort));
    bytes += n;
  }
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_EQ(sink.counters().rx_messages, 5u);
  EXPECT_EQ(sink.counters().rx_bytes, bytes);
  EXPECT_EQ(sink.counters().tx_messages, 0u);
  EXPECT_EQ(h.total_drops(), 0u);
}

TEST_F(UdpEcho, ZeroChecksumIsAccepted) {
  UdpSpec u;
  u.checksum = 0;  // RFC 768: the sender computed none
  auto payload = pattern(40);
  h.rx(udp_in(payload, kEchoPort, StackHarness::ip_in(), u));
  EXPECT_EQ(h.total_drops(), 0u);
  ASSERT_EQ(h.io.sent_count(), 1u);
  EXPECT_TRUE(udp_checksum_ok(h.io.sent()[0].bytes));  // we always send one
}

TEST_F(UdpEcho, BadChecksumIsDropped) {
  UdpSpec u;
  u.corrupt_checksum = true;
  h.rx(udp_in(pattern(40), kEchoPort, StackHarness::ip_in(), u));
  EXPECT_EQ(h.drops(DropReason::kUdpBadChecksum), 1u);
  EXPECT_EQ(h.total_drops(), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_EQ(echo.counters().rx_messages, 0u);
}

TEST_F(UdpEcho, ChecksumCoversThePseudoHeader) {
  // A datagram whose checksum was computed for another destination address.
  auto f = udp_in(pattern(40));
  Ipv4Spec wrong = StackHarness::ip_in(kPeerIp, kOtherIp);
  UdpSpec u;
  u.src_port = kPeerPort;
  u.dst_port = kEchoPort;
  auto g = udp_frame(StackHarness::eth_in(), wrong, u, pattern(40));
  // Same datagram, UDP checksum from g: valid only for kOtherIp.
  std::copy(g.begin() + kEth + 20 + 6, g.begin() + kEth + 20 + 8, f.begin() + kEth + 20 + 6);
  h.rx(f);
  EXPECT_EQ(h.drops(DropReason::kUdpBadChecksum), 1u);
}

TEST_F(UdpEcho, BadLengthsAreDropped) {
  struct Case {
    const char* name;
    uint16_t length;
    DropReason reason;
  };
  for (const auto& c : {Case{"below_header", 7, DropReason::kUdpBadLength},
                        Case{"zero", 0, DropReason::kUdpBadLength},
                        Case{"beyond_ip_payload", 8 + 40 + 1, DropReason::kUdpBadLength},
                        Case{"max", 0xffff, DropReason::kUdpBadLength}}) {
    SCOPED_TRACE(c.name);
    StackHarness g;
    UdpEchoService e("echo", kEchoPort);
    ASSERT_TRUE(e.start(g.stack, g.now()));
    g.learn();
    UdpSpec u;
    u.length = c.length;
    g.rx(udp_in(pattern(40), kEchoPort, StackHarness::ip_in(), u));
    EXPECT_EQ(g.drops(c.reason), 1u);
    EXPECT_EQ(g.total_drops(), 1u);
    EXPECT_EQ(g.io.sent_count(), 0u);
    e.stop(g.now());
  }
}

TEST_F(UdpEcho, TruncatedHeaderIsDropped) {
  Ipv4Spec ip = StackHarness::ip_in();
  ip.protocol = wire::kIpProtoUdp;
  std::vector<uint8_t> seven{0x9c, 0x40, 0, 7, 0, 8, 0};
  h.rx(ipv4_frame(StackHarness::eth_in(), ip, seven));
  EXPECT_EQ(h.drops(DropReason::kUdpTruncated), 1u);
  EXPECT_EQ(h.total_drops(), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

TEST_F(UdpEcho, LengthShorterThanIpPayloadTrimsTheDatagram) {
  // RFC 768 length 8 + 10 inside a 40-byte IP payload: the rest is not data. The
  // checksum covers only the declared length, so compute it for the short datagram.
  auto payload = pattern(10);
  auto f = udp_in(payload);
  auto ip = StackHarness::ip_in();
  ip.pad = 0;
  std::vector<uint8_t> seg(f.begin() + kEth + 20, f.end());
  seg.resize(40, 0xee);
  ip.protocol = wire::kIpProtoUdp;
  h.rx(ipv4_frame(StackHarness::eth_in(), ip, seg));
  EXPECT_EQ(h.total_drops(), 0u);
  ASSERT_EQ(h.io.sent_count(), 1u);
  auto p = parse_udp_out(h.io.sent()[0].bytes);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->udp.payload().size(), 10u);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), p->udp.payload().begin()));
}

TEST_F(UdpEcho, EthernetPaddingIsNotPartOfThePayload) {
  Ipv4Spec ip = StackHarness::ip_in();
  ip.pad = 14;  // 14 + 20 + 8 + 4 = 46: padded to 60
  auto payload = pattern(4);
  h.rx(udp_in(payload, kEchoPort, ip));
  ASSERT_EQ(h.io.sent_count(), 1u);
  auto p = parse_udp_out(h.io.sent()[0].bytes);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->udp.payload().size(), 4u);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), p->udp.payload().begin()));
}

// --- port unreachable ---

TEST_F(UdpEcho, ClosedPortAnswersPortUnreachableQuotingTheDatagram) {
  auto f = udp_in(pattern(64), kClosedPort);
  h.rx(f);
  EXPECT_EQ(h.drops(DropReason::kUdpPortUnreachable), 1u);
  EXPECT_EQ(h.total_drops(), 1u);
  ASSERT_EQ(h.io.sent_count(), 1u);
  const auto& out = h.io.sent()[0].bytes;
  EXPECT_EQ(MacAddr::from_bytes(out.data()), kPeerMac);
  EXPECT_TRUE(ipv4_checksum_ok(out));
  EXPECT_TRUE(icmp_checksum_ok(out));
  auto ip = Ipv4View::parse(std::span(out).subspan(kEth));
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->protocol(), wire::kIpProtoIcmp);
  EXPECT_EQ(ip->src(), kOurIp);
  EXPECT_EQ(ip->dst(), kPeerIp);
  auto icmp = IcmpView::parse(ip->payload());
  ASSERT_TRUE(icmp);
  EXPECT_EQ(icmp->type(), 3);
  EXPECT_EQ(icmp->code(), 3);
  EXPECT_EQ(load_be32(icmp->bytes().data() + 4), 0u);  // unused field
  // The whole offending datagram, from its IPv4 header on.
  std::span<const uint8_t> original(f.data() + kEth, f.size() - kEth);
  ASSERT_EQ(icmp->body().size(), original.size());
  EXPECT_TRUE(std::equal(original.begin(), original.end(), icmp->body().begin()));
  EXPECT_EQ(h.stack.counters().icmp_errors_out, 1u);
}

TEST_F(UdpEcho, PortUnreachableQuoteIsCappedAt576Bytes) {
  auto f = udp_in(pattern(1472), kClosedPort);
  h.rx(f);
  ASSERT_EQ(h.io.sent_count(), 1u);
  const auto& out = h.io.sent()[0].bytes;
  auto ip = Ipv4View::parse(std::span(out).subspan(kEth));
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->total_len(), 576);  // RFC 1812 4.3.2.3
  auto icmp = IcmpView::parse(ip->payload());
  ASSERT_TRUE(icmp);
  ASSERT_EQ(icmp->body().size(), 576u - 20 - 8);
  EXPECT_TRUE(std::equal(icmp->body().begin(), icmp->body().end(), f.begin() + kEth));
  EXPECT_TRUE(icmp_checksum_ok(out));
}

TEST_F(UdpEcho, NoPortUnreachableForBroadcastDestinations) {
  for (Ipv4Addr dst : {Ipv4Addr::broadcast(), kSubnetBroadcast}) {
    SCOPED_TRACE(dst.to_string());
    h.rx(udp_frame(StackHarness::eth_in(kPeerMac, MacAddr::broadcast()),
                   StackHarness::ip_in(kPeerIp, dst), UdpSpec{}, pattern(20)));
  }
  // UdpSpec{} goes to port 7 (echo is bound) - send to a closed port too.
  h.io.clear_sent();
  for (Ipv4Addr dst : {Ipv4Addr::broadcast(), kSubnetBroadcast}) {
    UdpSpec u;
    u.dst_port = kClosedPort;
    h.rx(udp_frame(StackHarness::eth_in(kPeerMac, MacAddr::broadcast()),
                   StackHarness::ip_in(kPeerIp, dst), u, pattern(20)));
  }
  EXPECT_EQ(h.drops(DropReason::kUdpPortUnreachable), 2u);
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_EQ(h.stack.counters().icmp_errors_out, 0u);
}

TEST_F(UdpEcho, NoPortUnreachableForLinkLayerBroadcast) {
  // RFC 1122 3.2.2: no ICMP error about a datagram sent as a link-layer broadcast,
  // even when its IP destination is our unicast address.
  UdpSpec u;
  u.dst_port = kClosedPort;
  h.rx(udp_frame(StackHarness::eth_in(kPeerMac, MacAddr::broadcast()), StackHarness::ip_in(), u,
                 pattern(20)));
  EXPECT_EQ(h.drops(DropReason::kUdpPortUnreachable), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
  // Unknown protocol likewise.
  Ipv4Spec ip = StackHarness::ip_in();
  ip.protocol = 200;
  h.rx(ipv4_frame(StackHarness::eth_in(kPeerMac, MacAddr::broadcast()), ip, pattern(20)));
  EXPECT_EQ(h.drops(DropReason::kIpv4UnknownProtocol), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

TEST_F(UdpEcho, NoPortUnreachableToTheZeroAddress) {
  // A host without an address yet (source 0.0.0.0, RFC 1122 3.2.1.3) does not
  // identify a single host: no ICMP error for it (RFC 1122 3.2.2), with or
  // without a gateway that could carry one.
  for (bool with_gateway : {false, true}) {
    SCOPED_TRACE(with_gateway);
    InterfaceConfig c = default_interface();
    if (with_gateway) c.gateway = Ipv4Addr::from_octets(10, 0, 0, 254);
    StackHarness g({}, {}, c);
    g.learn(Ipv4Addr::from_octets(10, 0, 0, 254), kOtherMac);
    g.rx(udp_in(pattern(20), kClosedPort, StackHarness::ip_in(Ipv4Addr::any(), kOurIp)));
    EXPECT_EQ(g.drops(DropReason::kUdpPortUnreachable), 1u);
    EXPECT_EQ(g.total_drops(), 1u);
    EXPECT_EQ(g.io.sent_count(), 0u);
  }
}

TEST_F(UdpEcho, BroadcastToBoundPortIsDelivered) {
  h.rx(udp_frame(
      StackHarness::eth_in(kPeerMac, MacAddr::broadcast()),
      StackHarness::ip_in(kPeerIp, Ipv4Addr::broadcast()),
      [] {
        UdpSpec u;
        u.dst_port = kSinkPort;
        return u;
      }(),
      pattern(20)));
  EXPECT_EQ(sink.counters().rx_messages, 1u);
  EXPECT_EQ(h.total_drops(), 0u);
}

TEST(UdpIcmpRateLimit, BurstThenRefillOverVirtualTime) {
  StackConfig cfg;
  cfg.icmp_error_burst = 5;
  cfg.icmp_errors_per_second = 10;  // one token every 100 ms
  StackHarness h({}, cfg);
  h.learn();
  auto f = udp_in(pattern(8), kClosedPort);
  for (int i = 0; i < 8; ++i) h.rx(f);
  EXPECT_EQ(h.io.sent_count(), 5u);
  EXPECT_EQ(h.drops(DropReason::kIcmpRateLimited), 3u);
  EXPECT_EQ(h.drops(DropReason::kUdpPortUnreachable), 8u);

  h.advance(Duration::millis(99));
  h.rx(f);
  EXPECT_EQ(h.io.sent_count(), 5u);
  h.advance(Duration::millis(1));  // 100 ms since the burst: one token
  h.rx(f);
  EXPECT_EQ(h.io.sent_count(), 6u);
  h.rx(f);
  EXPECT_EQ(h.io.sent_count(), 6u);
  EXPECT_EQ(h.drops(DropReason::kIcmpRateLimited), 5u);

  // A long quiet period refills only up to the burst.
  h.advance(Duration::seconds(10));  // (less than the ARP entry's 60 s life)
  for (int i = 0; i < 10; ++i) h.rx(f);
  EXPECT_EQ(h.io.sent_count(), 11u);
  EXPECT_EQ(h.drops(DropReason::kIcmpRateLimited), 10u);
  EXPECT_EQ(h.stack.counters().icmp_errors_out, 11u);
}

TEST(UdpIcmpRateLimit, ProtocolUnreachableSharesTheBucket) {
  StackConfig cfg;
  cfg.icmp_error_burst = 2;
  cfg.icmp_errors_per_second = 1;
  StackHarness h({}, cfg);
  h.learn();
  Ipv4Spec ip = StackHarness::ip_in();
  ip.protocol = 99;
  h.rx(ipv4_frame(StackHarness::eth_in(), ip, pattern(8)));
  h.rx(udp_in(pattern(8), kClosedPort));
  h.rx(udp_in(pattern(8), kClosedPort));
  EXPECT_EQ(h.io.sent_count(), 2u);
  EXPECT_EQ(h.drops(DropReason::kIcmpRateLimited), 1u);
}

// --- sending limits ---

TEST(UdpSend, DatagramTooLargeForMtu) {
  StackHarness h;
  h.learn();
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, pattern(1472), h.now()));
  // One byte more does not fit: two fragments (RFC 791 3.2), DF being clear.
  EXPECT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, pattern(1473), h.now()));
  EXPECT_EQ(h.io.sent_count(), 3u);
  // Beyond 65535 bytes of IP datagram nothing can carry it.
  EXPECT_FALSE(s->send_to(Endpoint{kPeerIp, 9}, pattern(65508), h.now()));
  EXPECT_EQ(h.drops(DropReason::kFrameTooLong), 1u);
  EXPECT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, pattern(65507), h.now()));
  EXPECT_EQ(h.io.sent_count(), 3u + 45u);
  EXPECT_EQ(h.stack.counters().udp_out[kFamilyIpv4], 3u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(UdpSend, PortMaxFrameLengthAlsoBounds) {
  // The interface claims MTU 9000 but the port only sends 1514-byte frames.
  FakePacketIo::Options o;
  o.data_room = 10000;
  InterfaceConfig c = default_interface();
  c.mtu = 9000;
  StackHarness h(o, {}, c);
  h.learn();
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  EXPECT_FALSE(s->send_to(Endpoint{kPeerIp, 9}, pattern(1473), h.now()));
  EXPECT_EQ(h.drops(DropReason::kFrameTooLong), 1u);
}

TEST(UdpSend, JumboDatagramOnJumboPort) {
  FakePacketIo::Options o;
  o.data_room = 10000;
  o.max_frame_len = 9014;
  InterfaceConfig c = default_interface();
  c.mtu = 9000;
  StackHarness h(o, {}, c);
  UdpEchoService echo("echo", kEchoPort);
  ASSERT_TRUE(echo.start(h.stack, h.now()));
  h.learn();
  auto payload = pattern(8972);
  h.rx(udp_in(payload));
  ASSERT_EQ(h.io.sent_count(), 1u);
  auto p = parse_udp_out(h.io.sent()[0].bytes);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->udp.payload().size(), payload.size());
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), p->udp.payload().begin()));
  EXPECT_TRUE(udp_checksum_ok(h.io.sent()[0].bytes));
  echo.stop(h.now());
}

TEST(UdpSend, NoRouteIsCounted) {
  StackHarness h;
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  EXPECT_FALSE(s->send_to(Endpoint{Ipv4Addr::from_octets(8, 8, 8, 8), 53}, pattern(4), h.now()));
  EXPECT_EQ(h.drops(DropReason::kIpv4NoRoute), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

TEST(UdpSend, GatewayIsUsedForOffLinkDestinations) {
  InterfaceConfig c = default_interface();
  c.gateway = Ipv4Addr::from_octets(10, 0, 0, 254);
  StackHarness h({}, {}, c);
  constexpr MacAddr kGwMac{{0x02, 0, 0, 0, 0, 0xfe}};
  h.learn(*c.gateway, kGwMac);
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  Ipv4Addr far = Ipv4Addr::from_octets(8, 8, 8, 8);
  ASSERT_TRUE(s->send_to(Endpoint{far, 53}, pattern(4), h.now()));
  ASSERT_EQ(h.io.sent_count(), 1u);
  const auto& f = h.io.sent()[0].bytes;
  EXPECT_EQ(MacAddr::from_bytes(f.data()), kGwMac);
  auto p = parse_udp_out(f);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ip.dst(), far);
}

TEST(UdpSend, BroadcastGoesToTheBroadcastMacWithoutArp) {
  StackHarness h;
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_TRUE(s->send_to(Endpoint{kSubnetBroadcast, 9}, pattern(4), h.now()));
  ASSERT_TRUE(s->send_to(Endpoint{Ipv4Addr::broadcast(), 9}, pattern(4), h.now()));
  ASSERT_EQ(h.io.sent_count(), 2u);
  for (const auto& f : h.io.sent()) {
    EXPECT_EQ(MacAddr::from_bytes(f.bytes.data()), MacAddr::broadcast());
    EXPECT_TRUE(udp_checksum_ok(f.bytes));
  }
}

TEST_F(UdpEcho, FullMempoolCountsNoMbufAndRecovers) {
  h.io.set_available(0);
  auto payload = pattern(100);
  for (int i = 0; i < 3; ++i) h.rx(udp_in(payload));
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_EQ(h.drops(DropReason::kNoMbuf), 3u);
  EXPECT_EQ(echo.counters().rx_messages, 3u);
  EXPECT_EQ(echo.counters().send_failures, 3u);
  EXPECT_EQ(echo.counters().tx_messages, 0u);
  EXPECT_EQ(h.io.outstanding(), 0u);
  // Buffers come back: service resumes.
  h.io.restore_pool();
  h.rx(udp_in(payload));
  ASSERT_EQ(h.io.sent_count(), 1u);
  EXPECT_EQ(echo.counters().tx_messages, 1u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST_F(UdpEcho, TxRingFullLosesTheFrameButNoBuffer) {
  h.io.set_tx_ring_full(true);
  h.rx(udp_in(pattern(10)));
  EXPECT_EQ(h.io.tx_dropped(), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
  h.io.set_tx_ring_full(false);
  h.rx(udp_in(pattern(10)));
  EXPECT_EQ(h.io.sent_count(), 1u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(UdpArp, FirstReplyWaitsForArpResolution) {
  StackHarness h;
  UdpEchoService echo("echo", kEchoPort);
  ASSERT_TRUE(echo.start(h.stack, h.now()));
  auto payload = pattern(200);
  h.rx(udp_in(payload));
  // The peer is unknown: an ARP request goes out and the reply is held.
  ASSERT_EQ(h.io.sent_count(), 1u);
  const auto& req = h.io.sent()[0].bytes;
  EXPECT_EQ(MacAddr::from_bytes(req.data()), MacAddr::broadcast());
  EXPECT_EQ(load_be16(req.data() + 12), wire::kEtherTypeArp);
  EXPECT_EQ(load_be16(req.data() + kEth + 6), 1);           // request
  EXPECT_EQ(load_be32(req.data() + kEth + 24), kPeerIp.v);  // target
  EXPECT_EQ(h.io.outstanding(), 1u);
  EXPECT_EQ(echo.counters().tx_messages, 1u);  // handed to the stack
  h.io.clear_sent();

  h.advance(Duration::millis(300));
  wire::ArpRepr r{wire::ArpOp::kReply, kPeerMac, kPeerIp, kOurMac, kOurIp};
  h.rx(arp_frame(EthSpec{kOurMac, kPeerMac}, ArpSpec{r}));
  ASSERT_EQ(h.io.sent_count(), 1u);
  const auto& f = h.io.sent()[0].bytes;
  EXPECT_EQ(MacAddr::from_bytes(f.data()), kPeerMac);
  auto p = parse_udp_out(f);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->udp.payload().size(), payload.size());
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), p->udp.payload().begin()));
  EXPECT_TRUE(udp_checksum_ok(f));
  EXPECT_TRUE(ipv4_checksum_ok(f));
  // The next reply goes straight out.
  h.io.clear_sent();
  h.rx(udp_in(payload));
  EXPECT_EQ(h.io.sent_count(), 1u);
  EXPECT_TRUE(h.io.no_leaks());
  echo.stop(h.now());
}

// --- transmit checksum offload ---

FakePacketIo::Options offload_port() {
  FakePacketIo::Options o;
  o.offloads.ipv4_cksum = true;
  o.offloads.udp_cksum = true;
  return o;
}

TEST(UdpTxOffload, PseudoHeaderSumStoredAndFlagsSet) {
  StackHarness h(offload_port());
  UdpEchoService echo("echo", kEchoPort);
  ASSERT_TRUE(echo.start(h.stack, h.now()));
  h.learn();
  auto payload = pattern(333);
  h.rx(udp_in(payload));
  ASSERT_EQ(h.io.sent_count(), 1u);
  SentFrame s = h.io.sent()[0];
  EXPECT_EQ(s.flags, static_cast<uint32_t>(kTxIpv4Cksum | kTxUdpCksum));
  EXPECT_EQ(s.l2_len, 14);
  EXPECT_EQ(s.l3_len, 20);
  auto p = parse_udp_out(s.bytes);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ip.checksum(), 0);  // left for the NIC
  // The UDP checksum field holds the folded, uncomplemented pseudo-header sum.
  uint32_t pseudo = ipv4_pseudo_sum(kOurIp, kPeerIp, wire::kIpProtoUdp,
                                    static_cast<uint16_t>(8 + payload.size()));
  EXPECT_EQ(p->udp.checksum(), static_cast<uint16_t>(~csum_fold(pseudo)));
  // What the NIC puts on the wire is then valid.
  complete_tx_offloads(s);
  EXPECT_TRUE(ipv4_checksum_ok(s.bytes));
  EXPECT_TRUE(udp_checksum_ok(s.bytes));
  echo.stop(h.now());
}

TEST(UdpTxOffload, NicResultEqualsSoftwareChecksums) {
  auto run = [](FakePacketIo::Options o, bool software) {
    InterfaceConfig c = default_interface();
    c.software_checksums = software;
    StackHarness h(o, {}, c);
    UdpEchoService echo("echo", kEchoPort);
    EXPECT_TRUE(echo.start(h.stack, h.now()));
    h.learn();
    std::vector<SentFrame> out;
    for (size_t n : {1u, 2u, 17u, 512u, 1472u}) {
      h.rx(udp_in(pattern(n, 9)));
      for (auto& f : h.io.take_sent()) out.push_back(std::move(f));
    }
    echo.stop(h.now());
    return out;
  };
  auto hw = run(offload_port(), false);
  auto sw = run({}, false);
  auto forced_sw = run(offload_port(), true);  // software_checksums ignores the offloads
  ASSERT_EQ(hw.size(), 5u);
  ASSERT_EQ(sw.size(), 5u);
  ASSERT_EQ(forced_sw.size(), 5u);
  for (size_t i = 0; i < hw.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(sw[i].flags, 0u);
    EXPECT_EQ(forced_sw[i].flags, 0u);
    EXPECT_TRUE(udp_checksum_ok(sw[i].bytes));
    EXPECT_TRUE(ipv4_checksum_ok(sw[i].bytes));
    EXPECT_EQ(forced_sw[i].bytes, sw[i].bytes);
    complete_tx_offloads(hw[i]);
    EXPECT_EQ(hw[i].bytes, sw[i].bytes);
  }
}

TEST(UdpTxOffload, ApplyOffloadsOptionFinishesChecksumsOnTransmit) {
  FakePacketIo::Options o = offload_port();
  o.apply_offloads = true;
  StackHarness h(o);
  UdpEchoService echo("echo", kEchoPort);
  ASSERT_TRUE(echo.start(h.stack, h.now()));
  h.learn();
  h.rx(udp_in(pattern(99)));
  ASSERT_EQ(h.io.sent_count(), 1u);
  EXPECT_TRUE(ipv4_checksum_ok(h.io.sent()[0].bytes));
  EXPECT_TRUE(udp_checksum_ok(h.io.sent()[0].bytes));
  echo.stop(h.now());
}

TEST(UdpTxOffload, IcmpRepliesUseOnlyTheIpOffload) {
  StackHarness h(offload_port());
  h.learn();
  h.rx(icmp_frame(StackHarness::eth_in(), StackHarness::ip_in(), IcmpSpec{}, pattern(56)));
  ASSERT_EQ(h.io.sent_count(), 1u);
  SentFrame s = h.io.sent()[0];
  EXPECT_EQ(s.flags, static_cast<uint32_t>(kTxIpv4Cksum));
  EXPECT_TRUE(icmp_checksum_ok(s.bytes));
  complete_tx_offloads(s);
  EXPECT_TRUE(ipv4_checksum_ok(s.bytes));
}

// --- receive checksum offload for UDP ---

TEST_F(UdpEcho, RxL4GoodSkipsVerification) {
  UdpSpec u;
  u.corrupt_checksum = true;
  RxMeta m;
  m.l4 = RxMeta::Cksum::kGood;
  h.rx(udp_in(pattern(20), kEchoPort, StackHarness::ip_in(), u), m);
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(echo.counters().rx_messages, 1u);
}

TEST_F(UdpEcho, RxL4BadDrops) {
  RxMeta m;
  m.l4 = RxMeta::Cksum::kBad;
  h.rx(udp_in(pattern(20)), m);
  EXPECT_EQ(h.drops(DropReason::kUdpBadChecksum), 1u);
  EXPECT_EQ(h.total_drops(), 1u);
  EXPECT_EQ(echo.counters().rx_messages, 0u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

TEST_F(UdpEcho, RxL4BadWithZeroChecksumIsAccepted) {
  // No checksum was sent, so there is nothing for the NIC to get wrong.
  UdpSpec u;
  u.checksum = 0;
  RxMeta m;
  m.l4 = RxMeta::Cksum::kBad;
  h.rx(udp_in(pattern(20), kEchoPort, StackHarness::ip_in(), u), m);
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(echo.counters().rx_messages, 1u);
}

// --- socket table ---

TEST(UdpSockets, BindRulesAndRebind) {
  StackHarness h;
  auto nop = [](UdpSocket&, const UdpDatagram&, Instant) {};
  EXPECT_EQ(h.stack.udp_bind(0, nop), nullptr);
  UdpSocket* a = h.stack.udp_bind(7, nop);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->port(), 7);
  EXPECT_EQ(h.stack.udp_bind(7, nop), nullptr);
  h.stack.udp_unbind(7);
  EXPECT_NE(h.stack.udp_bind(7, nop), nullptr);
  EXPECT_NE(h.stack.udp_bind(65535, nop), nullptr);
  UdpEchoService echo("echo", 65535);
  EXPECT_FALSE(echo.start(h.stack, h.now()));  // port taken
}

TEST(UdpSockets, UnboundPortBecomesUnreachable) {
  StackHarness h;
  UdpSinkService sink("sink", kSinkPort);
  ASSERT_TRUE(sink.start(h.stack, h.now()));
  h.learn();
  h.rx(udp_in(pattern(5), kSinkPort));
  sink.stop(h.now());
  h.rx(udp_in(pattern(5), kSinkPort));
  EXPECT_EQ(sink.counters().rx_messages, 1u);
  EXPECT_EQ(h.drops(DropReason::kUdpPortUnreachable), 1u);
  EXPECT_EQ(h.io.sent_count(), 1u);  // the ICMP error
}

TEST(UdpSockets, HandlerSeesSourceAndDestination) {
  StackHarness h;
  UdpDatagram seen{};
  std::vector<uint8_t> data;
  h.stack.udp_bind(1234, [&](UdpSocket&, const UdpDatagram& d, Instant) {
    seen = d;
    data.assign(d.payload.begin(), d.payload.end());
  });
  h.rx(udp_in(pattern(12), 1234));
  EXPECT_EQ(seen.src, (Endpoint{kPeerIp, kPeerPort}));
  EXPECT_EQ(seen.dst, (Endpoint{kOurIp, 1234}));
  EXPECT_EQ(data, pattern(12));
}

// Buffers the test keeps for the whole burst, as the data plane keeps its mbufs.
struct KeptFrames final : RxHolder {
  bool retain(const void*) override { return false; }
  void release(const void*) override {}
};

// A burst handler gets the datagrams of a receive burst in runs: none during the burst,
// then one call with all of them, in order, byte for byte, at end_rx_burst(). A datagram
// whose bytes are not the frame's own (no owner: copied or reassembled) goes at once,
// after those waiting. The sink service counts a burst in one call.
TEST(UdpBurst, DatagramsOfABurstComeInOneCallInOrder) {
  StackHarness h;
  h.learn();
  std::vector<std::vector<uint8_t>> seen;
  size_t calls = 0;
  UdpSocket::BurstHandler handler = [&](UdpSocket&, std::span<const UdpDatagram> run, Instant) {
    ++calls;
    for (const UdpDatagram& d : run) seen.emplace_back(d.payload.begin(), d.payload.end());
  };
  ASSERT_NE(h.stack.udp_bind(kSinkPort, std::move(handler)), nullptr);
  std::vector<std::vector<uint8_t>> frames;
  for (size_t k = 0; k < 5; ++k) frames.push_back(udp_in(pattern(10 + k, uint8_t(k)), kSinkPort));
  KeptFrames kept;
  RxMeta meta;
  meta.port = h.port;
  h.stack.begin_rx_burst();
  for (size_t k = 0; k < 4; ++k) {
    PacketView v(std::span<const uint8_t>(frames[k]));
    v.set_owner(&kept, frames[k].data());
    h.stack.receive(v, meta, h.now());
  }
  EXPECT_EQ(calls, 0u);
  h.stack.receive(PacketView(std::span<const uint8_t>(frames[4])), meta, h.now());
  EXPECT_EQ(calls, 2u);  // the four held, then the one without an owner
  h.stack.end_rx_burst(h.now());
  EXPECT_EQ(calls, 2u);
  ASSERT_EQ(seen.size(), 5u);
  for (size_t k = 0; k < 5; ++k) EXPECT_EQ(seen[k], pattern(10 + k, uint8_t(k))) << k;
  h.stack.udp_unbind(kSinkPort);

  UdpSinkService sink{"sink", kSinkPort};
  ASSERT_TRUE(sink.start(h.stack, h.now()));
  h.stack.begin_rx_burst();
  for (size_t k = 0; k < 3; ++k) {
    PacketView v(std::span<const uint8_t>(frames[k]));
    v.set_owner(&kept, frames[k].data());
    h.stack.receive(v, meta, h.now());
  }
  h.stack.end_rx_burst(h.now());
  EXPECT_EQ(sink.counters().rx_messages, 3u);
  EXPECT_EQ(sink.counters().rx_bytes, 10u + 11u + 12u);
  sink.stop(h.now());
}

}  // namespace
}  // namespace ws::test
