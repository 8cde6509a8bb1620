// IPv4 input validation (one named drop per failed check, nothing sent unless an
// ICMP error is due), ICMP echo, and receive checksum offload flags.
#include <gtest/gtest.h>

#include <functional>
#include <string>

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

constexpr size_t kEth = 14;

std::vector<uint8_t> echo_request(size_t payload_len, Ipv4Spec ip = StackHarness::ip_in(),
                                  IcmpSpec m = {}) {
  return icmp_frame(StackHarness::eth_in(), ip, m, pattern(payload_len, 3));
}

// Checks an echo reply frame against the request that caused it.
void expect_echo_reply(const std::vector<uint8_t>& f, uint16_t id, uint16_t seq,
                       const std::vector<uint8_t>& payload) {
  size_t ip_len = Ipv4View::kMinHeaderLen + IcmpView::kHeaderLen + payload.size();
  ASSERT_EQ(f.size(), std::max<size_t>(60, kEth + ip_len));
  EXPECT_EQ(MacAddr::from_bytes(f.data()), kPeerMac);
  EXPECT_EQ(MacAddr::from_bytes(f.data() + 6), kOurMac);
  EXPECT_EQ(load_be16(f.data() + 12), wire::kEtherTypeIpv4);
  auto ip = Ipv4View::parse(std::span(f).subspan(kEth));
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->version(), 4);
  EXPECT_EQ(ip->header_len(), 20u);
  EXPECT_EQ(ip->total_len(), ip_len);
  EXPECT_EQ(ip->protocol(), wire::kIpProtoIcmp);
  EXPECT_EQ(ip->ttl(), 64);
  EXPECT_FALSE(ip->is_fragment());
  EXPECT_EQ(ip->src(), kOurIp);
  EXPECT_EQ(ip->dst(), kPeerIp);
  EXPECT_TRUE(ipv4_checksum_ok(f));
  auto icmp = IcmpView::parse(ip->payload());
  ASSERT_TRUE(icmp);
  EXPECT_EQ(icmp->type(), wire::kIcmpEchoReply);
  EXPECT_EQ(icmp->code(), 0);
  EXPECT_EQ(icmp->echo_id(), id);
  EXPECT_EQ(icmp->echo_seq(), seq);
  EXPECT_TRUE(icmp_checksum_ok(f));
  ASSERT_EQ(icmp->body().size(), payload.size());
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), icmp->body().begin()));
  for (size_t i = kEth + ip_len; i < f.size(); ++i) EXPECT_EQ(f[i], 0) << "padding byte " << i;
}

TEST(Icmp, EchoReplyForEveryPayloadSize) {
  StackHarness h;
  h.learn();
  for (size_t n = 0; n <= 1472; ++n) {
    SCOPED_TRACE("payload " + std::to_string(n));
    IcmpSpec m;
    m.id = static_cast<uint16_t>(0x1000 + n);
    m.seq = static_cast<uint16_t>(n * 3);
    h.rx(echo_request(n, StackHarness::ip_in(), m));
    auto sent = h.io.take_sent();
    ASSERT_EQ(sent.size(), 1u);
    expect_echo_reply(sent[0].bytes, m.id, m.seq, pattern(n, 3));
  }
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(h.stack.counters().icmp_echo_replies_out, 1473u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(Icmp, EchoRequestTooBigForMtuIsAnsweredInFragments) {
  StackHarness h;  // an IPv4 datagram of 1501 bytes comes back in two fragments (RFC 791 3.2)
  h.learn();
  h.rx(echo_request(1473));
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 2u);
  auto a = Ipv4View::parse(std::span(sent[0].bytes).subspan(kEth));
  auto b = Ipv4View::parse(std::span(sent[1].bytes).subspan(kEth));
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->more_fragments());
  EXPECT_EQ(a->total_len(), 1500u);
  EXPECT_EQ(a->frag_offset(), 0u);
  EXPECT_FALSE(b->more_fragments());
  EXPECT_EQ(b->frag_offset(), 1480u);
  EXPECT_EQ(b->total_len(), 20u + 1481u - 1480u);
  EXPECT_EQ(a->ident(), b->ident());
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(h.stack.counters().icmp_echo_replies_out, 1u);
}

TEST(Icmp, EchoReplyWaitsForArp) {
  StackHarness h;
  h.rx(echo_request(56));
  ASSERT_EQ(h.io.sent_count(), 1u);  // the ARP request for the peer
  EXPECT_EQ(load_be16(h.io.sent()[0].bytes.data() + 12), wire::kEtherTypeArp);
  h.io.clear_sent();
  wire::ArpRepr r{wire::ArpOp::kReply, kPeerMac, kPeerIp, kOurMac, kOurIp};
  h.rx(arp_frame(EthSpec{kOurMac, kPeerMac}, ArpSpec{r}));
  ASSERT_EQ(h.io.sent_count(), 1u);
  expect_echo_reply(h.io.sent()[0].bytes, IcmpSpec{}.id, IcmpSpec{}.seq, pattern(56, 3));
}

TEST(Icmp, EchoWithEthernetPaddingIgnoresThePadding) {
  StackHarness h;
  h.learn();
  Ipv4Spec ip = StackHarness::ip_in();
  ip.pad = 18;  // 14 + 20 + 8 + 0 = 42 bytes: padded to 60 on the wire
  h.rx(echo_request(0, ip));
  ASSERT_EQ(h.io.sent_count(), 1u);
  expect_echo_reply(h.io.sent()[0].bytes, IcmpSpec{}.id, IcmpSpec{}.seq, {});
}

TEST(Icmp, EchoWithIpOptionsIsAnswered) {
  StackHarness h;
  h.learn();
  Ipv4Spec ip = StackHarness::ip_in();
  ip.options = {1, 1, 1, 0};  // NOPs and end of list: IHL 6
  h.rx(echo_request(10, ip));
  ASSERT_EQ(h.io.sent_count(), 1u);
  expect_echo_reply(h.io.sent()[0].bytes, IcmpSpec{}.id, IcmpSpec{}.seq, pattern(10, 3));
}

TEST(Icmp, BadIcmpMessagesAreDropped) {
  struct Case {
    const char* name;
    DropReason reason;
    std::vector<uint8_t> frame;
  };
  std::vector<Case> cases;
  IcmpSpec bad;
  bad.corrupt_checksum = true;
  cases.push_back(
      {"bad_checksum", DropReason::kIcmpBadChecksum, echo_request(32, StackHarness::ip_in(), bad)});
  Ipv4Spec ip = StackHarness::ip_in();
  ip.protocol = wire::kIpProtoIcmp;
  std::vector<uint8_t> seven{8, 0, 0, 0, 0, 0, 0};
  cases.push_back(
      {"truncated", DropReason::kIcmpTruncated, ipv4_frame(StackHarness::eth_in(), ip, seven)});
  IcmpSpec ts;
  ts.type = 13;  // timestamp request
  cases.push_back(
      {"timestamp", DropReason::kIcmpUnsupportedType, echo_request(12, StackHarness::ip_in(), ts)});
  cases.push_back(
      {"echo_to_broadcast", DropReason::kIcmpUnsupportedType,
       icmp_frame(StackHarness::eth_in(kPeerMac, MacAddr::broadcast()),
                  StackHarness::ip_in(kPeerIp, kSubnetBroadcast), IcmpSpec{}, pattern(8))});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    StackHarness h;
    h.learn();
    h.rx(c.frame);
    EXPECT_EQ(h.drops(c.reason), 1u);
    EXPECT_EQ(h.total_drops(), 1u);
    EXPECT_EQ(h.io.sent_count(), 0u);
  }
}

TEST(Icmp, EchoReplyAndErrorsReceivedAreAcceptedQuietly) {
  StackHarness h;
  h.learn();
  IcmpSpec reply;
  reply.type = wire::kIcmpEchoReply;
  h.rx(echo_request(8, StackHarness::ip_in(), reply));
  IcmpSpec unreach;
  unreach.type = wire::kIcmpDestUnreachable;
  unreach.code = wire::kIcmpCodePortUnreachable;
  unreach.rest = 0;
  h.rx(echo_request(28, StackHarness::ip_in(), unreach));
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_EQ(h.stack.counters().icmp_unreachable_in, 1u);
}

// --- IPv4 drop reasons ---

struct DropCase {
  std::string name;
  DropReason reason;
  std::function<std::vector<uint8_t>()> frame;
  bool icmp_error = false;  // protocol unreachable expected
};

std::vector<uint8_t> ping_with(const std::function<void(Ipv4Spec&)>& tweak, size_t len = 32) {
  Ipv4Spec ip = StackHarness::ip_in();
  tweak(ip);
  return icmp_frame(StackHarness::eth_in(), ip, IcmpSpec{}, pattern(len));
}

std::vector<DropCase> ipv4_drop_cases() {
  std::vector<DropCase> v;
  v.push_back({"truncated_19", DropReason::kIpv4Truncated, [] {
                 auto f = ping_with([](Ipv4Spec&) {});
                 f.resize(kEth + 19);
                 return f;
               }});
  v.push_back({"truncated_empty", DropReason::kIpv4Truncated, [] {
                 auto f = ping_with([](Ipv4Spec&) {});
                 f.resize(kEth);
                 return f;
               }});
  v.push_back({"version_6", DropReason::kIpv4BadVersion,
               [] { return ping_with([](Ipv4Spec& s) { s.version = 6; }); }});
  v.push_back({"version_0", DropReason::kIpv4BadVersion,
               [] { return ping_with([](Ipv4Spec& s) { s.version = 0; }); }});
  v.push_back(
      {"ihl_4", DropReason::kIpv4BadIhl, [] { return ping_with([](Ipv4Spec& s) { s.ihl = 4; }); }});
  v.push_back(
      {"ihl_0", DropReason::kIpv4BadIhl, [] { return ping_with([](Ipv4Spec& s) { s.ihl = 0; }); }});
  v.push_back({"ihl_beyond_buffer", DropReason::kIpv4BadIhl, [] {
                 // IHL 15 = 60 bytes of header in a 20 + 8 + 4 byte packet.
                 return ping_with([](Ipv4Spec& s) { s.ihl = 15; }, 4);
               }});
  v.push_back({"total_len_below_ihl", DropReason::kIpv4BadTotalLength,
               [] { return ping_with([](Ipv4Spec& s) { s.total_len = 19; }); }});
  v.push_back({"total_len_zero", DropReason::kIpv4BadTotalLength,
               [] { return ping_with([](Ipv4Spec& s) { s.total_len = 0; }); }});
  v.push_back({"total_len_beyond_frame", DropReason::kIpv4BadTotalLength,
               [] { return ping_with([](Ipv4Spec& s) { s.total_len = 20 + 8 + 32 + 1; }); }});
  v.push_back({"frame_cut_short", DropReason::kIpv4BadTotalLength, [] {
                 auto f = ping_with([](Ipv4Spec&) {});
                 f.pop_back();
                 return f;
               }});
  // A datagram the kernel reassembled under an af_packet port, cut by the socket's
  // ring: longer than the MTU (1500), shorter than its total length.
  v.push_back({"cut_by_receiver_beyond_mtu", DropReason::kRxTruncated, [] {
                 auto f = ping_with([](Ipv4Spec&) {}, 2000);
                 f.resize(kEth + 1968);
                 return f;
               }});
  v.push_back({"cut_short_at_mtu", DropReason::kIpv4BadTotalLength, [] {
                 auto f = ping_with([](Ipv4Spec&) {}, 2000);
                 f.resize(kEth + 1500);
                 return f;
               }});
  v.push_back({"header_checksum", DropReason::kIpv4BadChecksum,
               [] { return ping_with([](Ipv4Spec& s) { s.corrupt_checksum = true; }); }});
  v.push_back({"header_checksum_zero", DropReason::kIpv4BadChecksum,
               [] { return ping_with([](Ipv4Spec& s) { s.checksum = 0; }); }});
  v.push_back({"src_broadcast", DropReason::kIpv4BadSource,
               [] { return ping_with([](Ipv4Spec& s) { s.src = Ipv4Addr::broadcast(); }); }});
  v.push_back({"src_multicast", DropReason::kIpv4BadSource, [] {
                 return ping_with([](Ipv4Spec& s) { s.src = Ipv4Addr::from_octets(224, 0, 0, 1); });
               }});
  v.push_back({"src_loopback", DropReason::kIpv4BadSource, [] {
                 return ping_with([](Ipv4Spec& s) { s.src = Ipv4Addr::from_octets(127, 0, 0, 1); });
               }});
  v.push_back({"src_directed_broadcast", DropReason::kIpv4BadSource,
               [] { return ping_with([](Ipv4Spec& s) { s.src = kSubnetBroadcast; }); }});
  v.push_back({"dst_other_host", DropReason::kIpv4NotForUs,
               [] { return ping_with([](Ipv4Spec& s) { s.dst = kOtherIp; }); }});
  v.push_back({"dst_other_subnet", DropReason::kIpv4NotForUs, [] {
                 return ping_with(
                     [](Ipv4Spec& s) { s.dst = Ipv4Addr::from_octets(192, 168, 1, 1); });
               }});
  v.push_back({"dst_multicast", DropReason::kIpv4NotForUs, [] {
                 return ping_with(
                     [](Ipv4Spec& s) { s.dst = Ipv4Addr::from_octets(224, 0, 0, 251); });
               }});
  v.push_back({"ttl_0", DropReason::kIpv4TtlExpired,
               [] { return ping_with([](Ipv4Spec& s) { s.ttl = 0; }); }});
  // Fragments go to reassembly (tests/unit/iface/test_reassembly.cpp); those it
  // cannot take are counted as ipv4_fragment.
  v.push_back({"fragment_not_multiple_of_8", DropReason::kIpv4Fragment,
               [] { return ping_with([](Ipv4Spec& s) { s.more_fragments = true; }, 36); }});
  v.push_back({"middle_fragment_odd_length", DropReason::kIpv4Fragment, [] {
                 return ping_with(
                     [](Ipv4Spec& s) {
                       s.dont_fragment = false;
                       s.more_fragments = true;
                       s.frag_offset = 8;
                     },
                     33);
               }});
  v.push_back({"last_fragment_beyond_65535", DropReason::kIpv4ReassemblyTooLarge, [] {
                 return ping_with([](Ipv4Spec& s) {
                   s.dont_fragment = false;
                   s.frag_offset = 65528;
                 });
               }});
  v.push_back({"unknown_protocol", DropReason::kIpv4UnknownProtocol,
               [] { return ping_with([](Ipv4Spec& s) { s.protocol_override = 200; }); }, true});
  v.push_back({"tcp_without_tcp_layer", DropReason::kIpv4UnknownProtocol,
               [] { return ping_with([](Ipv4Spec& s) { s.protocol_override = 6; }); }, true});
  return v;
}

TEST(Ipv4Input, EveryDropIsCountedOnceUnderItsReason) {
  for (const auto& c : ipv4_drop_cases()) {
    SCOPED_TRACE(c.name);
    StackHarness h;
    h.learn();
    auto f = c.frame();
    h.rx(f);
    EXPECT_EQ(h.drops(c.reason), 1u) << drop_reason_name(c.reason);
    EXPECT_EQ(h.total_drops(), 1u);
    EXPECT_EQ(h.stack.counters().icmp_echo_replies_out, 0u);
    if (!c.icmp_error) {
      EXPECT_EQ(h.io.sent_count(), 0u);
      continue;
    }
    // RFC 1122 3.2.2.1: protocol unreachable, quoting the datagram.
    ASSERT_EQ(h.io.sent_count(), 1u);
    const auto& out = h.io.sent()[0].bytes;
    EXPECT_TRUE(ipv4_checksum_ok(out));
    EXPECT_TRUE(icmp_checksum_ok(out));
    auto ip = Ipv4View::parse(std::span(out).subspan(kEth));
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->dst(), kPeerIp);
    EXPECT_EQ(ip->src(), kOurIp);
    auto icmp = IcmpView::parse(ip->payload());
    ASSERT_TRUE(icmp);
    EXPECT_EQ(icmp->type(), wire::kIcmpDestUnreachable);
    EXPECT_EQ(icmp->code(), wire::kIcmpCodeProtoUnreachable);
    std::span<const uint8_t> original(f.data() + kEth, f.size() - kEth);
    ASSERT_EQ(icmp->body().size(), original.size());
    EXPECT_TRUE(std::equal(original.begin(), original.end(), icmp->body().begin()));
    EXPECT_EQ(h.stack.counters().icmp_errors_out, 1u);
  }
}

TEST(Ipv4Input, UnknownProtocolToBroadcastGetsNoIcmp) {
  StackHarness h;
  h.learn();
  Ipv4Spec ip = StackHarness::ip_in(kPeerIp, Ipv4Addr::broadcast());
  ip.protocol = 200;
  h.rx(ipv4_frame(StackHarness::eth_in(kPeerMac, MacAddr::broadcast()), ip, pattern(20)));
  EXPECT_EQ(h.drops(DropReason::kIpv4UnknownProtocol), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

TEST(Ipv4Input, EthernetPaddingBeyondTotalLengthIsAccepted) {
  StackHarness h;
  h.learn();
  for (size_t pad : {1u, 7u, 18u, 100u}) {
    Ipv4Spec ip = StackHarness::ip_in();
    ip.pad = pad;
    h.rx(echo_request(5, ip));
  }
  EXPECT_EQ(h.total_drops(), 0u);
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 4u);
  for (const auto& s : sent)
    expect_echo_reply(s.bytes, IcmpSpec{}.id, IcmpSpec{}.seq, pattern(5, 3));
}

TEST(Ipv4Input, KeepsAnsweringAfterEveryMalformedDatagram) {
  StackHarness h;
  h.learn();
  for (const auto& c : ipv4_drop_cases()) h.rx(c.frame());
  h.io.clear_sent();
  h.rx(echo_request(16));
  ASSERT_EQ(h.io.sent_count(), 1u);
  expect_echo_reply(h.io.sent()[0].bytes, IcmpSpec{}.id, IcmpSpec{}.seq, pattern(16, 3));
}

// --- receive checksum offload ---

TEST(RxChecksumOffload, IpGoodSkipsVerification) {
  StackHarness h;
  h.learn();
  RxMeta m;
  m.ip = RxMeta::Cksum::kGood;  // the NIC checked it: the stack trusts the flag
  h.rx(ping_with([](Ipv4Spec& s) { s.corrupt_checksum = true; }), m);
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(h.io.sent_count(), 1u);
}

TEST(RxChecksumOffload, IpBadDropsEvenAValidHeader) {
  StackHarness h;
  h.learn();
  RxMeta m;
  m.ip = RxMeta::Cksum::kBad;
  h.rx(echo_request(8), m);
  EXPECT_EQ(h.drops(DropReason::kIpv4BadChecksum), 1u);
  EXPECT_EQ(h.total_drops(), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

TEST(RxChecksumOffload, IpUnknownVerifiesInSoftware) {
  StackHarness h;
  h.learn();
  h.rx(ping_with([](Ipv4Spec& s) { s.corrupt_checksum = true; }));
  EXPECT_EQ(h.drops(DropReason::kIpv4BadChecksum), 1u);
  h.rx(echo_request(8));
  EXPECT_EQ(h.io.sent_count(), 1u);
}

}  // namespace
}  // namespace ws::test
