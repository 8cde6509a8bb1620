// Per-interface counters: TCP and UDP checksum failures are attributed to the
// interface the datagram arrived on, whichever layer verified the checksum (UDP in
// the IPv4 input, TCP behind the transport interface, or the port's RX flags).
#include <gtest/gtest.h>

#include "stack/apps/udp_services.hpp"
#include "stack/core/bytes.hpp"
#include "stack/iface/tcp_transport.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

constexpr Ipv4Addr kSecondIp = Ipv4Addr::from_octets(10, 1, 0, 1);
constexpr Ipv4Addr kSecondPeer = Ipv4Addr::from_octets(10, 1, 0, 2);
constexpr MacAddr kSecondMac{{0x02, 0, 0, 0, 0, 0x77}};

// A 20-byte TCP SYN to port 7 whose checksum field holds `checksum` as given.
std::vector<uint8_t> tcp_syn(EthSpec eth, Ipv4Addr src, Ipv4Addr dst, uint16_t checksum) {
  std::vector<uint8_t> tcp(20, 0);
  store_be16(tcp.data(), 40000);
  store_be16(tcp.data() + 2, 7);
  store_be32(tcp.data() + 4, 1000);
  tcp[12] = 5 << 4;
  tcp[13] = 0x02;  // SYN
  store_be16(tcp.data() + 14, 65535);
  store_be16(tcp.data() + 16, checksum);
  Ipv4Spec ip = StackHarness::ip_in(src, dst);
  ip.protocol = 6;
  return ipv4_frame(eth, ip, tcp);
}

struct TwoInterfaces : ::testing::Test {
  void SetUp() override {
    InterfaceConfig c = default_interface();
    c.name = "test1";
    c.mac = kSecondMac;
    c.address = Ipv4Cidr{kSecondIp, 24};
    second = h.stack.add_interface(c, io2);
    h.stack.set_tcp(&transport);
    ASSERT_TRUE(sink.start(h.stack, h.now()));
  }
  void TearDown() override {
    sink.stop(h.now());
    tcp.shutdown_all(h.now());
  }
  void rx(uint16_t port, std::span<const uint8_t> f, RxMeta meta = {}) {
    meta.port = port;
    h.stack.receive(f, meta, h.now());
  }
  uint64_t errors(uint16_t port) const {
    return h.stack.interface_counters(port).l4_checksum_errors;
  }
  FakePacketIo io2;  // first: it must outlive the stack that sends through it
  StackHarness h;
  tcp::TcpStack tcp{h.stack, h.stack.drops(), tcp::TcpConfig{}};
  tcp::TcpTransport transport{tcp};
  UdpSinkService sink{"sink", 9};
  uint16_t second = 0;
};

TEST_F(TwoInterfaces, ChecksumFailuresCountOnTheirInterface) {
  UdpSpec good;
  good.dst_port = 9;
  UdpSpec bad = good;
  bad.corrupt_checksum = true;
  EthSpec to_second{kSecondMac, kPeerMac, {}, {}};
  auto ip2 = StackHarness::ip_in(kSecondPeer, kSecondIp);

  rx(h.port, udp_frame(StackHarness::eth_in(), StackHarness::ip_in(), good, pattern(10)));
  EXPECT_EQ(errors(h.port), 0u);
  EXPECT_EQ(sink.counters().rx_messages, 1u);

  rx(h.port, udp_frame(StackHarness::eth_in(), StackHarness::ip_in(), bad, pattern(10)));
  rx(second, udp_frame(to_second, ip2, bad, pattern(10)));
  rx(second, udp_frame(to_second, ip2, bad, pattern(10)));
  EXPECT_EQ(errors(h.port), 1u);
  EXPECT_EQ(errors(second), 2u);

  // TCP verifies in software (no RX flags) behind the transport interface.
  rx(second, tcp_syn(to_second, kSecondPeer, kSecondIp, 0x1234));
  EXPECT_EQ(h.drops(DropReason::kTcpBadChecksum), 1u);
  EXPECT_EQ(errors(second), 3u);
  // The port's verdict: bad L4 flags count too, for TCP and UDP alike.
  RxMeta flagged;
  flagged.l4 = RxMeta::Cksum::kBad;
  rx(h.port, tcp_syn(StackHarness::eth_in(), kPeerIp, kOurIp, 0), flagged);
  rx(h.port, udp_frame(StackHarness::eth_in(), StackHarness::ip_in(), good, pattern(3)), flagged);
  EXPECT_EQ(errors(h.port), 3u);
  EXPECT_EQ(errors(second), 3u);
  EXPECT_EQ(h.drops(DropReason::kTcpBadChecksum) + h.drops(DropReason::kUdpBadChecksum), 6u);

  // Other drops are not checksum failures.
  Ipv4Spec bad_ip = StackHarness::ip_in();
  bad_ip.corrupt_checksum = true;
  rx(h.port, udp_frame(StackHarness::eth_in(), bad_ip, good, pattern(3)));
  EXPECT_EQ(h.drops(DropReason::kIpv4BadChecksum), 1u);
  EXPECT_EQ(errors(h.port), 3u);
}

}  // namespace
}  // namespace ws::test
