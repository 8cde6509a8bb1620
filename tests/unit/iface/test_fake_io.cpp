// The test support itself: FakePacketIo's pool, recording and leak detection,
// and the frame builders' corruption knobs.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "stack/core/bytes.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"
#include "tests/support/fake_io.hpp"
#include "tests/support/frames.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

TEST(FakePacketIo, PoolLimitsAndRecording) {
  FakePacketIo::Options o;
  o.pool_size = 2;
  o.max_frame_len = 9014;
  o.offloads.udp_cksum = true;
  FakePacketIo io(o);
  EXPECT_EQ(io.max_frame_len(), 9014u);
  EXPECT_TRUE(io.tx_offloads().udp_cksum);
  EXPECT_FALSE(io.tx_offloads().ipv4_cksum);
  TxBuf a, b, c;
  ASSERT_TRUE(io.alloc_tx(60, a));
  ASSERT_TRUE(io.alloc_tx(60, b));
  EXPECT_EQ(io.free_buffers(), 0u);
  EXPECT_FALSE(io.alloc_tx(60, c));
  EXPECT_EQ(io.alloc_failures(), 1u);
  a.data[0] = 0x42;
  a.len = 1;
  a.flags = kTxUdpCksum;
  EXPECT_TRUE(io.transmit(a));
  io.release(b);
  EXPECT_EQ(io.free_buffers(), 2u);
  ASSERT_EQ(io.sent_count(), 1u);
  EXPECT_EQ(io.sent()[0].bytes, std::vector<uint8_t>{0x42});
  EXPECT_EQ(io.sent()[0].flags, static_cast<uint32_t>(kTxUdpCksum));
  EXPECT_EQ(io.frames().size(), 1u);
  EXPECT_EQ(io.releases(), 1u);
  EXPECT_TRUE(io.no_leaks());
  EXPECT_FALSE(io.alloc_tx(o.data_room + 1, c));  // larger than a buffer
}

TEST(FakePacketIo, SetAvailableDrainsAndRestores) {
  FakePacketIo io;
  io.set_available(0);
  TxBuf b;
  EXPECT_FALSE(io.alloc_tx(60, b));
  EXPECT_EQ(io.free_buffers(), 0u);
  io.restore_pool();
  ASSERT_TRUE(io.alloc_tx(60, b));
  io.release(b);
}

TEST(FakePacketIo, ReportsLeaksAndDoubleFrees) {
  EXPECT_NONFATAL_FAILURE(
      {
        FakePacketIo io;
        TxBuf b;
        ASSERT_TRUE(io.alloc_tx(60, b));
        EXPECT_FALSE(io.no_leaks());
      },
      "leak");
  EXPECT_NONFATAL_FAILURE(
      {
        FakePacketIo io;
        TxBuf b;
        ASSERT_TRUE(io.alloc_tx(60, b));
        io.release(b);
        io.release(b);
      },
      "not outstanding");
  EXPECT_NONFATAL_FAILURE(
      {
        FakePacketIo io;
        TxBuf foreign;
        uint8_t mem[64];
        foreign.data = mem;
        foreign.capacity = 64;
        io.transmit(foreign);
      },
      "not outstanding");
}

TEST(FakePacketIo, FreshBuffersAreFilledWithGarbage) {
  FakePacketIo io;
  TxBuf b;
  ASSERT_TRUE(io.alloc_tx(60, b));
  EXPECT_EQ(b.data[0], 0xa5);
  EXPECT_EQ(b.data[59], 0xa5);
  io.release(b);
}

TEST(Frames, UdpFrameIsValidAndKnobsCorruptOneField) {
  Ipv4Spec ip = StackHarness::ip_in();
  UdpSpec u;
  auto good = udp_frame(StackHarness::eth_in(), ip, u, pattern(30));
  ASSERT_EQ(good.size(), 14u + 20 + 8 + 30);
  EXPECT_TRUE(ipv4_checksum_ok(good));
  EXPECT_TRUE(udp_checksum_ok(good));
  ip.corrupt_checksum = true;
  auto bad_ip = udp_frame(StackHarness::eth_in(), ip, u, pattern(30));
  EXPECT_FALSE(ipv4_checksum_ok(bad_ip));
  EXPECT_TRUE(udp_checksum_ok(bad_ip));
  ip.corrupt_checksum = false;
  u.corrupt_checksum = true;
  auto bad_udp = udp_frame(StackHarness::eth_in(), ip, u, pattern(30));
  EXPECT_TRUE(ipv4_checksum_ok(bad_udp));
  EXPECT_FALSE(udp_checksum_ok(bad_udp));
  ip.pad = 10;
  ip.ttl = 0;
  ip.ihl = 6;
  auto odd = udp_frame(StackHarness::eth_in(), ip, UdpSpec{}, pattern(30));
  EXPECT_EQ(odd.size(), good.size() + 10);
  EXPECT_EQ(odd[14] & 0x0f, 6);
  EXPECT_EQ(odd[14 + wire::Ipv4View::kTtlOff], 0);
  EXPECT_EQ(load_be16(odd.data() + 14 + 2), 20 + 8 + 30);
}

TEST(Frames, VlanTagAndArpPadding) {
  wire::ArpRepr r{wire::ArpOp::kRequest, kPeerMac, kPeerIp, MacAddr{}, kOurIp};
  auto f = arp_frame(EthSpec{MacAddr::broadcast(), kPeerMac, {}, 0x0064}, ArpSpec{r});
  ASSERT_EQ(f.size(), 60u);
  EXPECT_EQ(load_be16(f.data() + 12), 0x8100);
  EXPECT_EQ(load_be16(f.data() + 14), 0x0064);
  EXPECT_EQ(load_be16(f.data() + 16), 0x0806);
  auto unpadded = arp_frame(EthSpec{MacAddr::broadcast(), kPeerMac}, ArpSpec{r}, false);
  EXPECT_EQ(unpadded.size(), 42u);
}

}  // namespace
}  // namespace ws::test
