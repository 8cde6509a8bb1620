// The Toeplitz RSS hash against the verification vectors of the RSS specification
// (Microsoft, "Verifying the RSS Hash Calculation"), and the queue selection built on it.
#include <gtest/gtest.h>

#include <set>

#include "stack/steer/toeplitz.hpp"

namespace ws {
namespace {

const std::vector<uint8_t> kKey = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                                   0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                                   0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                                   0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

struct Vector {
  const char* dst;
  uint16_t dst_port;
  const char* src;
  uint16_t src_port;
  uint32_t ip_only;
  uint32_t with_tcp;
};

// Destination, source, IPv4-only hash, IPv4-with-TCP hash, as the specification lists them.
const Vector kVectors[] = {
    {"161.142.100.80", 1766, "66.9.149.187", 2794, 0x323e8fc2, 0x51ccc178},
    {"65.69.140.83", 4739, "199.92.111.2", 14230, 0xd718262a, 0xc626b0ea},
    {"12.22.207.184", 38024, "24.19.198.95", 12898, 0xd2d0a5de, 0x5c2b394a},
    {"209.142.163.6", 2217, "38.27.205.30", 48228, 0x82989176, 0xafc7327f},
    {"202.188.127.2", 1303, "153.39.163.191", 44251, 0x5d1809c5, 0x10e828a2},
};

TEST(Toeplitz, SpecificationVectors) {
  for (const Vector& v : kVectors) {
    Ipv4Addr src = *Ipv4Addr::parse(v.src);
    Ipv4Addr dst = *Ipv4Addr::parse(v.dst);
    EXPECT_EQ(rss_hash(kKey, src, dst, v.src_port, v.dst_port, false), v.ip_only) << v.src;
    EXPECT_EQ(rss_hash(kKey, src, dst, v.src_port, v.dst_port, true), v.with_tcp) << v.src;
  }
}

TEST(Toeplitz, ZeroInputAndShortKey) {
  const uint8_t zeros[12] = {};
  EXPECT_EQ(toeplitz_hash(kKey, zeros), 0u);
  // A key shorter than the input needs: the missing bytes act as zero, never read past.
  const uint8_t ones[12] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  const std::vector<uint8_t> short_key(kKey.begin(), kKey.begin() + 4);
  const uint32_t first = 0x6d5a56da;
  // Only the first key window and its shifts contribute.
  EXPECT_NE(toeplitz_hash(short_key, ones), 0u);
  const uint8_t one_bit[1] = {0x80};
  EXPECT_EQ(toeplitz_hash(short_key, one_bit), first);
}

TEST(Toeplitz, QueueSelectionFollowsTheRedirectionTable) {
  RssTable t;
  t.enabled = true;
  t.key = kKey;
  for (int i = 0; i < 128; ++i) t.reta.push_back(static_cast<uint16_t>(i % 4));
  const Ipv4Addr local = *Ipv4Addr::parse("161.142.100.80");
  const Endpoint remote{*Ipv4Addr::parse("66.9.149.187"), 2794};
  // The NIC hashes the packet the remote sends: source = remote, destination = us.
  EXPECT_EQ(t.queue_for_tcp(local, 1766, remote), (0x51ccc178u % 128) % 4);
  // Across local ports, every queue is reachable: a core can always find a port.
  std::set<uint16_t> seen;
  for (uint16_t p = 32768; p < 32768 + 256; ++p) seen.insert(t.queue_for_tcp(local, p, remote));
  EXPECT_EQ(seen.size(), 4u);
  t.enabled = false;
  EXPECT_EQ(t.queue_for_tcp(local, 1766, remote), 0);
}

}  // namespace
}  // namespace ws

namespace ws {
namespace {

// Two cores, four RX queues dealt round robin (queue % 2): every port a core accepts
// hashes, for the packets the remote sends back, to a queue that core polls; the two
// cores' choices never overlap, and each finds plenty of ports.
TEST(RssPortSelector, PortsComeBackToTheOpeningCore) {
  RssTable t;
  t.enabled = true;
  t.key = kKey;
  for (int i = 0; i < 128; ++i) t.reta.push_back(static_cast<uint16_t>(i % 4));
  const Ipv4Cidr subnet{*Ipv4Addr::parse("10.0.0.1"), 24};
  std::vector<RssRoute> routes{RssRoute{subnet, false, 4, t, false, {}, false}};
  RssPortSelector core0(routes, 0, 2), core1(routes, 1, 2);
  ASSERT_TRUE(core0.active());
  const Endpoint remote{*Ipv4Addr::parse("10.0.0.2"), 7};
  int n0 = 0, n1 = 0;
  for (uint32_t p = 32768; p < 33768; ++p) {
    const auto port = static_cast<uint16_t>(p);
    const bool a = core0(port, remote), b = core1(port, remote);
    EXPECT_NE(a, b) << "port " << p << " must belong to exactly one core";
    const uint16_t q = t.queue_for_tcp(subnet.addr, port, remote);
    EXPECT_EQ(q % 2, a ? 0 : 1) << p;
    n0 += a;
    n1 += b;
  }
  EXPECT_GT(n0, 350);
  EXPECT_GT(n1, 350);
}

TEST(RssPortSelector, WithoutRssEverythingReturnsToQueueZero) {
  const Ipv4Cidr subnet{*Ipv4Addr::parse("10.0.0.1"), 24};
  std::vector<RssRoute> routes{RssRoute{subnet, true, 1, RssTable{}, false, {}, false}};
  RssPortSelector core0(routes, 0, 2), core1(routes, 1, 2);
  EXPECT_FALSE(core0.active());
  const Endpoint far{*Ipv4Addr::parse("192.0.2.9"), 80};  // via the gateway
  EXPECT_TRUE(core0(40000, far));
  EXPECT_FALSE(core1(40000, far));
}

}  // namespace
}  // namespace ws
