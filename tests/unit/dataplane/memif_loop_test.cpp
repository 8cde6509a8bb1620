// net_memif with jumbo frames in chained 2 KiB mbufs, through a real EAL: a memif
// server and client port in this one process, joined through a socket under /tmp.
//
// DPDK 22.11's memif copy-mode TX leaves the flags of a packet's first descriptor
// as the previous lap left them, so a packet that fits in one memif buffer can
// inherit MEMIF_DESC_FLAG_NEXT from a longer packet and be merged with a stale
// slot by the receiver (see vdev_args in dataplane/eal_args.hpp). The data plane
// therefore gives memif ports a buffer that holds a whole frame. These tests run
// the sequence that triggers the merge — a frame spanning several 2 KiB buffers,
// then single-buffer frames until the ring wraps onto its slots — in both
// directions, over ports configured the way the data plane configures them, and
// check every frame arrives whole and unchanged. The same sequence over memif's
// default 2 KiB buffers is run too and its outcome printed (not asserted: it is
// DPDK's bug, and a fixed DPDK would pass).
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "control/config/config.hpp"
#include "dataplane/eal_args.hpp"

namespace ws::dp {
namespace {

constexpr uint32_t kMtu = 9000;
constexpr uint32_t kRingLog2 = 4;  // 16 slots: the ring wraps after a few frames
rte_mempool* g_pool = nullptr;

struct Pair {
  uint16_t server = 0;
  uint16_t client = 0;
};
Pair g_fixed;    // ports as the data plane configures them (vdev_args)
Pair g_default;  // memif's default 2 KiB buffers

std::string socket_path(const char* tag) {
  return "/tmp/ws-memif-unit-" + std::to_string(getpid()) + "-" + tag + ".sock";
}

config::PortConfig memif_port(const std::string& name, const char* role, const char* tag) {
  config::PortConfig p;
  p.name = name;
  p.mtu = kMtu;
  p.device = name + ",role=" + role + ",socket=" + socket_path(tag) +
             ",id=0,rsize=" + std::to_string(kRingLog2);
  return p;
}

bool start_port(uint16_t port) {
  rte_eth_conf conf{};
  conf.txmode.offloads = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  return rte_eth_dev_configure(port, 1, 1, &conf) == 0 &&
         rte_eth_rx_queue_setup(port, 0, 1024, SOCKET_ID_ANY, nullptr, g_pool) == 0 &&
         rte_eth_tx_queue_setup(port, 0, 1024, SOCKET_ID_ANY, nullptr) == 0 &&
         rte_eth_dev_start(port) == 0;
}

bool link_up(uint16_t port) {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

class Eal : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string prefix = "ws-memif-unit-" + std::to_string(getpid());
    std::vector<std::string> args = {
        "memif_loop_test", "--no-huge", "--no-pci", "--no-shconf", "-l", "0", "-m", "256",
        "--file-prefix",   prefix};
    // vdev_args adds the whole-frame bsize; the default pair keeps memif's 2048.
    for (const auto& p : {memif_port("net_memif0", "server", "fixed"),
                          memif_port("net_memif1", "client", "fixed")}) {
      args.insert(args.end(), {"--vdev", vdev_args(p)});
    }
    for (const auto& p : {memif_port("net_memif2", "server", "default"),
                          memif_port("net_memif3", "client", "default")}) {
      args.insert(args.end(), {"--vdev", p.device});
    }
    args.insert(args.end(), {"--log-level", "lib.*:error", "--log-level", "pmd.net.memif:error"});
    std::vector<char*> argv;
    argv.reserve(args.size());
    for (auto& a : args) argv.push_back(a.data());
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0) << "EAL init failed";
    g_pool = rte_pktmbuf_pool_create("ws_memif_pool", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                     SOCKET_ID_ANY);
    ASSERT_NE(g_pool, nullptr);
    ASSERT_EQ(rte_eth_dev_get_port_by_name("net_memif0", &g_fixed.server), 0);
    ASSERT_EQ(rte_eth_dev_get_port_by_name("net_memif1", &g_fixed.client), 0);
    ASSERT_EQ(rte_eth_dev_get_port_by_name("net_memif2", &g_default.server), 0);
    ASSERT_EQ(rte_eth_dev_get_port_by_name("net_memif3", &g_default.client), 0);
    for (uint16_t p : {g_fixed.server, g_fixed.client, g_default.server, g_default.client}) {
      ASSERT_TRUE(start_port(p)) << "port " << p;
    }
    // The control-channel handshake runs on EAL's interrupt thread.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!(link_up(g_fixed.server) && link_up(g_fixed.client) && link_up(g_default.server) &&
             link_up(g_default.client)) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(link_up(g_fixed.server) && link_up(g_fixed.client)) << "memif pair not connected";
    ASSERT_TRUE(link_up(g_default.server) && link_up(g_default.client))
        << "memif pair not connected";
  }
  void TearDown() override {
    // Clients first; then let EAL's interrupt thread finish handling the servers'
    // side of the disconnect before the servers go (closing a server while that
    // thread still runs its disconnect crashed inside librte_eal now and then).
    for (uint16_t p : {g_fixed.client, g_default.client}) {
      rte_eth_dev_stop(p);
      rte_eth_dev_close(p);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while ((link_up(g_fixed.server) || link_up(g_default.server)) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (uint16_t p : {g_fixed.server, g_default.server}) {
      rte_eth_dev_stop(p);
      rte_eth_dev_close(p);
    }
    rte_mempool_free(g_pool);
    rte_eal_cleanup();
  }
};

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new Eal);

// A frame of `len` bytes as a chain of 2 KiB mbufs; byte i is (seed + i * 7).
rte_mbuf* make_frame(uint32_t len, uint8_t seed) {
  rte_mbuf* head = nullptr;
  rte_mbuf* tail = nullptr;
  uint32_t done = 0;
  while (done < len) {
    rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
    if (m == nullptr) {
      rte_pktmbuf_free(head);
      return nullptr;
    }
    uint32_t n = std::min<uint32_t>(len - done, rte_pktmbuf_tailroom(m));
    auto* p = static_cast<uint8_t*>(static_cast<void*>(rte_pktmbuf_append(m, n)));
    for (uint32_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed + (done + i) * 7);
    done += n;
    if (head == nullptr) {
      head = m;
    } else if (rte_pktmbuf_chain(head, m) != 0) {
      rte_pktmbuf_free(m);
      rte_pktmbuf_free(head);
      return nullptr;
    }
    tail = m;
  }
  (void)tail;
  return head;
}

bool frame_matches(const rte_mbuf* m, uint32_t len, uint8_t seed) {
  if (m->pkt_len != len) return false;
  uint32_t off = 0;
  for (const rte_mbuf* s = m; s != nullptr; s = s->next) {
    const auto* p = rte_pktmbuf_mtod(s, const uint8_t*);
    for (uint32_t i = 0; i < s->data_len; ++i, ++off) {
      if (p[i] != static_cast<uint8_t>(seed + off * 7)) return false;
    }
  }
  return off == len;
}

struct Outcome {
  int sent = 0;
  int whole = 0;       // arrived with the right length and content
  int wrong = 0;       // arrived changed (merged, cut, other bytes)
  int missing = 0;     // never arrived within the wait
  int unexpected = 0;  // more frames than were sent
};

// Sends a jumbo frame and then single-buffer frames until the ring has wrapped
// twice, one frame at a time from `tx` to `rx`, and classifies what arrives.
Outcome run_sequence(uint16_t tx, uint16_t rx) {
  Outcome o;
  std::vector<uint32_t> lens;
  const uint32_t slots = 1U << kRingLog2;
  for (int lap = 0; lap < 3; ++lap) {
    lens.push_back(kMtu + 14);  // spans 5 buffers of 2 KiB
    lens.push_back(5000);
    for (uint32_t i = 0; i < slots; ++i) lens.push_back(60 + i * 13);
  }
  for (size_t k = 0; k < lens.size(); ++k) {
    auto seed = static_cast<uint8_t>(k * 31 + 1);
    rte_mbuf* m = make_frame(lens[k], seed);
    if (m == nullptr) {
      ADD_FAILURE() << "mempool exhausted building frame " << k;
      return o;
    }
    // A server sends into buffers the client's receive side supplies: let the
    // receiver poll (and so refill) until the frame is taken.
    bool taken = false;
    auto tx_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (!(taken = rte_eth_tx_burst(tx, 0, &m, 1) == 1) &&
           std::chrono::steady_clock::now() < tx_deadline) {
      rte_mbuf* early[32];
      uint16_t n = rte_eth_rx_burst(rx, 0, early, 32);
      o.unexpected += n;
      for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(early[i]);
    }
    if (!taken) {
      rte_pktmbuf_free(m);
      ADD_FAILURE() << "tx_burst refused frame " << k;
      return o;
    }
    ++o.sent;
    rte_mbuf* got[32];
    uint16_t n = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (n == 0 && std::chrono::steady_clock::now() < deadline) {
      n = rte_eth_rx_burst(rx, 0, got, 32);
    }
    if (n == 0) ++o.missing;
    for (uint16_t i = 0; i < n; ++i) {
      if (i > 0) {
        ++o.unexpected;
      } else if (frame_matches(got[i], lens[k], seed)) {
        ++o.whole;
      } else {
        ++o.wrong;
      }
      rte_pktmbuf_free(got[i]);
    }
  }
  // Anything still arriving is a replay of stale slots: drain it (bounded).
  for (int i = 0; i < 100; ++i) {
    rte_mbuf* got[32];
    uint16_t n = rte_eth_rx_burst(rx, 0, got, 32);
    o.unexpected += n;
    for (uint16_t j = 0; j < n; ++j) rte_pktmbuf_free(got[j]);
  }
  return o;
}

void expect_clean(const Outcome& o) {
  EXPECT_EQ(o.whole, o.sent);
  EXPECT_EQ(o.wrong, 0);
  EXPECT_EQ(o.missing, 0);
  EXPECT_EQ(o.unexpected, 0);
}

void print(const char* what, const Outcome& o) {
  std::printf("%s: %d frames sent, %d whole, %d changed, %d missing, %d unexpected\n", what, o.sent,
              o.whole, o.wrong, o.missing, o.unexpected);
}

TEST(MemifBufferSize, HoldsAWholeFrame) {
  EXPECT_EQ(memif_buffer_size(1500), 2048U);
  EXPECT_EQ(memif_buffer_size(2034), 2048U);
  EXPECT_EQ(memif_buffer_size(2035), 2112U);
  EXPECT_EQ(memif_buffer_size(9000), 9024U);
  EXPECT_EQ(memif_buffer_size(9600), 9664U);
  for (uint32_t mtu = 68; mtu <= 9600; mtu += 97) {
    EXPECT_GE(memif_buffer_size(mtu), mtu + 14);
    EXPECT_EQ(memif_buffer_size(mtu) % 64, 0U);
  }
}

TEST(VdevArgs, MemifGetsAWholeFrameBufferUnlessGiven) {
  config::PortConfig p;
  p.mtu = 9000;
  p.device = "net_memif0,role=client,socket=/run/x.sock";
  EXPECT_EQ(vdev_args(p), "net_memif0,role=client,socket=/run/x.sock,bsize=9024");
  p.device = "net_memif0,bsize=16384,role=client";
  EXPECT_EQ(vdev_args(p), p.device);  // the operator's choice stands (port_setup checks it)
  p.device = "net_tap0,iface=t0";
  EXPECT_EQ(vdev_args(p), p.device);
  p.device = "net_memif0";
  p.mtu = 1500;
  EXPECT_EQ(vdev_args(p), "net_memif0,bsize=2048");
}

TEST(VdevArgs, AfPacketGetsAnEightMebibyteRingUnlessGiven) {
  config::PortConfig p;
  p.device = "net_af_packet0,iface=veth0";
  EXPECT_EQ(vdev_args(p), "net_af_packet0,iface=veth0,framecnt=4096");
  p.device = "net_af_packet0,iface=veth0,blocksz=20480,framesz=10240";
  EXPECT_EQ(vdev_args(p), p.device + ",framecnt=818");
  p.device = "net_af_packet0,iface=veth0,framecnt=1024";
  EXPECT_EQ(vdev_args(p), p.device);  // the operator's choice stands
  EXPECT_EQ(af_packet_frame_count(2048, 4096), 4096U);
  EXPECT_EQ(af_packet_frame_count(65536, 65536), 512U);  // never below the PMD's default
  EXPECT_EQ(af_packet_frame_count(2048, 1024), 512U);    // nonsense geometry: the default
}

TEST(DevargU32, FindsOnlyTheWholeKey) {
  EXPECT_EQ(devarg_u32("net_memif0,role=server,bsize=4096,id=1", "bsize"), 4096U);
  EXPECT_EQ(devarg_u32("net_memif0,bsize=4096", "bsize"), 4096U);
  EXPECT_EQ(devarg_u32("net_memif0,xbsize=4096", "bsize"), 0U);
  EXPECT_EQ(devarg_u32("net_memif0,bsize=", "bsize"), 0U);
  EXPECT_EQ(devarg_u32("net_memif0,bsize=12ab", "bsize"), 0U);
  EXPECT_EQ(devarg_u32("bsize=4096", "bsize"), 0U);  // the device name is not an argument
  EXPECT_EQ(devarg_u32("net_memif0", "bsize"), 0U);
}

TEST(MemifLoop, JumboFramesCrossWholeClientToServer) {
  Outcome o = run_sequence(g_fixed.client, g_fixed.server);
  print("whole-frame buffers, client -> server", o);
  expect_clean(o);
}

TEST(MemifLoop, JumboFramesCrossWholeServerToClient) {
  Outcome o = run_sequence(g_fixed.server, g_fixed.client);
  print("whole-frame buffers, server -> client", o);
  expect_clean(o);
}

TEST(MemifLoop, DefaultBuffersShowWhyTheDataPlaneSizesThem) {
  // Printed, not asserted (see the file comment). Run last: a merged frame can
  // leave this pair's receiver replaying stale slots.
  print("memif default 2 KiB buffers, client -> server",
        run_sequence(g_default.client, g_default.server));
}

}  // namespace
}  // namespace ws::dp
