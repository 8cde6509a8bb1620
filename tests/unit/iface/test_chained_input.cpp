// Frames received as chains of buffers (RX scatter): the stack parses them in
// place. For every byte offset at which a frame can be cut, the Ethernet, IPv4,
// UDP and ICMP input reach the same result as for the frame in one buffer;
// truncated chains and chains longer than the datagram are handled by the
// length checks, counted.
#include <gtest/gtest.h>

#include <vector>

#include "stack/core/packet_view.hpp"
#include "stack/wire/icmp.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

// Holds the pieces of one frame cut at `cuts` and a view over them.
struct Chain {
  std::vector<PacketView::Segment> segs;
  PacketView view;
  Chain(const std::vector<uint8_t>& f, std::vector<size_t> cuts, size_t claimed = 0) {
    size_t from = 0;
    cuts.push_back(f.size());
    for (size_t c : cuts) {
      segs.emplace_back(f.data() + from, c - from);
      from = c;
    }
    view = PacketView(segs, claimed != 0 ? claimed : f.size());
  }
};

struct Fixture : ::testing::Test {
  StackHarness h;
  std::vector<std::vector<uint8_t>> got;
  void SetUp() override {
    h.learn();
    ASSERT_NE(h.stack.udp_bind(7,
                               [this](UdpSocket&, const UdpDatagram& d, Instant) {
                                 got.emplace_back(d.payload.begin(), d.payload.end());
                               }),
              nullptr);
  }
  void rx(const PacketView& v) {
    RxMeta meta;
    meta.port = h.port;
    h.stack.receive(v, meta, h.now());
  }
};

// A datagram with IPv4 options (a 24-byte header) and an odd-length payload,
// cut into two pieces at every offset and into three around each header.
TEST_F(Fixture, UdpAtEveryCutIsDeliveredWhole) {
  auto payload = pattern(301);
  Ipv4Spec ip = StackHarness::ip_in();
  ip.options = {1, 1, 1, 1};  // four NOPs
  UdpSpec u;
  u.dst_port = 7;
  auto f = udp_frame(StackHarness::eth_in(), ip, u, payload);
  uint64_t straddling = 0;
  for (size_t c = 1; c < f.size(); ++c) {
    got.clear();
    rx(Chain(f, {c}).view);
    ASSERT_EQ(got.size(), 1u) << "cut " << c;
    ASSERT_EQ(got[0], payload) << "cut " << c;
    // Ethernet [0,14), IPv4 [14,38), UDP [38,46): a cut inside one pulls it up.
    straddling += (c < 14) || (c > 14 && c < 38) || (c > 38 && c < 46);
  }
  EXPECT_EQ(h.stack.counters().rx_header_pullups, straddling);
  for (size_t a = 1; a < 50; ++a) {
    for (size_t b = a; b < a + 9; ++b) {
      got.clear();
      rx(Chain(f, {a, b, b + 1}).view);
      ASSERT_EQ(got.size(), 1u) << a << "," << b;
      ASSERT_EQ(got[0], payload) << a << "," << b;
    }
  }
  EXPECT_EQ(h.total_drops(), 0u);
}

// The UDP checksum over a chain catches a flipped bit in any piece.
TEST_F(Fixture, UdpChecksumOverTheChainCatchesCorruptionInAnyPiece) {
  auto payload = pattern(200);
  UdpSpec u;
  u.dst_port = 7;
  auto f = udp_frame(StackHarness::eth_in(), StackHarness::ip_in(), u, payload);
  for (size_t at = 42; at < f.size(); at += 13) {
    auto bad = f;
    bad[at] ^= 0x10;
    rx(Chain(bad, {43, 100, 101}).view);
  }
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(h.drops(DropReason::kUdpBadChecksum), (f.size() - 42 + 12) / 13);
}

// An echo request cut at every offset: the reply carries the same data and a
// valid checksum.
TEST_F(Fixture, IcmpEchoAtEveryCutIsAnswered) {
  auto data = pattern(57);
  auto f = icmp_frame(StackHarness::eth_in(), StackHarness::ip_in(), IcmpSpec{}, data);
  for (size_t c = 1; c < f.size(); ++c) {
    h.io.clear_sent();
    rx(Chain(f, {c}).view);
    auto out = h.io.frames();
    ASSERT_EQ(out.size(), 1u) << "cut " << c;
    ASSERT_TRUE(icmp_checksum_ok(out[0])) << "cut " << c;
    ASSERT_EQ(out[0].size(), f.size()) << "cut " << c;
    EXPECT_EQ(out[0][34], wire::kIcmpEchoReply);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), out[0].begin() + 42)) << "cut " << c;
  }
  EXPECT_EQ(h.total_drops(), 0u);
}

// Truncated chains: the segments hold less than the IPv4 total length (a chain
// cut short anywhere). Each is dropped under the reason of the first check it
// fails, never read past its end.
TEST_F(Fixture, TruncatedChainsAreDroppedByTheLengthChecks) {
  auto f = udp_frame(StackHarness::eth_in(), StackHarness::ip_in(), UdpSpec{}, pattern(100));
  for (size_t keep = 0; keep < f.size(); ++keep) {
    std::vector<uint8_t> part(f.begin(), f.begin() + static_cast<ptrdiff_t>(keep));
    rx(Chain(part, {keep / 2}, f.size()).view);
  }
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(h.drops(DropReason::kEthTruncated), 14u);
  EXPECT_EQ(h.drops(DropReason::kIpv4Truncated), 20u);
  EXPECT_EQ(h.drops(DropReason::kIpv4BadTotalLength), f.size() - 34);
  EXPECT_EQ(h.total_drops(), f.size());
}

// A chain longer than the datagram (padding, or a driver's longer last
// segment): the bytes past the IPv4 total length are ignored.
TEST_F(Fixture, BytesBeyondTheIpLengthAreIgnored) {
  auto payload = pattern(33);
  UdpSpec u;
  u.dst_port = 7;
  auto f = udp_frame(StackHarness::eth_in(), StackHarness::ip_in(), u, payload);
  const size_t len = f.size();
  f.resize(len + 500, 0xee);
  rx(Chain(f, {40, len - 1, len + 1, len + 200}).view);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], payload);
  EXPECT_EQ(h.total_drops(), 0u);
}

}  // namespace
}  // namespace ws::test
