// IPv4 fragment reassembly (RFC 791 3.2, RFC 1122 3.3.2, RFC 5722-style overlap
// rules) and fragmentation on output: fragments in order, reversed and shuffled,
// duplicates, overlaps, table and datagram limits, the timeout on a virtual
// clock, and 30,000-byte UDP datagrams fragmented and reassembled by the stack.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "stack/apps/udp_services.hpp"
#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/iface/reassembly.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

using wire::Ipv4View;
using wire::UdpView;

constexpr size_t kEth = 14;
constexpr uint16_t kEchoPort = 7;
constexpr uint16_t kPeerPort = 40000;

// A UDP datagram peer -> us cut into fragments of `per_frag` L4 bytes (a multiple
// of 8), each a whole Ethernet frame.
std::vector<std::vector<uint8_t>> udp_fragments(std::span<const uint8_t> payload, size_t per_frag,
                                                uint16_t ident = 0x7777,
                                                uint16_t dport = kEchoPort) {
  Ipv4Spec ip = StackHarness::ip_in();
  ip.dont_fragment = false;
  UdpSpec u;
  u.src_port = kPeerPort;
  u.dst_port = dport;
  auto whole = udp_frame(StackHarness::eth_in(), ip, u, payload);
  std::span<const uint8_t> l4(whole.data() + kEth + 20, whole.size() - kEth - 20);
  std::vector<std::vector<uint8_t>> out;
  for (size_t off = 0; off < l4.size(); off += per_frag) {
    size_t n = std::min(per_frag, l4.size() - off);
    Ipv4Spec f = ip;
    f.protocol = wire::kIpProtoUdp;
    f.ident = ident;
    f.frag_offset = static_cast<uint32_t>(off);
    f.more_fragments = off + n < l4.size();
    out.push_back(ipv4_frame(StackHarness::eth_in(), f, l4.subspan(off, n)));
  }
  return out;
}

// One raw fragment peer -> us with protocol UDP and the given data.
std::vector<uint8_t> raw_fragment(uint32_t off, bool more, std::span<const uint8_t> data,
                                  uint16_t ident = 0x4444, Ipv4Addr src = kPeerIp) {
  Ipv4Spec f = StackHarness::ip_in(src);
  f.protocol = wire::kIpProtoUdp;
  f.dont_fragment = false;
  f.ident = ident;
  f.frag_offset = off;
  f.more_fragments = more;
  return ipv4_frame(StackHarness::eth_in(), f, data);
}

std::span<const uint8_t> ip_of(const std::vector<uint8_t>& frame) {
  auto ip = Ipv4View::parse(std::span(frame).subspan(kEth));
  return std::span(frame).subspan(kEth, ip->total_len());
}

// Checks that `frames` are correct fragments of one datagram (RFC 791 3.2) that
// fit `mtu`, and reassembles them with a separate Reassembler.
std::vector<uint8_t> check_and_reassemble(const std::vector<SentFrame>& frames, uint32_t mtu) {
  std::vector<uint8_t> result;
  if (frames.empty()) {
    ADD_FAILURE() << "no frames";
    return result;
  }
  Reassembler r;
  DropCounters drops;
  Instant t = Instant::from_ns(1);
  auto first = Ipv4View::parse(std::span(frames[0].bytes).subspan(kEth));
  for (size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE("fragment " + std::to_string(i));
    const auto& b = frames[i].bytes;
    EXPECT_TRUE(ipv4_checksum_ok(b));
    EXPECT_EQ(MacAddr::from_bytes(b.data()), kPeerMac);
    auto ip = Ipv4View::parse(std::span(b).subspan(kEth));
    EXPECT_LE(ip->total_len(), mtu);
    EXPECT_EQ(ip->ident(), first->ident());
    EXPECT_FALSE(ip->dont_fragment());
    EXPECT_EQ(ip->frag_offset() % 8, 0u);
    bool last = i + 1 == frames.size();
    EXPECT_EQ(ip->more_fragments(), !last);
    if (!last) {
      EXPECT_EQ(ip->payload().size() % 8, 0u);
    }
    if (frames.size() == 1) return std::vector<uint8_t>(ip_of(b).begin(), ip_of(b).end());
    auto whole = r.input(ip_of(b), t, drops);
    EXPECT_EQ(whole.has_value(), last);
    if (whole) result.assign(whole->begin(), whole->end());
  }
  EXPECT_EQ(drops.total(), 0u);
  return result;
}

// --- the Reassembler alone ---

class ReassemblerTest : public ::testing::Test {
 protected:
  std::optional<std::span<const uint8_t>> in(const std::vector<uint8_t>& frame) {
    return r.input(ip_of(frame), now, drops);
  }
  Reassembler r;
  DropCounters drops;
  Instant now = Instant::from_ns(1'000'000'000);
};

TEST_F(ReassemblerTest, InOrderReverseAndShuffled) {
  auto payload = pattern(5000, 9);
  auto frags = udp_fragments(payload, 1480);
  ASSERT_EQ(frags.size(), 4u);
  std::mt19937 rng(42);
  for (int order = 0; order < 12; ++order) {
    SCOPED_TRACE("order " + std::to_string(order));
    auto v = frags;
    if (order == 1) std::reverse(v.begin(), v.end());
    if (order >= 2) std::shuffle(v.begin(), v.end(), rng);
    for (size_t i = 0; i < v.size(); ++i) {
      auto whole = in(v[i]);
      ASSERT_EQ(whole.has_value(), i + 1 == v.size());
      if (!whole) continue;
      auto ip = Ipv4View::parse(*whole);
      ASSERT_TRUE(ip);
      EXPECT_EQ(ip->total_len(), 20u + 8u + 5000u);
      EXPECT_FALSE(ip->is_fragment());
      EXPECT_EQ(internet_checksum(ip->header()), 0);
      auto udp = UdpView::parse(ip->payload());
      ASSERT_TRUE(udp);
      EXPECT_TRUE(
          std::equal(payload.begin(), payload.end(), udp->payload().begin(), udp->payload().end()));
    }
    EXPECT_EQ(r.entries(), 0u);
  }
  EXPECT_EQ(drops.total(), 0u);
  EXPECT_EQ(r.stats().reassembled, 12u);
}

TEST_F(ReassemblerTest, ExactDuplicatesAreIgnored) {
  auto frags = udp_fragments(pattern(3000), 1000);
  ASSERT_EQ(frags.size(), 4u);
  EXPECT_FALSE(in(frags[0]));
  EXPECT_FALSE(in(frags[0]));
  EXPECT_FALSE(in(frags[2]));
  EXPECT_FALSE(in(frags[1]));
  EXPECT_FALSE(in(frags[2]));
  EXPECT_TRUE(in(frags[3]));
  EXPECT_EQ(r.stats().duplicates, 2u);
  EXPECT_EQ(drops.total(), 0u);
  // A late duplicate after completion starts a new entry, which times out.
  EXPECT_FALSE(in(frags[1]));
  EXPECT_EQ(r.entries(), 1u);
}

TEST_F(ReassemblerTest, PartialOverlapDropsTheWholeDatagram) {
  auto d = pattern(64);
  EXPECT_FALSE(in(raw_fragment(0, true, std::span(d).first(24))));
  EXPECT_FALSE(in(raw_fragment(40, true, std::span(d).first(16))));
  // Overlaps [16, 24) with identical bytes: still an overlap (RFC 5722 spirit).
  EXPECT_FALSE(in(raw_fragment(16, true, std::span(d).first(16))));
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyOverlap), 3u);  // two held + this one
  // Later fragments of the discarded datagram are discarded too, even the rest.
  EXPECT_FALSE(in(raw_fragment(24, true, std::span(d).first(16))));
  EXPECT_FALSE(in(raw_fragment(56, false, std::span(d).first(8))));
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyOverlap), 5u);
  EXPECT_EQ(r.stats().reassembled, 0u);
}

TEST_F(ReassemblerTest, SameRangeDifferentDataIsAnOverlap) {
  auto a = pattern(16, 1);
  auto b = pattern(16, 2);
  EXPECT_FALSE(in(raw_fragment(8, true, a)));
  EXPECT_FALSE(in(raw_fragment(8, true, b)));
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyOverlap), 2u);
}

TEST_F(ReassemblerTest, ContainedAndContainingFragmentsOverlap) {
  auto d = pattern(48);
  EXPECT_FALSE(in(raw_fragment(8, true, std::span(d).first(32), 1)));
  EXPECT_FALSE(in(raw_fragment(16, true, std::span(d).first(8), 1)));  // inside
  EXPECT_FALSE(in(raw_fragment(8, true, std::span(d).first(8), 2)));
  EXPECT_FALSE(in(raw_fragment(0, true, std::span(d).first(48), 2)));  // around
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyOverlap), 4u);
}

TEST_F(ReassemblerTest, InconsistentLastFragmentIsAnOverlap) {
  auto d = pattern(32);
  EXPECT_FALSE(in(raw_fragment(16, false, std::span(d).first(16), 1)));  // ends at 32
  EXPECT_FALSE(in(raw_fragment(24, true, std::span(d).first(16), 1)));   // beyond the end
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyOverlap), 2u);
  EXPECT_FALSE(in(raw_fragment(32, true, std::span(d).first(16), 2)));
  EXPECT_FALSE(in(raw_fragment(8, false, std::span(d).first(8), 2)));  // ends before data held
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyOverlap), 4u);
}

TEST_F(ReassemblerTest, MalformedFragmentsAreRefused) {
  auto d = pattern(20);
  EXPECT_FALSE(in(raw_fragment(0, true, std::span(d).first(12))));  // MF, not a multiple of 8
  EXPECT_FALSE(in(raw_fragment(8, true, {})));                      // empty
  EXPECT_EQ(drops.get(DropReason::kIpv4Fragment), 2u);
  EXPECT_EQ(r.entries(), 0u);
}

TEST_F(ReassemblerTest, TooManyFragments) {
  auto d = pattern(8);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_FALSE(in(raw_fragment(i * 8, true, d)));
  EXPECT_EQ(drops.total(), 0u);
  EXPECT_FALSE(in(raw_fragment(64 * 8, true, d)));
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyTooManyFragments), 65u);
  EXPECT_FALSE(in(raw_fragment(65 * 8, false, d)));
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyTooManyFragments), 66u);
}

TEST_F(ReassemblerTest, TooLarge) {
  auto d = pattern(16);
  // 20 + 65528 + 16 > 65535: no IPv4 datagram can be that long.
  EXPECT_FALSE(in(raw_fragment(65528, false, d)));
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyTooLarge), 1u);
  EXPECT_EQ(r.entries(), 0u);
  // A datagram in progress that receives such a fragment is discarded whole.
  EXPECT_FALSE(in(raw_fragment(0, true, d, 9)));
  EXPECT_FALSE(in(raw_fragment(65520, false, d, 9)));
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyTooLarge), 3u);
  // Exactly 65535 is fine.
  auto last = pattern(65535 - 20 - 65512);
  EXPECT_FALSE(in(raw_fragment(65512, false, last, 10)));
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyTooLarge), 3u);
}

TEST(Reassembler, ConfiguredMaximumDatagram) {
  ReassemblyConfig c;
  c.max_datagram = 9000;
  Reassembler r(c);
  DropCounters drops;
  auto frags = udp_fragments(pattern(9000 - 28), 1480);
  for (const auto& f : frags) {
    auto w = r.input(ip_of(f), Instant::from_ns(1), drops);
    if (w) {
      EXPECT_EQ(w->size(), 9000u);
    }
  }
  EXPECT_EQ(r.stats().reassembled, 1u);
  auto big = udp_fragments(pattern(9000 - 27), 1480, 2);
  for (const auto& f : big) EXPECT_FALSE(r.input(ip_of(f), Instant::from_ns(1), drops));
  EXPECT_GE(drops.get(DropReason::kIpv4ReassemblyTooLarge), 1u);
}

TEST_F(ReassemblerTest, FullTableEvictsTheOldestDatagram) {
  auto d = pattern(8);
  for (uint16_t id = 0; id < 64; ++id) {
    EXPECT_FALSE(in(raw_fragment(0, true, d, id)));
    now += Duration::millis(1);
  }
  EXPECT_EQ(r.entries(), 64u);
  EXPECT_EQ(r.stats().held_bytes, 64u * 8u);
  const size_t buffers = r.buffer_bytes();
  // A new datagram takes the slot of the one that started first (id 0), whose
  // fragment is counted as evicted; no buffer is allocated for it.
  EXPECT_FALSE(in(raw_fragment(0, true, d, 64)));
  EXPECT_EQ(r.entries(), 64u);
  EXPECT_EQ(r.stats().evicted, 1u);
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyEvicted), 1u);
  EXPECT_EQ(r.buffer_bytes(), buffers);
  EXPECT_EQ(r.stats().held_bytes, 64u * 8u);
  // Id 0 starts over (its first fragment is gone): its last fragment alone does not
  // complete it, and it evicts id 1.
  EXPECT_FALSE(in(raw_fragment(8, false, d, 0)));
  EXPECT_EQ(r.stats().evicted, 2u);
  // Fragments of datagrams still in the table complete them.
  auto w = in(raw_fragment(8, false, d, 3));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->size(), 36u);
  EXPECT_EQ(r.entries(), 63u);
  EXPECT_EQ(r.stats().held_bytes, 63u * 8u);
  // A flood of datagrams that never complete: the table and its memory stay bounded,
  // and a datagram whose fragments arrive close together still completes.
  for (uint16_t id = 1000; id < 11000; ++id) {
    EXPECT_FALSE(in(raw_fragment(0, true, d, id)));
    if (id % 1000 == 0) {
      EXPECT_FALSE(in(raw_fragment(0, true, d, 7, kOtherIp)));
      EXPECT_TRUE(in(raw_fragment(8, false, d, 7, kOtherIp)));
    }
  }
  EXPECT_EQ(r.entries(), 64u);
  EXPECT_EQ(r.buffer_bytes(), buffers);
  EXPECT_LE(r.stats().held_bytes, 64u * 8u);
  EXPECT_EQ(r.stats().reassembled, 11u);
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyTableFull), 0u);
  // Timeouts free the table.
  now += Duration::seconds(31);
  r.poll(now, drops);
  EXPECT_EQ(r.entries(), 0u);
  EXPECT_EQ(r.stats().held_bytes, 0u);
  EXPECT_EQ(r.stats().timed_out, 64u);
}

TEST_F(ReassemblerTest, TimeoutFreesTheEntryAndCounts) {
  auto d = pattern(16);
  EXPECT_EQ(r.next_deadline(), Instant::never());
  EXPECT_FALSE(in(raw_fragment(0, true, d, 1)));
  EXPECT_FALSE(in(raw_fragment(32, true, d, 1)));
  EXPECT_EQ(r.next_deadline(), now + Duration::seconds(30));
  now += Duration::seconds(10);
  EXPECT_FALSE(in(raw_fragment(16, true, d, 2)));  // starts later, expires later
  now += Duration::seconds(19);
  int expired = 0;
  auto on_expired = [&](std::span<const uint8_t>) { ++expired; };
  EXPECT_EQ(r.poll(now, drops, on_expired),
            Instant::from_ns(1'000'000'000) + Duration::seconds(30));
  EXPECT_EQ(r.entries(), 2u);
  now += Duration::seconds(1);
  // A fragment of datagram 1 at the deadline does not extend it (RFC 1122 3.3.2).
  EXPECT_EQ(r.poll(now, drops, on_expired), now + Duration::seconds(10));
  EXPECT_EQ(r.entries(), 1u);
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyTimeout), 2u);
  EXPECT_EQ(expired, 1);  // datagram 1 had its first fragment
  now += Duration::seconds(10);
  EXPECT_EQ(r.poll(now, drops, on_expired), Instant::never());
  EXPECT_EQ(r.entries(), 0u);
  EXPECT_EQ(drops.get(DropReason::kIpv4ReassemblyTimeout), 3u);
  EXPECT_EQ(expired, 1);  // datagram 2 never had one
  EXPECT_EQ(r.stats().timed_out, 2u);
}

TEST(Reassembler, ConfiguredTimeout) {
  ReassemblyConfig c;
  c.timeout = Duration::seconds(15);
  Reassembler r(c);
  DropCounters drops;
  auto d = pattern(8);
  Instant t = Instant::from_ns(5);
  EXPECT_FALSE(r.input(ip_of(raw_fragment(0, true, d)), t, drops));
  EXPECT_EQ(r.next_deadline(), t + Duration::seconds(15));
}

// --- through the stack ---

TEST(StackReassembly, FragmentedEchoIsAnsweredWithCorrectFragments) {
  FakePacketIo::Options o;
  o.offloads = TxOffloads{true, true, true, false};  // offloads must not be used for fragments
  StackHarness h(o);
  UdpEchoService echo{"echo", kEchoPort};
  ASSERT_TRUE(echo.start(h.stack, h.now()));
  h.learn();
  auto payload = pattern(30000, 77);
  for (int order = 0; order < 3; ++order) {
    SCOPED_TRACE("order " + std::to_string(order));
    auto frags = udp_fragments(payload, 1480, static_cast<uint16_t>(100 + order));
    ASSERT_EQ(frags.size(), 21u);
    if (order == 1) std::reverse(frags.begin(), frags.end());
    if (order == 2) std::shuffle(frags.begin(), frags.end(), std::mt19937(7));
    for (const auto& f : frags) h.rx(f);
    auto sent = h.io.take_sent();
    ASSERT_EQ(sent.size(), 21u);  // 30,008 bytes of UDP in 1480-byte pieces
    for (const auto& s : sent) EXPECT_EQ(s.flags, 0u);
    auto whole = check_and_reassemble(sent, 1500);
    auto ip = Ipv4View::parse(whole);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->src(), kOurIp);
    EXPECT_EQ(ip->dst(), kPeerIp);
    auto udp = UdpView::parse(ip->payload());
    ASSERT_TRUE(udp);
    EXPECT_EQ(udp->src_port(), kEchoPort);
    EXPECT_EQ(udp->dst_port(), kPeerPort);
    uint32_t sum = ipv4_pseudo_sum(kOurIp, kPeerIp, wire::kIpProtoUdp, udp->length());
    EXPECT_EQ(csum_fold(csum_partial(udp->datagram(), sum)), 0);
    EXPECT_TRUE(
        std::equal(payload.begin(), payload.end(), udp->payload().begin(), udp->payload().end()));
  }
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(h.stack.reassembly().stats().reassembled, 3u);
  echo.stop(h.now());
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(StackReassembly, StackToStackRoundTrip) {
  // A sends 30,000 bytes at MTU 1500 and at MTU 9000; B reassembles them.
  for (uint32_t mtu : {1500u, 9000u}) {
    SCOPED_TRACE("mtu " + std::to_string(mtu));
    FakePacketIo::Options o;
    o.data_room = 10240;
    o.max_frame_len = mtu + 14;
    InterfaceConfig ca = default_interface();
    ca.mtu = mtu;
    InterfaceConfig cb = default_interface();
    cb.mtu = mtu;
    cb.mac = kPeerMac;
    cb.address = Ipv4Cidr{kPeerIp, 24};
    StackHarness a(o, {}, ca);
    StackHarness b(o, {}, cb);
    a.learn();  // B only receives: it needs no neighbour
    std::vector<uint8_t> got;
    Endpoint from;
    UdpSocket* sb = b.stack.udp_bind(9, [&](UdpSocket&, const UdpDatagram& d, Instant) {
      got.assign(d.payload.begin(), d.payload.end());
      from = d.src;
    });
    ASSERT_NE(sb, nullptr);
    UdpSocket* sa = a.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
    auto payload = pattern(30000, 3);
    ASSERT_TRUE(sa->send_to(Endpoint{kPeerIp, 9}, payload, a.now()));
    auto frames = a.io.take_sent();
    EXPECT_EQ(frames.size(), (30008 + (mtu - 20) / 8 * 8 - 1) / ((mtu - 20) / 8 * 8));
    for (auto& f : frames) EXPECT_LE(f.bytes.size(), mtu + 14);
    std::reverse(frames.begin(), frames.end());
    for (auto& f : frames) b.rx(f.bytes);
    EXPECT_EQ(got, payload);
    EXPECT_EQ(from.addr, kOurIp);
    EXPECT_EQ(from.port, 5000);
    EXPECT_EQ(b.total_drops(), 0u);
    EXPECT_EQ(b.stack.reassembly().entries(), 0u);
  }
}

TEST(StackReassembly, LargeFragmentedPingIsAnswered) {
  StackHarness h;
  h.learn();
  // A 4000-byte echo request (ping -s 3992) fragmented by the peer.
  std::vector<uint8_t> icmp(8 + 3992);
  auto data = pattern(3992, 5);
  std::copy(data.begin(), data.end(), icmp.begin() + 8);
  wire::emit_icmp(icmp.data(), wire::kIcmpEchoRequest, 0, 0x12340001, data.size());
  for (size_t off = 0; off < icmp.size(); off += 1480) {
    size_t n = std::min<size_t>(1480, icmp.size() - off);
    Ipv4Spec f = StackHarness::ip_in();
    f.protocol = wire::kIpProtoIcmp;
    f.dont_fragment = false;
    f.ident = 0x9999;
    f.frag_offset = static_cast<uint32_t>(off);
    f.more_fragments = off + n < icmp.size();
    h.rx(ipv4_frame(StackHarness::eth_in(), f, std::span(icmp).subspan(off, n)));
  }
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 3u);
  auto whole = check_and_reassemble(sent, 1500);
  auto ip = Ipv4View::parse(whole);
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->protocol(), wire::kIpProtoIcmp);
  auto msg = ip->payload();
  ASSERT_EQ(msg.size(), icmp.size());
  EXPECT_EQ(msg[0], wire::kIcmpEchoReply);
  EXPECT_EQ(internet_checksum(msg), 0);
  EXPECT_EQ(load_be32(msg.data() + 4), 0x12340001u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), msg.begin() + 8));
  EXPECT_EQ(h.stack.counters().icmp_echo_replies_out, 1u);
}

TEST(StackReassembly, TimeoutOnTheStackClockSendsTimeExceeded) {
  StackHarness h;
  h.learn();
  UdpEchoService echo{"echo", kEchoPort};
  ASSERT_TRUE(echo.start(h.stack, h.now()));
  auto frags = udp_fragments(pattern(3000), 1480);
  h.rx(frags[0]);
  h.rx(frags[2]);
  EXPECT_EQ(h.stack.reassembly().entries(), 1u);
  Instant deadline = h.advance(Duration::seconds(1));
  EXPECT_LE(deadline, h.now() + Duration::seconds(29));
  h.advance(Duration::seconds(28));
  EXPECT_EQ(h.stack.reassembly().entries(), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
  h.advance(Duration::seconds(1));
  EXPECT_EQ(h.stack.reassembly().entries(), 0u);
  EXPECT_EQ(h.drops(DropReason::kIpv4ReassemblyTimeout), 2u);
  // RFC 792: time exceeded, code 1 (fragment reassembly time exceeded), quoting
  // the first fragment.
  ASSERT_EQ(h.io.sent_count(), 1u);
  const auto& out = h.io.sent()[0].bytes;
  EXPECT_TRUE(icmp_checksum_ok(out));
  auto ip = Ipv4View::parse(std::span(out).subspan(kEth));
  auto icmp = wire::IcmpView::parse(ip->payload());
  ASSERT_TRUE(icmp);
  EXPECT_EQ(icmp->type(), wire::kIcmpTimeExceeded);
  EXPECT_EQ(icmp->code(), 1);
  auto quoted = Ipv4View::parse(icmp->body());
  ASSERT_TRUE(quoted);
  EXPECT_EQ(quoted->ident(), 0x7777);
  // The late rest of the datagram starts a new entry and does not complete.
  h.rx(frags[1]);
  EXPECT_EQ(h.stack.reassembly().entries(), 1u);
  EXPECT_EQ(h.stack.reassembly().stats().reassembled, 0u);
  echo.stop(h.now());
}

TEST(StackReassembly, DontFragmentLargerThanMtuIsRefused) {
  StackHarness h;
  h.learn();
  std::vector<uint8_t> l4(2000);
  EXPECT_FALSE(
      h.stack.send_datagram(Ipv4Addr::any(), kPeerIp, wire::kIpProtoUdp, l4, {}, true, h.now()));
  EXPECT_EQ(h.drops(DropReason::kFrameTooLong), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
}

TEST(StackReassembly, NotEnoughBuffersSendsNothing) {
  StackHarness h;
  h.learn();
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  h.io.set_available(20);  // 30,000 bytes need 21 frames
  EXPECT_FALSE(s->send_to(Endpoint{kPeerIp, 9}, pattern(30000), h.now()));
  EXPECT_EQ(h.drops(DropReason::kNoMbuf), 1u);
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_TRUE(h.io.no_leaks());
}

}  // namespace
}  // namespace ws::test
