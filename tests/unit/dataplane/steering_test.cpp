// Software RSS hand-over (dataplane/steering.hpp) with real rte_rings and mbufs: frames
// reach the core that owns their flow, ARP replies reach every core, a full ring drops
// and counts, and every mbuf comes back. The EAL is the one mbuf_chain_test.cpp starts.
#include "dataplane/steering.hpp"

#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <cstring>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/wire/ipv4.hpp"
#include "tests/support/frames.hpp"

namespace ws::dp {
namespace {

constexpr uint16_t kPort = 7;
const Ipv4Addr kUs = Ipv4Addr::from_octets(10, 81, 0, 1);
const Ipv4Addr kPeer = Ipv4Addr::from_octets(10, 81, 0, 2);
const MacAddr kUsMac{{2, 0, 0, 0, 0, 1}};
const MacAddr kPeerMac{{2, 0, 0, 0, 0, 2}};

rte_mbuf* mbuf_of(rte_mempool* pool, const std::vector<uint8_t>& frame) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return nullptr;
  std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())), frame.data(),
              frame.size());
  m->port = kPort;
  return m;
}

std::vector<uint8_t> tcp_to_us(uint16_t peer_port) {
  std::vector<uint8_t> l4(20, 0);
  store_be16(l4.data(), peer_port);
  store_be16(l4.data() + 2, 7);
  l4[12] = 5 << 4;
  test::Ipv4Spec ip;
  ip.src = kPeer;
  ip.dst = kUs;
  ip.protocol = wire::kIpProtoTcp;
  return test::ipv4_frame({kUsMac, kPeerMac}, ip, l4);
}

struct SteeringTest : ::testing::Test {
  rte_mempool* pool = nullptr;
  Steering steering;
  unsigned free_at_start = 0;
  void SetUp() override {
    pool = rte_pktmbuf_pool_create("ws_steer_pool", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                   SOCKET_ID_ANY);
    ASSERT_NE(pool, nullptr);
    free_at_start = rte_mempool_avail_count(pool);
    config::Config cfg;
    cfg.dataplane.lcores = {0, 1};
    std::vector<PortInfo> ports(1);
    ports[0].port_id = kPort;
    ports[0].rx_queues = 2;
    std::string err;
    ASSERT_TRUE(steering.init(cfg, ports, err)) << err;
  }
  void TearDown() override {
    steering.shutdown();  // frees what is left in the rings
    EXPECT_EQ(rte_mempool_avail_count(pool), free_at_start) << "every mbuf came back";
    rte_mempool_free(pool);
  }
  void free_all(rte_mbuf** ms, uint16_t n) {
    for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(ms[i]);
  }
};

TEST_F(SteeringTest, FramesReachTheCoreThatOwnsTheirFlow) {
  ASSERT_TRUE(steering.active());
  EXPECT_TRUE(steering.steered(kPort));
  EXPECT_FALSE(steering.steered(kPort + 1));
  SteerOutbox c0(steering, 0), c1(steering, 1);
  rte_mbuf* ms[64];
  for (uint16_t i = 0; i < 64; ++i) ASSERT_NE(ms[i] = mbuf_of(pool, tcp_to_us(40000 + i)), nullptr);
  const uint16_t kept = c0.sort(ms, 64);
  c0.flush();
  EXPECT_EQ(c0.refused(), 0u);
  for (uint16_t i = 0; i < kept; ++i) {
    EXPECT_EQ(
        steering.owner().of_tcp(kPeer, load_be16(rte_pktmbuf_mtod(ms[i], uint8_t*) + 34), kUs, 7),
        0u);
  }
  rte_mbuf* got[64];
  const uint16_t taken = c1.take(got, 64);
  EXPECT_GT(kept, 16u) << "about half the flows are core 0's";
  EXPECT_GT(taken, 16u) << "about half the flows are core 1's";
  EXPECT_EQ(kept + taken, 64);
  EXPECT_EQ(c0.handed_out(), taken);
  EXPECT_EQ(c1.handed_in(), taken);
  for (uint16_t i = 0; i < taken; ++i) {
    EXPECT_EQ(steering.owner().of_frame({rte_pktmbuf_mtod(got[i], const uint8_t*), 54}, 9), 1u);
  }
  EXPECT_EQ(c0.take(got + taken, 1), 0) << "nothing was handed to core 0";
  free_all(ms, kept);
  free_all(got, taken);
}

TEST_F(SteeringTest, ArpRepliesReachEveryCore) {
  SteerOutbox c0(steering, 0), c1(steering, 1);
  wire::ArpRepr r;
  r.op = wire::ArpOp::kReply;
  r.sender_mac = kPeerMac;
  r.sender_ip = kPeer;
  r.target_mac = kUsMac;
  r.target_ip = kUs;
  rte_mbuf* ms[1] = {mbuf_of(pool, test::arp_frame({kUsMac, kPeerMac}, test::ArpSpec(r)))};
  ASSERT_NE(ms[0], nullptr);
  EXPECT_EQ(c1.sort(ms, 1), 1) << "the receiving core keeps it";
  c1.flush();
  rte_mbuf* got[2];
  ASSERT_EQ(c0.take(got, 2), 1) << "and the other core gets a copy";
  EXPECT_NE(got[0], ms[0]);
  EXPECT_EQ(rte_pktmbuf_pkt_len(got[0]), rte_pktmbuf_pkt_len(ms[0]));
  EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(got[0], void*), rte_pktmbuf_mtod(ms[0], void*),
                        rte_pktmbuf_data_len(ms[0])),
            0);
  free_all(ms, 1);
  free_all(got, 1);
}

TEST_F(SteeringTest, AFullRingDropsAndCounts) {
  SteerOutbox c0(steering, 0), c1(steering, 1);
  // Frames of one flow that core 1 owns, more than its ring holds, none taken.
  uint16_t port = 40000;
  while (steering.owner().of_tcp(kPeer, port, kUs, 7) != 1) ++port;
  const uint32_t total = Steering::kRingSize + 100;
  uint32_t refused = 0;
  for (uint32_t sent = 0; sent < total; sent += 32) {
    rte_mbuf* ms[32];
    for (auto& m : ms) ASSERT_NE(m = mbuf_of(pool, tcp_to_us(port)), nullptr);
    EXPECT_EQ(c0.sort(ms, 32), 0);
    c0.flush();
    refused += c0.refused();
  }
  const uint32_t sent = (total + 31) / 32 * 32;
  EXPECT_EQ(c0.handed_out(), Steering::kRingSize - 1) << "an rte_ring holds size - 1";
  EXPECT_EQ(refused, sent - (Steering::kRingSize - 1));
  // The ring's frames stay for shutdown() to free (TearDown checks the pool).
}

}  // namespace
}  // namespace ws::dp
