// Chained mbufs with a real EAL (no hugepages, no PCI), a real mempool of
// standard 2 KiB mbufs and a net_ring port that loops transmitted mbufs back to
// its receive queue: jumbo and TSO-sized frames built by the stack go out as
// chains and come back intact with valid checksums, frames whose headers
// straddle segment boundaries are parsed, and the counters say which path ran.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "dataplane/mbuf_io.hpp"
#include "dataplane/rx_frame.hpp"
#include "dataplane/rx_holder.hpp"
#include "stack/core/bytes.hpp"
#include "stack/iface/stack.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"
#include "tests/support/frames.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::dp {
namespace {

using test::kOurIp;
using test::kOurMac;
using test::kPeerIp;
using test::kPeerMac;

rte_mempool* g_pool = nullptr;
uint16_t g_port = 0;

class Eal : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string prefix = "ws-offload-unit-" + std::to_string(getpid());
    std::vector<std::string> args = {"mbuf_chain_test",
                                     "--no-huge",
                                     "--no-pci",
                                     "--no-shconf",
                                     "-l",
                                     "0",
                                     "-m",
                                     "64",
                                     "--file-prefix",
                                     prefix,
                                     "--vdev",
                                     "net_ring0",
                                     "--log-level",
                                     "lib.*:error"};
    std::vector<char*> argv;
    argv.reserve(args.size());
    for (auto& a : args) argv.push_back(a.data());
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0) << "EAL init failed";
    g_pool = rte_pktmbuf_pool_create("ws_unit_pool", 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                     SOCKET_ID_ANY);
    ASSERT_NE(g_pool, nullptr);
    ASSERT_EQ(rte_eth_dev_get_port_by_name("net_ring0", &g_port), 0);
    rte_eth_conf conf{};
    ASSERT_EQ(rte_eth_dev_configure(g_port, 1, 1, &conf), 0);
    ASSERT_EQ(rte_eth_rx_queue_setup(g_port, 0, 1024, SOCKET_ID_ANY, nullptr, g_pool), 0);
    ASSERT_EQ(rte_eth_tx_queue_setup(g_port, 0, 1024, SOCKET_ID_ANY, nullptr), 0);
    ASSERT_EQ(rte_eth_dev_start(g_port), 0);
  }
  void TearDown() override {
    rte_eth_dev_stop(g_port);
    rte_eth_dev_close(g_port);
    rte_mempool_free(g_pool);
    rte_eal_cleanup();
  }
};

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new Eal);

// Everything the port looped back, as mbufs (the caller frees them).
std::vector<rte_mbuf*> drain() {
  std::vector<rte_mbuf*> out;
  rte_mbuf* b[32];
  for (int i = 0; i < 100; ++i) {
    uint16_t n = rte_eth_rx_burst(g_port, 0, b, 32);
    out.insert(out.end(), b, b + n);
    if (n == 0) break;
  }
  return out;
}

uint8_t pattern(size_t i) { return static_cast<uint8_t>((i * 131) ^ (i >> 7)); }

struct Fixture : ::testing::Test {
  DropCounters drops;
  StackCounters counters;
  TxOffloads offloads;
  std::unique_ptr<MbufIo> io;
  RxSegments segs;
  // The stack's view of a received mbuf (in place), and a flat copy to compare.
  PacketView view(const rte_mbuf* m) {
    PacketView v;
    EXPECT_TRUE(rx_frame(m, segs, counters, v));
    return v;
  }
  static std::vector<uint8_t> flat(const PacketView& v) {
    std::vector<uint8_t> out(v.size());
    EXPECT_TRUE(v.copy_out(0, out));
    return out;
  }
  unsigned free_at_start = 0;
  void SetUp() override {
    ASSERT_NE(g_pool, nullptr);
    free_at_start = rte_mempool_avail_count(g_pool);
    io = std::make_unique<MbufIo>(g_port, 0, g_pool, offloads, 9014, drops, counters);
    io->enable_chains();
  }
  void TearDown() override {
    io.reset();
    for (auto* m : drain()) rte_pktmbuf_free(m);
    EXPECT_EQ(rte_mempool_avail_count(g_pool), free_at_start) << "every mbuf came back";
  }
};

TEST_F(Fixture, FrameWithinOneMbufIsNotChained) {
  TxBuf b;
  ASSERT_TRUE(io->alloc_tx(1514, b));
  auto* m = static_cast<rte_mbuf*>(b.handle);
  EXPECT_EQ(b.data, rte_pktmbuf_mtod(m, uint8_t*));
  for (uint32_t i = 0; i < 1514; ++i) b.data[i] = pattern(i);
  b.len = 1514;
  ASSERT_TRUE(io->transmit(b));
  io->flush();
  auto got = drain();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]->nb_segs, 1);
  PacketView f = view(got[0]);
  ASSERT_EQ(f.size(), 1514u);
  EXPECT_TRUE(f.contiguous());
  EXPECT_EQ(f.head().data(), rte_pktmbuf_mtod(got[0], const uint8_t*)) << "passed in place";
  EXPECT_EQ(counters.tx_chained_frames, 0u);
  EXPECT_EQ(counters.rx_chained_frames, 0u);
  rte_pktmbuf_free(got[0]);
}

TEST_F(Fixture, JumboAndTsoSizedFramesGoOutAsChainsAndComeBackWhole) {
  for (uint32_t len : {2100u, 9014u, 65535u + 14u}) {
    TxBuf b;
    ASSERT_TRUE(io->alloc_tx(len, b)) << len;
    auto* m = static_cast<rte_mbuf*>(b.handle);
    EXPECT_NE(b.data, rte_pktmbuf_mtod(m, uint8_t*)) << "built in the staging area";
    for (uint32_t i = 0; i < len; ++i) b.data[i] = pattern(i + len);
    b.len = len;
    ASSERT_TRUE(io->transmit(b));
    io->flush();
    auto got = drain();
    ASSERT_EQ(got.size(), 1u);
    uint32_t room = rte_pktmbuf_data_room_size(g_pool) - RTE_PKTMBUF_HEADROOM;
    EXPECT_EQ(got[0]->nb_segs, (len + room - 1) / room) << len;
    EXPECT_EQ(got[0]->pkt_len, len);
    PacketView v = view(got[0]);
    EXPECT_FALSE(v.contiguous());
    EXPECT_EQ(v.head().data(), rte_pktmbuf_mtod(got[0], const uint8_t*)) << "not copied";
    auto f = flat(v);
    ASSERT_EQ(f.size(), len);
    size_t bad = 0;
    for (uint32_t i = 0; i < len; ++i) bad += f[i] != pattern(i + len);
    EXPECT_EQ(bad, 0u) << len;
    rte_pktmbuf_free(got[0]);
  }
  EXPECT_EQ(counters.tx_chained_frames, 3u);
  EXPECT_EQ(counters.rx_chained_frames, 3u);
}

TEST_F(Fixture, OneStagedFrameAtATimeAndSealFreesTheStagingArea) {
  TxBuf a, b;
  ASSERT_TRUE(io->alloc_tx(9014, a));
  EXPECT_FALSE(io->alloc_tx(9014, b)) << "the staging area is taken";
  for (uint32_t i = 0; i < 9014; ++i) a.data[i] = pattern(i);
  a.len = 9014;
  io->seal(a);
  auto* m = static_cast<rte_mbuf*>(a.handle);
  EXPECT_EQ(a.data, rte_pktmbuf_mtod(m, uint8_t*)) << "after seal the frame lives in its chain";
  // What the stack writes after sealing (the Ethernet destination once ARP
  // resolves) lands in the chain.
  kPeerMac.to_bytes(a.data);
  ASSERT_TRUE(io->alloc_tx(9014, b));
  io->release(b);
  ASSERT_TRUE(io->transmit(a));
  io->flush();
  auto got = drain();
  ASSERT_EQ(got.size(), 1u);
  auto f = flat(view(got[0]));
  ASSERT_EQ(f.size(), 9014u);
  EXPECT_TRUE(std::equal(f.begin(), f.begin() + 6, kPeerMac.b.begin()));
  EXPECT_EQ(f[6], pattern(6));
  EXPECT_EQ(f[9013], pattern(9013));
  rte_pktmbuf_free(got[0]);
}

// alloc_tx_gather: the stack writes the chain's segments itself; nothing is
// staged and seal() only takes the segment list back.
TEST_F(Fixture, GatheredFramesAreWrittenIntoTheChainDirectly) {
  for (uint32_t len : {1514u, 2100u, 9014u, 65535u + 14u}) {
    TxBuf b;
    ASSERT_TRUE(io->alloc_tx_gather(len, 66, b)) << len;
    auto* m = static_cast<rte_mbuf*>(b.handle);
    EXPECT_EQ(b.data, rte_pktmbuf_mtod(m, uint8_t*)) << "no staging area";
    uint32_t total = std::min(b.capacity, len);
    for (uint32_t i = 0; i < total; ++i) b.data[i] = pattern(i + len);
    for (const TxSeg& g : b.more()) {
      for (uint32_t i = 0; i < g.len; ++i) g.data[i] = pattern(total + i + len);
      total += g.len;
    }
    EXPECT_EQ(total, len) << "the segments hold exactly the frame";
    EXPECT_EQ(b.nsegs + 1u, m->nb_segs);
    b.len = len;
    io->seal(b);
    EXPECT_EQ(b.nsegs, 0u) << "seal takes the segment list back";
    ASSERT_TRUE(io->transmit(b));
    io->flush();
    auto got = drain();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0]->pkt_len, len);
    auto f = flat(view(got[0]));
    ASSERT_EQ(f.size(), len);
    size_t bad = 0;
    for (uint32_t i = 0; i < len; ++i) bad += f[i] != pattern(i + len);
    EXPECT_EQ(bad, 0u) << len;
    rte_pktmbuf_free(got[0]);
  }
  EXPECT_EQ(counters.tx_chained_frames, 3u);
  EXPECT_EQ(counters.tx_staged_frames, 0u);
}

// A pool that runs dry in the middle of a chain: the allocation is refused
// whole and every mbuf it took goes back.
TEST_F(Fixture, GatherOnAnExhaustedPoolRefusesTheFrameWhole) {
  rte_mempool* small =
      rte_pktmbuf_pool_create("ws_unit_small", 16, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(small, nullptr);
  {
    MbufIo sio(g_port, 0, small, offloads, 9014, drops, counters);
    sio.enable_chains();
    std::vector<rte_mbuf*> held;
    while (rte_mempool_avail_count(small) > 3) held.push_back(rte_pktmbuf_alloc(small));
    TxBuf b;
    EXPECT_FALSE(sio.alloc_tx_gather(9014, 66, b)) << "5 mbufs needed, 3 left";
    EXPECT_EQ(rte_mempool_avail_count(small), 3u) << "nothing kept";
    EXPECT_TRUE(sio.alloc_tx_gather(1514, 66, b)) << "one mbuf still works";
    sio.release(b);
    for (auto* m : held) rte_pktmbuf_free(m);
    ASSERT_TRUE(sio.alloc_tx_gather(9014, 66, b));
    TxBuf c;
    EXPECT_GE(rte_mempool_avail_count(small), 10u);
    EXPECT_FALSE(sio.alloc_tx_gather(9014, 66, c)) << "one segment list lent at a time";
    sio.release(b);
    EXPECT_TRUE(sio.alloc_tx_gather(9014, 66, c)) << "release took the list back";
    sio.release(c);
  }
  EXPECT_EQ(rte_mempool_avail_count(small), 16u);
  rte_mempool_free(small);
}

// A burst of one-mbuf frames in one allocation; a pool with fewer left gives what it has;
// a frame larger than one mbuf is refused and nothing is kept.
TEST_F(Fixture, BulkAllocationGivesOneMbufFramesOrWhatIsLeft) {
  rte_mempool* small =
      rte_pktmbuf_pool_create("ws_unit_bulk", 80, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(small, nullptr);
  {
    MbufIo bio(g_port, 0, small, offloads, 9014, drops, counters);
    bio.enable_chains();
    std::array<TxBuf, 64> b;
    ASSERT_EQ(bio.alloc_tx_bulk(106, b), 64u);
    for (TxBuf& t : b) {
      auto* m = static_cast<rte_mbuf*>(t.handle);
      EXPECT_EQ(t.data, rte_pktmbuf_mtod(m, uint8_t*));
      EXPECT_GE(t.capacity, 106u);
      EXPECT_FALSE(t.staged);
      EXPECT_EQ(t.nsegs, 0);
    }
    EXPECT_EQ(rte_mempool_avail_count(small), 16u);
    std::array<TxBuf, 64> c;
    EXPECT_EQ(bio.alloc_tx_bulk(106, c), 16u) << "fewer left than asked: what is there";
    EXPECT_EQ(rte_mempool_avail_count(small), 0u);
    for (size_t i = 0; i < 16; ++i) bio.release(c[i]);
    EXPECT_EQ(bio.alloc_tx_bulk(9014, c), 0u) << "does not fit one mbuf";
    EXPECT_EQ(rte_mempool_avail_count(small), 16u) << "nothing kept";
    // Sent frames go out whole.
    for (uint32_t i = 0; i < 4; ++i) {
      std::memset(b[i].data, static_cast<int>(i), 106);
      b[i].len = 106;
      ASSERT_TRUE(bio.transmit(b[i]));
    }
    for (size_t i = 4; i < 64; ++i) bio.release(b[i]);
    bio.flush();
    auto got = drain();
    ASSERT_EQ(got.size(), 4u);
    for (uint32_t i = 0; i < 4; ++i) {
      EXPECT_EQ(got[i]->pkt_len, 106u);
      EXPECT_EQ(rte_pktmbuf_mtod(got[i], uint8_t*)[105], i);
      rte_pktmbuf_free(got[i]);
    }
  }
  EXPECT_EQ(rte_mempool_avail_count(small), 80u);
  rte_mempool_free(small);
}

TEST_F(Fixture, WithoutChainsALargeFrameIsRefused) {
  MbufIo plain(g_port, 0, g_pool, offloads, 9014, drops, counters);
  TxBuf b;
  EXPECT_FALSE(plain.alloc_tx(9014, b));
  EXPECT_EQ(rte_mempool_avail_count(g_pool), free_at_start) << "the refused mbuf went back";
}

// A stack on the looped-back port sends a jumbo UDP datagram: the stack writes
// it into a chain (gathered: header in the first mbuf, payload in the others),
// holds it (sealed) behind ARP resolution, and sends it when the reply arrives. DPDK's own checksum
// routines, which walk the chain, agree with the checksums the stack computed.
TEST_F(Fixture, StackSendsAJumboDatagramAsAChainWithValidChecksums) {
  InterfaceConfig ic = test::default_interface();
  ic.mtu = 9000;
  Stack stack(StackConfig{});
  stack.add_interface(ic, *io);
  test::VirtualClock clock;
  std::vector<uint8_t> payload(8000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = pattern(i);
  auto* sock = stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_NE(sock, nullptr);
  ASSERT_TRUE(sock->send_to({kPeerIp, 6000}, payload, clock.now));
  io->flush();
  auto arp = drain();  // the ARP request
  ASSERT_EQ(arp.size(), 1u);
  rte_pktmbuf_free(arp[0]);
  wire::ArpRepr r{wire::ArpOp::kReply, kPeerMac, kPeerIp, kOurMac, kOurIp};
  auto reply = test::arp_frame(test::EthSpec{kOurMac, kPeerMac, {}, {}}, test::ArpSpec{r});
  stack.receive(reply, RxMeta{}, clock.now);
  io->flush();
  auto got = drain();
  ASSERT_EQ(got.size(), 1u);
  rte_mbuf* m = got[0];
  EXPECT_GT(m->nb_segs, 1);
  EXPECT_EQ(counters.tx_staged_frames, 0u) << "gathered, not staged";
  EXPECT_EQ(m->pkt_len, 14u + 20 + 8 + 8000);
  // IPv4 header checksum over the header, UDP checksum by DPDK over the chain.
  const auto* ip = rte_pktmbuf_mtod_offset(m, const rte_ipv4_hdr*, 14);
  EXPECT_EQ(rte_ipv4_cksum(ip), 0) << "a header with a valid checksum sums to 0 here";
  EXPECT_EQ(rte_ipv4_udptcp_cksum_mbuf_verify(m, ip, 14 + 20), 0);
  auto f = flat(view(m));
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), f.begin() + 42));
  EXPECT_TRUE(std::equal(f.begin(), f.begin() + 6, kPeerMac.b.begin()));
  rte_pktmbuf_free(m);
  stack.udp_unbind(5000);
}

// Builds a chain holding `frame`, cut at the given segment lengths.
rte_mbuf* chain_of(std::span<const uint8_t> frame, std::initializer_list<uint16_t> cuts) {
  rte_mbuf* head = nullptr;
  rte_mbuf* tail = nullptr;
  size_t off = 0;
  auto add = [&](size_t n) {
    rte_mbuf* s = rte_pktmbuf_alloc(g_pool);
    char* p = rte_pktmbuf_append(s, static_cast<uint16_t>(n));
    std::memcpy(p, frame.data() + off, n);
    off += n;
    if (head == nullptr) {
      head = tail = s;
    } else {
      rte_pktmbuf_chain(head, s);
      tail = s;
    }
  };
  for (uint16_t c : cuts) add(c);
  while (off < frame.size()) add(std::min<size_t>(frame.size() - off, 2000));
  (void)tail;
  return head;
}

// Answers the ARP request a stack sends before its first frame to the peer.
void resolve_peer(Stack& stack, test::VirtualClock& clock) {
  wire::ArpRepr r{wire::ArpOp::kReply, kPeerMac, kPeerIp, kOurMac, kOurIp};
  auto reply = test::arp_frame(test::EthSpec{kOurMac, kPeerMac, {}, {}}, test::ArpSpec{r});
  stack.receive(reply, RxMeta{}, clock.now);
}

// An MTU 9000 interface on `io` that knows the peer's MAC, with the port drained.
void jumbo_stack_ready(Stack& stack, test::VirtualClock& clock, MbufIo& io) {
  InterfaceConfig ic = test::default_interface();
  ic.mtu = 9000;
  stack.add_interface(ic, io);
  resolve_peer(stack, clock);
  io.flush();
  for (auto* m : drain()) rte_pktmbuf_free(m);
}

// A jumbo echo request arriving as a chain is answered with a chain whose data
// was written straight from the request's segments (no staging area).
TEST_F(Fixture, JumboPingIsAnsweredWithAGatheredChain) {
  Stack stack(StackConfig{});
  test::VirtualClock clock;
  jumbo_stack_ready(stack, clock, *io);
  const auto data = test::pattern(8972, 3);
  test::Ipv4Spec ip;
  ip.src = kPeerIp;
  ip.dst = kOurIp;
  auto req = test::icmp_frame(test::EthSpec{kOurMac, kPeerMac, {}, {}}, ip, test::IcmpSpec{}, data);
  ASSERT_EQ(req.size(), 9014u);
  rte_mbuf* in = chain_of(req, {1000, 7, 2001});  // cuts at odd places
  PacketView v = view(in);
  stack.receive(v, RxMeta{}, clock.now);
  rte_pktmbuf_free(in);
  io->flush();
  auto got = drain();
  ASSERT_EQ(got.size(), 1u);
  rte_mbuf* m = got[0];
  EXPECT_GT(m->nb_segs, 1);
  EXPECT_EQ(counters.tx_staged_frames, 0u) << "gathered, not staged";
  auto f = flat(view(m));
  ASSERT_EQ(f.size(), 9014u);
  EXPECT_TRUE(test::ipv4_checksum_ok(f));
  EXPECT_TRUE(test::icmp_checksum_ok(f));
  EXPECT_EQ(f[34], 0) << "echo reply";
  EXPECT_EQ(load_be16(f.data() + 38), 0x4242) << "identifier kept";
  EXPECT_TRUE(std::equal(data.begin(), data.end(), f.begin() + 42)) << "data echoed";
  rte_pktmbuf_free(m);
}

// A datagram larger than the MTU leaves in fragments, each a gathered chain at
// jumbo sizes; put back together they are the datagram.
TEST_F(Fixture, LargeDatagramFragmentsAreGatheredChains) {
  Stack stack(StackConfig{});
  test::VirtualClock clock;
  jumbo_stack_ready(stack, clock, *io);
  auto* sock = stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_NE(sock, nullptr);
  const auto payload = test::pattern(30000, 9);
  ASSERT_TRUE(sock->send_to({kPeerIp, 6000}, payload, clock.now));
  io->flush();
  auto got = drain();
  ASSERT_EQ(got.size(), 4u) << "30008 bytes of UDP in 8976-byte pieces";
  EXPECT_EQ(counters.tx_staged_frames, 0u) << "gathered, not staged";
  std::vector<uint8_t> udp(30008);
  size_t seen = 0;
  for (rte_mbuf* m : got) {
    auto f = flat(view(m));
    EXPECT_TRUE(test::ipv4_checksum_ok(f));
    const uint16_t total = load_be16(f.data() + 16);
    const uint32_t off = (load_be16(f.data() + 20) & 0x1fff) * 8u;
    const size_t n = total - 20u;
    if (f.size() > 60) {
      EXPECT_EQ(f.size(), 14u + total);
    }
    ASSERT_LE(off + n, udp.size());
    std::copy(f.begin() + 34, f.begin() + 34 + static_cast<long>(n), udp.begin() + off);
    seen += n;
    if (total > 2000) {
      EXPECT_GT(m->nb_segs, 1);
    }
    rte_pktmbuf_free(m);
  }
  EXPECT_EQ(seen, udp.size());
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), udp.begin() + 8)) << "every byte";
  stack.udp_unbind(5000);
}

// TCP's holder on mbufs (dataplane/rx_holder.hpp): a held frame keeps every
// segment of its chain after the pipeline frees its own reference, and goes back
// to the pool on release; holds stop at a quarter of the pool and while it is low.
TEST_F(Fixture, HolderKeepsAChainPastThePipelinesFreeAndRespectsItsBudget) {
  MbufHolder holder;
  holder.add_pool(g_pool);
  const auto bytes = test::pattern(9014, 5);
  rte_mbuf* m = chain_of(bytes, {});
  ASSERT_GT(m->nb_segs, 1);
  const unsigned avail = rte_mempool_avail_count(g_pool);
  PacketView v = view(m);
  v.set_owner(&holder, m);
  PacketView payload = v.tail(54);  // what TCP would hold: keeps the owner
  ASSERT_EQ(payload.holder(), &holder);
  ASSERT_TRUE(payload.holder()->retain(payload.frame()));
  EXPECT_EQ(holder.held_mbufs(), m->nb_segs);
  rte_pktmbuf_free(m);  // the pipeline's reference
  EXPECT_EQ(rte_mempool_avail_count(g_pool), avail) << "nothing freed while held";
  std::vector<uint8_t> out(payload.size());
  ASSERT_TRUE(payload.copy_out(0, out));
  EXPECT_TRUE(std::equal(out.begin(), out.end(), bytes.begin() + 54)) << "bytes intact";
  holder.release(payload.frame());
  EXPECT_EQ(holder.held_mbufs(), 0u);
  EXPECT_GT(rte_mempool_avail_count(g_pool), avail) << "the chain went back";

  // Budget: a quarter of the pool (2047 / 4 = 511 mbufs), counted in segments.
  std::vector<rte_mbuf*> held;
  for (;;) {
    rte_mbuf* f = chain_of(bytes, {});
    if (!holder.retain(f)) {
      rte_pktmbuf_free(f);
      break;
    }
    held.push_back(f);
    rte_pktmbuf_free(f);
  }
  EXPECT_LE(holder.held_mbufs(), g_pool->size / 4);
  EXPECT_GT(holder.held_mbufs(), g_pool->size / 4 - 8);
  EXPECT_EQ(holder.refused(), 1u);
  for (rte_mbuf* f : held) holder.release(f);
  // Low pool: refused outright.
  holder.set_low(true);
  rte_mbuf* f = chain_of(bytes, {});
  EXPECT_FALSE(holder.retain(f));
  rte_pktmbuf_free(f);
  holder.set_low(false);
  EXPECT_EQ(holder.held_mbufs(), 0u);
}

// Headers straddling segments: Ethernet cut after 7 bytes, IPv4 after 13 more,
// UDP header split 3/5. The stack still delivers the payload, checksum checked.
TEST_F(Fixture, HeadersStraddlingSegmentsAreParsed) {
  Stack stack(StackConfig{});
  InterfaceConfig ic = test::default_interface();
  ic.mtu = 9000;
  stack.add_interface(ic, *io);
  std::vector<uint8_t> got_payload;
  auto* sock = stack.udp_bind(7, [&](UdpSocket&, const UdpDatagram& d, Instant) {
    got_payload.assign(d.payload.begin(), d.payload.end());
  });
  ASSERT_NE(sock, nullptr);
  std::vector<uint8_t> payload(5000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = pattern(i * 3);
  test::UdpSpec u;
  u.dst_port = 7;
  auto frame = udp_frame(test::StackHarness::eth_in(), test::StackHarness::ip_in(), u, payload);
  for (auto cuts :
       {std::initializer_list<uint16_t>{7, 13, 17, 3}, {1, 1, 1, 40}, {14, 20, 8}, {41, 1, 999}}) {
    got_payload.clear();
    rte_mbuf* m = chain_of(frame, cuts);
    ASSERT_EQ(m->pkt_len, frame.size());
    stack.receive(view(m), RxMeta{}, test::VirtualClock{}.now);
    rte_pktmbuf_free(m);
    EXPECT_EQ(got_payload, payload);
  }
  EXPECT_EQ(counters.rx_chained_frames, 4u);
  EXPECT_EQ(stack.drops().total(), 0u);
  // Headers cut inside: Ethernet at 7 and at 1, IPv4 at 20, UDP at 37 and 41;
  // {14, 20, 8} cuts only between headers.
  EXPECT_EQ(stack.counters().rx_header_pullups, 5u);
  // The 5000-byte payload spans segments: copied for the socket, once per frame.
  EXPECT_EQ(stack.counters().rx_linearized, 4u);
  // A corrupted byte in a later segment is caught by the checksum.
  frame[frame.size() - 10] ^= 0x40;
  rte_mbuf* m = chain_of(frame, {30, 30});
  got_payload.clear();
  stack.receive(view(m), RxMeta{}, test::VirtualClock{}.now);
  rte_pktmbuf_free(m);
  EXPECT_TRUE(got_payload.empty());
  EXPECT_EQ(stack.drops().get(DropReason::kUdpBadChecksum), 1u);
  stack.udp_unbind(7);
}

// A chain of more segments than the stack's view holds is refused (the pipeline
// counts it as rx_too_many_segments); one of exactly that many is taken whole.
TEST_F(Fixture, ChainsLongerThanTheViewAreRefused) {
  std::vector<uint8_t> frame(PacketView::kMaxSegments + 1);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = pattern(i);
  rte_mbuf* head = nullptr;
  for (size_t i = 0; i < frame.size(); ++i) {
    rte_mbuf* s = rte_pktmbuf_alloc(g_pool);
    ASSERT_NE(s, nullptr);
    *rte_pktmbuf_mtod(s, uint8_t*) = frame[i];
    rte_pktmbuf_append(s, 1);
    if (head == nullptr) {
      head = s;
    } else {
      ASSERT_EQ(rte_pktmbuf_chain(head, s), 0);
    }
    PacketView v;
    bool ok = rx_frame(head, segs, counters, v);
    EXPECT_EQ(ok, i < PacketView::kMaxSegments) << i;
    if (ok) {
      std::vector<uint8_t> out(v.size());
      ASSERT_TRUE(v.copy_out(0, out));
      EXPECT_TRUE(std::equal(out.begin(), out.end(), frame.begin())) << i;
    }
  }
  rte_pktmbuf_free(head);
}

}  // namespace
}  // namespace ws::dp
