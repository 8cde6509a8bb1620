// The stack's Ethernet demux and ARP: replies, gratuitous ARP, learning rules,
// resolution of outgoing frames, malformed ARP and Ethernet frames.
#include <gtest/gtest.h>

#include "stack/apps/udp_services.hpp"
#include "stack/core/bytes.hpp"
#include "stack/wire/arp.hpp"
#include "stack/wire/ethernet.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

using wire::ArpOp;
using wire::ArpRepr;
using wire::ArpView;
using wire::EthernetView;

constexpr size_t kArpOff = EthernetView::kHeaderLen;

std::vector<uint8_t> arp_request(Ipv4Addr target, MacAddr sha = kPeerMac, Ipv4Addr spa = kPeerIp,
                                 MacAddr eth_dst = MacAddr::broadcast()) {
  return arp_frame(EthSpec{eth_dst, sha, {}, {}},
                   ArpSpec{ArpRepr{ArpOp::kRequest, sha, spa, MacAddr{}, target}});
}

// Checks every field of a 60-byte Ethernet + ARP frame the stack sent.
void expect_arp_frame(const std::vector<uint8_t>& f, MacAddr eth_dst, uint16_t op, MacAddr tha,
                      Ipv4Addr tpa) {
  ASSERT_EQ(f.size(), 60u);
  EXPECT_EQ(MacAddr::from_bytes(f.data()), eth_dst);
  EXPECT_EQ(MacAddr::from_bytes(f.data() + 6), kOurMac);
  EXPECT_EQ(load_be16(f.data() + 12), wire::kEtherTypeArp);
  const uint8_t* a = f.data() + kArpOff;
  EXPECT_EQ(load_be16(a + ArpView::kHtypeOff), 1);
  EXPECT_EQ(load_be16(a + ArpView::kPtypeOff), 0x0800);
  EXPECT_EQ(a[ArpView::kHlenOff], 6);
  EXPECT_EQ(a[ArpView::kPlenOff], 4);
  EXPECT_EQ(load_be16(a + ArpView::kOpOff), op);
  EXPECT_EQ(MacAddr::from_bytes(a + ArpView::kShaOff), kOurMac);
  EXPECT_EQ(load_be32(a + ArpView::kSpaOff), kOurIp.v);
  EXPECT_EQ(MacAddr::from_bytes(a + ArpView::kThaOff), tha);
  EXPECT_EQ(load_be32(a + ArpView::kTpaOff), tpa.v);
  // Padding to the Ethernet minimum is zeroed (the fake fills buffers with 0xa5).
  for (size_t i = kArpOff + ArpView::kLen; i < 60; ++i) EXPECT_EQ(f[i], 0) << "byte " << i;
}

TEST(StackArp, GratuitousArpAtStart) {
  StackHarness h;
  h.stack.start(h.now());
  ASSERT_EQ(h.io.sent_count(), 1u);
  // RFC 5227 section 3: a broadcast request with sender and target = our address.
  expect_arp_frame(h.io.sent()[0].bytes, MacAddr::broadcast(),
                   static_cast<uint16_t>(ArpOp::kRequest), MacAddr{}, kOurIp);
  EXPECT_EQ(h.stack.counters().arp_gratuitous_out, 1u);
  EXPECT_EQ(h.total_drops(), 0u);
}

TEST(StackArp, GratuitousArpOnEveryInterface) {
  FakePacketIo io2;
  StackHarness h;
  InterfaceConfig c2 = default_interface();
  c2.name = "test1";
  c2.mac = MacAddr{{0x02, 0, 0, 0, 1, 1}};
  c2.address = Ipv4Cidr{Ipv4Addr::from_octets(192, 168, 7, 1), 24};
  h.stack.add_interface(c2, io2);
  h.stack.start(h.now());
  EXPECT_EQ(h.io.sent_count(), 1u);
  ASSERT_EQ(io2.sent_count(), 1u);
  EXPECT_EQ(load_be32(io2.sent()[0].bytes.data() + kArpOff + ArpView::kTpaOff), c2.address.addr.v);
  EXPECT_EQ(h.stack.counters().arp_gratuitous_out, 2u);
}

TEST(StackArp, AnswersRequestForOurAddress) {
  StackHarness h;
  h.rx(arp_request(kOurIp));
  ASSERT_EQ(h.io.sent_count(), 1u);
  expect_arp_frame(h.io.sent()[0].bytes, kPeerMac, static_cast<uint16_t>(ArpOp::kReply), kPeerMac,
                   kPeerIp);
  EXPECT_EQ(h.stack.counters().arp_requests_in, 1u);
  EXPECT_EQ(h.stack.counters().arp_replies_out, 1u);
  EXPECT_EQ(h.total_drops(), 0u);
  // A request aimed at us teaches us the sender (RFC 826 merge, "am I the target").
  EXPECT_EQ(h.stack.arp_entries(), 1u);
}

TEST(StackArp, AnswersUnicastRequest) {
  StackHarness h;
  h.rx(arp_request(kOurIp, kPeerMac, kPeerIp, kOurMac));  // RFC 1122 unicast poll
  ASSERT_EQ(h.io.sent_count(), 1u);
  expect_arp_frame(h.io.sent()[0].bytes, kPeerMac, static_cast<uint16_t>(ArpOp::kReply), kPeerMac,
                   kPeerIp);
}

TEST(StackArp, IgnoresRequestForAnotherAddress) {
  StackHarness h;
  h.rx(arp_request(kOtherIp));
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_EQ(h.drops(DropReason::kArpNotForUs), 1u);
  EXPECT_EQ(h.total_drops(), 1u);
  EXPECT_EQ(h.stack.arp_entries(), 0u);  // not aimed at us: no new entry
}

TEST(StackArp, ReplyToUsIsLearned) {
  StackHarness h;
  h.learn();
  EXPECT_EQ(h.stack.arp_entries(), 1u);
  EXPECT_EQ(h.stack.counters().arp_replies_in, 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

// Sends one UDP datagram from a bound socket and returns the destination MAC of
// what went out (broadcast ARP request if unresolved).
MacAddr udp_out_dst_mac(StackHarness& h, Ipv4Addr to) {
  UdpSocket* s = h.stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
  EXPECT_NE(s, nullptr);
  std::vector<uint8_t> p{1, 2, 3};
  EXPECT_TRUE(s->send_to(Endpoint{to, 9}, p, h.now()));
  h.stack.udp_unbind(5555);
  EXPECT_GE(h.io.sent_count(), 1u);
  return MacAddr::from_bytes(h.io.sent().back().bytes.data());
}

TEST(StackArp, MergeRefreshesExistingEntryFromAnyArp) {
  StackHarness h;
  h.learn(kPeerIp, kPeerMac);
  // The peer's NIC changed; it announces itself in a request for someone else.
  constexpr MacAddr kNewMac{{0x02, 0, 0, 0, 0, 0x22}};
  h.rx(arp_request(kOtherIp, kNewMac, kPeerIp));
  EXPECT_EQ(h.drops(DropReason::kArpNotForUs), 1u);
  EXPECT_EQ(h.stack.arp_entries(), 1u);
  EXPECT_EQ(udp_out_dst_mac(h, kPeerIp), kNewMac);
}

TEST(StackArp, SenderOutsideOurSubnetIsNotLearned) {
  StackHarness h;
  h.rx(arp_request(kOurIp, kPeerMac, Ipv4Addr::from_octets(192, 168, 1, 1)));
  EXPECT_EQ(h.stack.arp_entries(), 0u);
  // It is still answered (the request is for our address).
  EXPECT_EQ(h.io.sent_count(), 1u);
}

TEST(StackArp, ProbeFromZeroAddressIsAnsweredButNotLearned) {
  StackHarness h;
  // RFC 5227 probe: sender address 0.0.0.0.
  h.rx(arp_request(kOurIp, kPeerMac, Ipv4Addr::any()));
  EXPECT_EQ(h.stack.arp_entries(), 0u);
  ASSERT_EQ(h.io.sent_count(), 1u);
}

TEST(StackArp, ResolvesBeforeSendingAndFlushesOnReply) {
  StackHarness h;
  UdpSocket* s = h.stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_NE(s, nullptr);
  auto p = pattern(100);
  ASSERT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, p, h.now()));
  ASSERT_EQ(h.io.sent_count(), 1u);
  expect_arp_frame(h.io.sent()[0].bytes, MacAddr::broadcast(),
                   static_cast<uint16_t>(ArpOp::kRequest), MacAddr{}, kPeerIp);
  EXPECT_EQ(h.stack.counters().arp_requests_out, 1u);
  EXPECT_EQ(h.io.outstanding(), 1u);  // the datagram waits for the answer
  h.io.clear_sent();
  h.rx(arp_frame(EthSpec{kOurMac, kPeerMac, {}, {}},
                 ArpSpec{ArpRepr{ArpOp::kReply, kPeerMac, kPeerIp, kOurMac, kOurIp}}));
  ASSERT_EQ(h.io.sent_count(), 1u);
  const auto& f = h.io.sent()[0].bytes;
  EXPECT_EQ(MacAddr::from_bytes(f.data()), kPeerMac);
  EXPECT_EQ(MacAddr::from_bytes(f.data() + 6), kOurMac);
  EXPECT_EQ(load_be16(f.data() + 12), wire::kEtherTypeIpv4);
  EXPECT_TRUE(udp_checksum_ok(f));
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(StackArp, RetriesOnPollThenDropsAndCountsQueuedFrames) {
  StackHarness h;  // default ArpConfig: 3 requests, 1 s apart
  UdpSocket* s = h.stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_NE(s, nullptr);
  std::vector<uint8_t> p{0xab};
  ASSERT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, p, h.now()));
  ASSERT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, p, h.now()));
  EXPECT_EQ(h.io.sent_count(), 1u);  // one request for both
  Instant next = h.stack.poll(h.now());
  EXPECT_EQ(next, h.now() + Duration::seconds(1));
  h.advance(Duration::millis(999));
  EXPECT_EQ(h.io.sent_count(), 1u);
  h.advance(Duration::millis(1));
  EXPECT_EQ(h.io.sent_count(), 2u);
  h.advance(Duration::seconds(1));
  EXPECT_EQ(h.io.sent_count(), 3u);
  EXPECT_EQ(h.drops(DropReason::kArpResolveFailed), 0u);
  next = h.advance(Duration::seconds(1));
  EXPECT_EQ(h.io.sent_count(), 3u);
  EXPECT_TRUE(next.is_never());
  EXPECT_EQ(h.drops(DropReason::kArpResolveFailed), 2u);
  EXPECT_EQ(h.stack.counters().arp_requests_out, 3u);
  EXPECT_EQ(h.io.releases(), 2u);
  EXPECT_TRUE(h.io.no_leaks());
  for (const auto& f : h.io.sent()) {
    expect_arp_frame(f.bytes, MacAddr::broadcast(), static_cast<uint16_t>(ArpOp::kRequest),
                     MacAddr{}, kPeerIp);
  }
}

// An owner whose PacketIo dies before the stack (the data plane's pipeline) gets the
// frames waiting for ARP back first, through release_buffers().
TEST(StackArp, ReleaseBuffersReturnsQueuedFrames) {
  StackHarness h;
  UdpSocket* s = h.stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_NE(s, nullptr);
  std::vector<uint8_t> p{0xab};
  ASSERT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, p, h.now()));
  ASSERT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, p, h.now()));
  EXPECT_EQ(h.io.outstanding(), 2u);  // both datagrams wait for ARP
  h.stack.release_buffers();
  EXPECT_EQ(h.io.outstanding(), 0u);
  EXPECT_EQ(h.io.releases(), 2u);
  EXPECT_EQ(h.drops(DropReason::kArpResolveFailed), 2u);
  h.stack.release_buffers();  // nothing left: a second call (the destructor's) is a no-op
  EXPECT_EQ(h.io.releases(), 2u);
}

TEST(StackArp, QueueFullIsCountedAndBufferReturned) {
  StackConfig cfg;
  cfg.arp.max_pending_per_entry = 2;
  StackHarness h({}, cfg);
  UdpSocket* s = h.stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
  std::vector<uint8_t> p{1};
  for (int i = 0; i < 5; ++i) s->send_to(Endpoint{kPeerIp, 9}, p, h.now());
  EXPECT_EQ(h.drops(DropReason::kArpQueueFull), 3u);
  EXPECT_EQ(h.io.outstanding(), 2u);
  h.learn();  // flushes the two queued datagrams (then forgets what was sent)
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(StackArp, EntryExpiresAndIsResolvedAgain) {
  StackConfig cfg;
  cfg.arp.reachable_time = Duration::seconds(10);
  StackHarness h({}, cfg);
  h.learn();
  EXPECT_EQ(h.stack.poll(h.now()), h.now() + Duration::seconds(10));
  EXPECT_EQ(udp_out_dst_mac(h, kPeerIp), kPeerMac);
  h.advance(Duration::seconds(10));
  EXPECT_EQ(h.stack.arp_entries(), 0u);
  EXPECT_EQ(h.stack.counters().arp_entries, 0u);
  h.io.clear_sent();
  EXPECT_EQ(udp_out_dst_mac(h, kPeerIp), MacAddr::broadcast());  // an ARP request
  h.learn();
}

TEST(StackArp, PendingFramesAreReturnedWhenTheStackIsDestroyed) {
  FakePacketIo io;
  {
    Stack stack;
    stack.add_interface(default_interface(), io);
    UdpSocket* s = stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
    std::vector<uint8_t> p{1, 2};
    s->send_to(Endpoint{kPeerIp, 9}, p, Instant::from_ns(1));
    EXPECT_EQ(io.outstanding(), 1u);
  }
  EXPECT_TRUE(io.no_leaks());
}

TEST(StackArp, NoBufferForReplyIsCounted) {
  StackHarness h;
  h.io.set_available(0);
  h.rx(arp_request(kOurIp));
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_EQ(h.drops(DropReason::kNoMbuf), 1u);
  h.io.restore_pool();
  h.rx(arp_request(kOurIp));
  EXPECT_EQ(h.io.sent_count(), 1u);
}

struct BadArpCase {
  const char* name;
  DropReason reason;
  std::vector<uint8_t> frame;
};

std::vector<BadArpCase> bad_arp_cases() {
  EthSpec eth{MacAddr::broadcast(), kPeerMac, {}, {}};
  ArpRepr req{ArpOp::kRequest, kPeerMac, kPeerIp, MacAddr{}, kOurIp};
  std::vector<BadArpCase> v;
  auto truncated = arp_frame(eth, ArpSpec{req}, false);
  truncated.resize(EthernetView::kHeaderLen + ArpView::kLen - 1);
  v.push_back({"truncated", DropReason::kArpTruncated, truncated});
  ArpSpec s{req};
  s.htype = 6;
  v.push_back({"htype", DropReason::kArpBadFormat, arp_frame(eth, s)});
  s = ArpSpec{req};
  s.ptype = 0x86dd;
  v.push_back({"ptype", DropReason::kArpBadFormat, arp_frame(eth, s)});
  s = ArpSpec{req};
  s.hlen = 8;
  v.push_back({"hlen", DropReason::kArpBadFormat, arp_frame(eth, s)});
  s = ArpSpec{req};
  s.plen = 16;
  v.push_back({"plen", DropReason::kArpBadFormat, arp_frame(eth, s)});
  s = ArpSpec{req};
  s.op_raw = 3;  // RARP request
  v.push_back({"op", DropReason::kArpBadFormat, arp_frame(eth, s)});
  ArpRepr mc = req;
  mc.sender_mac = MacAddr{{0x01, 0x00, 0x5e, 0, 0, 1}};
  v.push_back({"multicast_sender_mac", DropReason::kArpBadFormat, arp_frame(eth, ArpSpec{mc})});
  ArpRepr bc = req;
  bc.sender_ip = Ipv4Addr::broadcast();
  v.push_back({"broadcast_sender_ip", DropReason::kArpBadFormat, arp_frame(eth, ArpSpec{bc})});
  return v;
}

TEST(StackArp, MalformedArpIsDroppedUnderItsReason) {
  for (const auto& c : bad_arp_cases()) {
    SCOPED_TRACE(c.name);
    StackHarness h;
    h.rx(c.frame);
    EXPECT_EQ(h.drops(c.reason), 1u);
    EXPECT_EQ(h.total_drops(), 1u);
    EXPECT_EQ(h.io.sent_count(), 0u);
    EXPECT_EQ(h.stack.arp_entries(), 0u);
  }
}

// --- Ethernet ---

struct EthCase {
  const char* name;
  DropReason reason;
  std::vector<uint8_t> frame;
};

std::vector<EthCase> bad_eth_cases() {
  ArpRepr req{ArpOp::kRequest, kPeerMac, kPeerIp, MacAddr{}, kOurIp};
  std::vector<EthCase> v;
  auto good = arp_frame(EthSpec{MacAddr::broadcast(), kPeerMac, {}, {}}, ArpSpec{req});
  v.push_back({"empty", DropReason::kEthTruncated, {}});
  v.push_back({"13_bytes", DropReason::kEthTruncated, {good.begin(), good.begin() + 13}});
  auto tagged = arp_frame(EthSpec{kOurMac, kPeerMac, {}, 0x0005}, ArpSpec{req});
  v.push_back({"vlan_tag_cut", DropReason::kEthTruncated, {tagged.begin(), tagged.begin() + 16}});
  v.push_back({"other_unicast_mac", DropReason::kEthNotForUs,
               arp_frame(EthSpec{kOtherMac, kPeerMac, {}, {}}, ArpSpec{req})});
  v.push_back(
      {"multicast_mac", DropReason::kEthNotForUs,
       arp_frame(EthSpec{MacAddr{{0x01, 0, 0x5e, 0, 0, 1}}, kPeerMac, {}, {}}, ArpSpec{req})});
  v.push_back({"vlan_tagged", DropReason::kVlanUnsupported, tagged});
  v.push_back({"ipv6", DropReason::kEthUnknownType,
               arp_frame(EthSpec{kOurMac, kPeerMac, wire::kEtherTypeIpv6, {}}, ArpSpec{req})});
  v.push_back({"garbage_type", DropReason::kEthUnknownType,
               arp_frame(EthSpec{kOurMac, kPeerMac, 0x1234, {}}, ArpSpec{req})});
  v.push_back({"802.3_length", DropReason::kEthUnknownType,
               arp_frame(EthSpec{kOurMac, kPeerMac, 46, {}}, ArpSpec{req})});
  return v;
}

TEST(StackEthernet, BadFramesAreDroppedUnderTheirReason) {
  for (const auto& c : bad_eth_cases()) {
    SCOPED_TRACE(c.name);
    StackHarness h;
    h.rx(c.frame);
    EXPECT_EQ(h.drops(c.reason), 1u);
    EXPECT_EQ(h.total_drops(), 1u);
    EXPECT_EQ(h.io.sent_count(), 0u);
    EXPECT_EQ(h.stack.counters().rx_frames, 1u);
    EXPECT_EQ(h.stack.counters().rx_bytes, c.frame.size());
  }
}

TEST(StackEthernet, FrameForUnknownPortIsDropped) {
  StackHarness h;
  RxMeta m;
  m.port = 7;
  h.stack.receive(arp_request(kOurIp), m, h.now());
  EXPECT_EQ(h.drops(DropReason::kEthNotForUs), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

TEST(StackEthernet, KeepsAnsweringAfterGarbage) {
  StackHarness h;
  for (const auto& c : bad_eth_cases()) h.rx(c.frame);
  for (const auto& c : bad_arp_cases()) h.rx(c.frame);
  h.rx(arp_request(kOurIp));
  EXPECT_EQ(h.io.sent_count(), 1u);
}

// A configured neighbour (InterfaceConfig::static_neighbors): the datagram goes out at
// once to its MAC, no request is ever sent for it, and a reply naming another MAC (as an
// ARP-spoofing host sends) does not move it.
TEST(StackArp, StaticNeighbourIsUsedWithoutRequests) {
  InterfaceConfig c = default_interface();
  c.static_neighbors = {{kPeerIp, kPeerMac}};
  StackHarness h(FakePacketIo::Options{}, StackConfig{}, c);
  UdpSocket* s = h.stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_NE(s, nullptr);
  auto p = pattern(100);
  const MacAddr spoofed{{0x02, 0, 0, 0, 0x66, 0x66}};
  h.rx(arp_frame(EthSpec{kOurMac, spoofed, {}, {}},
                 ArpSpec{ArpRepr{ArpOp::kReply, spoofed, kPeerIp, kOurMac, kOurIp}}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(s->send_to(Endpoint{kPeerIp, 9}, p, h.now()));
    ASSERT_EQ(h.io.sent_count(), 1u);
    EXPECT_EQ(MacAddr::from_bytes(h.io.sent()[0].bytes.data()), kPeerMac);
    h.io.clear_sent();
    h.advance(Duration::seconds(600));
  }
  EXPECT_EQ(h.stack.counters().arp_requests_out, 0u);
}

}  // namespace
}  // namespace ws::test
