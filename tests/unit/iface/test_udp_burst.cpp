// UDP bursts (UdpSocket::send_burst): the frames are byte for byte those that one send_to
// per datagram makes, with and without checksum offload; the one-by-one path takes over
// where the burst path does not apply (ARP not resolved, fragments, IPv6); a pool that runs
// dry mid-burst is counted once and leaks nothing; the `source` client sends exactly its
// count, every datagram carrying its pattern message.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stack/apps/udp_clients.hpp"
#include "stack/codec/framing.hpp"
#include "stack/core/bytes.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

constexpr size_t kEth = 14;
const Endpoint kDst{kPeerIp, 9};

// Payloads of sizes around the Ethernet minimum, odd and even, and the largest unfragmented.
std::vector<std::vector<uint8_t>> payloads(size_t n) {
  std::vector<std::vector<uint8_t>> out;
  const size_t sizes[] = {0, 1, 17, 18, 19, 63, 64, 1000, 1471, 1472};
  for (size_t i = 0; i < n; ++i) {
    out.push_back(pattern(sizes[i % std::size(sizes)], static_cast<uint8_t>(i)));
  }
  return out;
}

std::vector<std::span<const uint8_t>> views(const std::vector<std::vector<uint8_t>>& p) {
  return {p.begin(), p.end()};
}

// The same datagrams sent once as bursts and once one by one, on two fresh stacks.
void expect_same_frames(FakePacketIo::Options o, size_t n) {
  const auto p = payloads(n);
  StackHarness burst(o), single(o);
  burst.learn();
  single.learn();
  UdpSocket* bs = burst.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  UdpSocket* ss = single.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  EXPECT_EQ(bs->send_burst(kDst, views(p), burst.now()), n);
  for (const auto& d : p) EXPECT_TRUE(ss->send_to(kDst, d, single.now()));
  const auto& a = burst.io.sent();
  const auto& b = single.io.sent();
  ASSERT_EQ(a.size(), n);
  ASSERT_EQ(b.size(), n);
  for (size_t i = 0; i < n; ++i) {
    SCOPED_TRACE("datagram " + std::to_string(i));
    ASSERT_EQ(a[i].bytes.size(), b[i].bytes.size());
    const auto diff = std::mismatch(a[i].bytes.begin(), a[i].bytes.end(), b[i].bytes.begin());
    EXPECT_EQ(diff.first - a[i].bytes.begin(), std::ssize(a[i].bytes)) << "first byte that differs";
    EXPECT_EQ(a[i].flags, b[i].flags);
  }
  EXPECT_EQ(burst.stack.counters().udp_out[kFamilyIpv4], n);
  EXPECT_EQ(burst.stack.counters().ipv4_out, single.stack.counters().ipv4_out);
  EXPECT_EQ(burst.stack.counters().tx_frames, single.stack.counters().tx_frames);
  EXPECT_EQ(burst.stack.counters().tx_bytes, single.stack.counters().tx_bytes);
  EXPECT_EQ(burst.total_drops(), 0u);
  EXPECT_TRUE(burst.io.no_leaks());
}

TEST(UdpBurst, FramesAreThoseOfOneSendPerDatagram) {
  FakePacketIo::Options o;
  o.pool_size = 512;
  expect_same_frames(o, 200);  // several chunks of 64
  // The checksums verify on their own too (the one-by-one path is tested elsewhere).
  StackHarness h;
  h.learn();
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  const auto p = payloads(10);
  ASSERT_EQ(s->send_burst(kDst, views(p), h.now()), 10u);
  for (const auto& f : h.io.sent()) {
    EXPECT_TRUE(ipv4_checksum_ok(f.bytes));
    EXPECT_TRUE(udp_checksum_ok(f.bytes));
    EXPECT_EQ(MacAddr::from_bytes(f.bytes.data()), kPeerMac);
    EXPECT_EQ(load_be16(f.bytes.data() + kEth + 6) & wire::Ipv4View::kFlagDf, 0);
  }
}

TEST(UdpBurst, WithChecksumOffloadTheSameSeedsAndFlags) {
  FakePacketIo::Options o;
  o.offloads.ipv4_cksum = true;
  o.offloads.udp_cksum = true;
  expect_same_frames(o, 30);
  o.apply_offloads = true;  // and what the port finishes verifies
  StackHarness h(o);
  h.learn();
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  const auto p = payloads(10);
  ASSERT_EQ(s->send_burst(kDst, views(p), h.now()), 10u);
  for (const auto& f : h.io.sent()) {
    EXPECT_EQ(f.flags, kTxIpv4Cksum | kTxUdpCksum);
    EXPECT_TRUE(ipv4_checksum_ok(f.bytes));
    EXPECT_TRUE(udp_checksum_ok(f.bytes));
  }
}

TEST(UdpBurst, UnresolvedNextHopWaitsForArpOneByOne) {
  StackHarness h;
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  const auto p = payloads(3);
  EXPECT_EQ(s->send_burst(kDst, views(p), h.now()), 3u);  // queued behind ARP
  ASSERT_EQ(h.io.sent_count(), 1u);
  EXPECT_EQ(load_be16(h.io.sent()[0].bytes.data() + 12), wire::kEtherTypeArp);
  h.io.clear_sent();
  h.advance(Duration::millis(1));
  h.rx(arp_frame(EthSpec{kOurMac, kPeerMac},
                 ArpSpec{wire::ArpRepr{wire::ArpOp::kReply, kPeerMac, kPeerIp, kOurMac, kOurIp}}));
  EXPECT_EQ(h.io.sent_count(), 3u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(UdpBurst, LargerThanTheMtuGoesInFragments) {
  StackHarness h;
  h.learn();
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  std::vector<std::vector<uint8_t>> p{pattern(10), pattern(3000), pattern(10)};
  EXPECT_EQ(s->send_burst(kDst, views(p), h.now()), 3u);
  EXPECT_EQ(h.io.sent_count(), 1u + 3u + 1u);
  EXPECT_EQ(h.stack.counters().udp_out[kFamilyIpv4], 3u);
  // Beyond what UDP's length field carries: nothing of it, and what follows waits.
  std::vector<std::vector<uint8_t>> q{pattern(10), pattern(65508), pattern(10)};
  EXPECT_EQ(s->send_burst(kDst, views(q), h.now()), 1u);
  EXPECT_EQ(h.drops(DropReason::kFrameTooLong), 1u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(UdpBurst, PoolRunningDryMidBurstIsCountedOnce) {
  StackHarness h;
  h.learn();
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  const auto p = payloads(64);
  h.io.set_available(10);
  EXPECT_EQ(s->send_burst(kDst, views(p), h.now()), 10u);
  EXPECT_EQ(h.io.sent_count(), 10u);
  EXPECT_EQ(h.drops(DropReason::kNoMbuf), 1u);
  EXPECT_EQ(h.stack.counters().udp_out[kFamilyIpv4], 10u);
  // An empty pool: the one-by-one path, which stops at its first failure.
  h.io.clear_sent();
  h.io.set_available(0);
  EXPECT_EQ(s->send_burst(kDst, views(p), h.now()), 0u);
  EXPECT_EQ(h.drops(DropReason::kNoMbuf), 2u);
  h.io.restore_pool();
  EXPECT_EQ(s->send_burst(kDst, views(p), h.now()), 64u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(UdpBurst, Ipv6DestinationGoesOneByOne) {
  StackHarness h;
  UdpSocket* s = h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  // No IPv6 on the interface: each is refused as unroutable, and the first stops it.
  const auto p = payloads(4);
  EXPECT_EQ(s->send_burst(Endpoint{IpAddr(*Ipv6Addr::parse("2001:db8::2")), 9}, views(p), h.now()),
            0u);
  EXPECT_EQ(h.io.sent_count(), 0u);
  EXPECT_EQ(h.total_drops(), 1u);
}

TEST(UdpSourceBurst, SendsExactlyItsCountInPatternOrder) {
  FakePacketIo::Options o;
  o.pool_size = 512;
  StackHarness h(o);
  h.learn();
  ClientParams cp;
  cp.target = kDst;
  cp.message_size = 64;
  cp.count = 150;
  cp.duration = Duration::seconds(0);
  UdpSourceService src("load", cp, 40000);
  ASSERT_TRUE(src.start(h.stack, h.now()));
  for (int i = 0; i < 10; ++i) {
    h.advance(Duration::micros(10));
    src.poll(h.now());
  }
  const auto sent = h.io.take_sent();
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_EQ(src.counters().send_failures, 0u);
  ASSERT_EQ(sent.size(), 150u);
  for (size_t i = 0; i < sent.size(); ++i) {
    auto ip = wire::Ipv4View::parse(std::span(sent[i].bytes).subspan(kEth));
    ASSERT_TRUE(ip);
    auto udp = wire::UdpView::parse(ip->payload());
    ASSERT_TRUE(udp);
    ASSERT_EQ(udp->payload().size(), 64u);
    EXPECT_EQ(check_pattern(i, 0, udp->payload()), 64u) << "datagram " << i;
    EXPECT_TRUE(udp_checksum_ok(sent[i].bytes));
  }
  EXPECT_EQ(src.counters().tx_messages, 150u);
  EXPECT_EQ(src.counters().send_failures, 0u);
  src.stop(h.now());
}

}  // namespace
}  // namespace ws::test
