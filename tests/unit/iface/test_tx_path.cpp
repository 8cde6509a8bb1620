// IPv4 output's path cache (stack/iface/tx_path_cache.hpp): frames sent on a kept path are
// the frames the full path writes, and a path stops being used as soon as a route or ARP
// lookup would answer differently or would send a refresh request.
#include <gtest/gtest.h>

#include "stack/core/bytes.hpp"
#include "stack/wire/arp.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

constexpr size_t kIp = wire::EthernetView::kHeaderLen;

// Sends `n` bytes to `to`:9 from a bound UDP socket; returns the last frame sent.
std::vector<uint8_t> send_udp(StackHarness& h, Ipv4Addr to, size_t n = 100) {
  UdpSocket* s = h.stack.udp_bind(5555, [](UdpSocket&, const UdpDatagram&, Instant) {});
  EXPECT_NE(s, nullptr);
  EXPECT_TRUE(s->send_to(Endpoint{to, 9}, pattern(n), h.now()));
  h.stack.udp_unbind(5555);
  EXPECT_GE(h.io.sent_count(), 1u);
  return h.io.sent().back().bytes;
}

bool is_arp_request_for(const std::vector<uint8_t>& f, Ipv4Addr target) {
  return load_be16(f.data() + 12) == wire::kEtherTypeArp &&
         load_be16(f.data() + kIp + wire::ArpView::kOpOff) ==
             static_cast<uint16_t>(wire::ArpOp::kRequest) &&
         load_be32(f.data() + kIp + wire::ArpView::kTpaOff) == target.v;
}

TEST(TxPath, FramesOnAKeptPathAreTheFullPathsFrames) {
  StackHarness h;
  h.learn();
  const auto first = send_udp(h, kPeerIp);  // the full path, which keeps the path
  const auto second = send_udp(h, kPeerIp);
  const auto third = send_udp(h, kPeerIp, 1200);
  ASSERT_EQ(first.size(), second.size());
  for (const auto* f : {&first, &second, &third}) {
    EXPECT_EQ(MacAddr::from_bytes(f->data()), kPeerMac);
    EXPECT_EQ(MacAddr::from_bytes(f->data() + 6), kOurMac);
    EXPECT_TRUE(ipv4_checksum_ok(*f));
    EXPECT_TRUE(udp_checksum_ok(*f));
  }
  // Every byte the same but the identification and the IPv4 checksum.
  const uint16_t id1 = load_be16(first.data() + kIp + wire::Ipv4View::kIdOff);
  EXPECT_EQ(load_be16(second.data() + kIp + wire::Ipv4View::kIdOff), id1 + 1);
  for (size_t i = 0; i < first.size(); ++i) {
    const size_t o = i - kIp;
    if (i >= kIp && (o == wire::Ipv4View::kIdOff || o == wire::Ipv4View::kIdOff + 1 ||
                     o == wire::Ipv4View::kChecksumOff || o == wire::Ipv4View::kChecksumOff + 1))
      continue;
    EXPECT_EQ(first[i], second[i]) << "byte " << i;
  }
  EXPECT_EQ(load_be16(third.data() + kIp + wire::Ipv4View::kTotalLenOff), 20u + 8u + 1200u);
  EXPECT_EQ(h.stack.counters().ipv4_out, 3u);
  EXPECT_EQ(h.stack.counters().tx_frames, 3u);
  EXPECT_TRUE(h.io.no_leaks());
}

TEST(TxPath, ANewMacForTheNextHopIsUsedAtOnce) {
  StackHarness h;
  h.learn();
  send_udp(h, kPeerIp);
  EXPECT_EQ(MacAddr::from_bytes(send_udp(h, kPeerIp).data()), kPeerMac);
  h.learn(kPeerIp, kOtherMac);  // the peer's NIC changed
  EXPECT_EQ(MacAddr::from_bytes(send_udp(h, kPeerIp).data()), kOtherMac);
}

// RFC 1122 2.3.2.1: an entry in use is refreshed before it expires. Frames on a kept path
// still send the refresh requests lookup_for_send() would, one per retry interval.
TEST(TxPath, AnEntryInUseIsStillRefreshed) {
  StackConfig cfg;
  cfg.arp.reachable_time = Duration::seconds(10);  // refreshes due at 7, 8 and 9 s
  StackHarness h({}, cfg);
  h.learn();
  send_udp(h, kPeerIp);
  h.clock.advance(Duration::millis(6900));
  send_udp(h, kPeerIp);
  EXPECT_EQ(h.io.sent_count(), 2u);  // no request yet
  h.clock.advance(Duration::millis(200));
  send_udp(h, kPeerIp);
  send_udp(h, kPeerIp);
  ASSERT_EQ(h.io.sent_count(), 5u);  // the first frame past 7 s brought one request
  EXPECT_TRUE(is_arp_request_for(h.io.sent()[2].bytes, kPeerIp));
  EXPECT_EQ(MacAddr::from_bytes(h.io.sent()[4].bytes.data()), kPeerMac);
  h.learn();  // the reply renews the entry: 10 s more without requests
  h.clock.advance(Duration::seconds(6));
  send_udp(h, kPeerIp);
  EXPECT_EQ(h.io.sent_count(), 1u);
  EXPECT_EQ(h.stack.counters().arp_requests_out, 1u);
}

TEST(TxPath, AnExpiredEntryIsResolvedAgain) {
  StackConfig cfg;
  cfg.arp.reachable_time = Duration::seconds(10);
  cfg.arp.max_retries = 0;  // no refreshes: the entry simply expires
  StackHarness h({}, cfg);
  h.learn();
  send_udp(h, kPeerIp);
  send_udp(h, kPeerIp);
  h.clock.advance(Duration::seconds(10));  // expired, before any poll()
  h.io.clear_sent();
  EXPECT_TRUE(is_arp_request_for(send_udp(h, kPeerIp), kPeerIp));
  EXPECT_EQ(h.io.outstanding(), 1u);  // the datagram waits for the answer
}

TEST(TxPath, DestinationsTakenInTurnEachGetTheirOwnMac) {
  StackHarness h;
  h.learn(kPeerIp, kPeerMac);
  h.learn(kOtherIp, kOtherMac);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(MacAddr::from_bytes(send_udp(h, kPeerIp).data()), kPeerMac);
    const auto f = send_udp(h, kOtherIp);
    EXPECT_EQ(MacAddr::from_bytes(f.data()), kOtherMac);
    EXPECT_EQ(load_be32(f.data() + kIp + wire::Ipv4View::kDstOff), kOtherIp.v);
    EXPECT_TRUE(ipv4_checksum_ok(f));
    EXPECT_TRUE(udp_checksum_ok(f));
  }
}

}  // namespace
}  // namespace ws::test
