// ESP through the whole stack: two ws::Stacks on fake ports, each with an EspLayer, exchange
// UDP over ESP (every cipher, both modes, one frame and fragmented), and the inbound checks
// count what they refuse: replays, a wrong key, an unknown SPI, plaintext from a protected
// peer, a spent sequence space. Sizes: the MTU the stack reports leaves exactly the SA's
// overhead.
#include <gtest/gtest.h>

#include <cstring>

#include "stack/ipsec/esp.hpp"
#include "stack/ipsec/esp_layer.hpp"
#include "stack/wire/esp.hpp"
#include "tests/support/stack_harness.hpp"
#include "tests/support/temp_dir.hpp"

namespace ws::ipsec {
namespace {

using test::kOurIp;
using test::kPeerIp;

struct Side {
  explicit Side(bool first)
      : esp(),
        h(test::FakePacketIo::Options{.pool_size = 512, .data_room = 2048}, StackConfig{},
          iface(first)) {
    h.stack.set_ipsec(&esp);
  }
  static InterfaceConfig iface(bool first) {
    InterfaceConfig c = test::default_interface();
    if (!first) {
      c.mac = test::kPeerMac;
      c.address = Ipv4Cidr{kPeerIp, 24};
    }
    return c;
  }
  EspLayer esp;  // outlives the stack
  test::StackHarness h;
  ws::test::TempDir state;
};

std::vector<uint8_t> key_for(Cipher c, uint8_t seed) {
  std::vector<uint8_t> k(key_material_bytes(c));
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(seed * 13 + i);
  return k;
}

SaSpec sa(const char* name, Direction d, uint32_t spi, Ipv4Addr local, Ipv4Addr remote, Cipher c,
          Mode m, uint8_t key_seed) {
  SaSpec s;
  s.name = name;
  s.direction = d;
  s.spi = spi;
  s.mode = m;
  s.local = local;
  s.remote = remote;
  s.cipher = c;
  s.key = KeyMaterial(key_for(c, key_seed));
  return s;
}

// Side `us` sends with SPI out_spi (key out_seed) and receives SPI in_spi (key in_seed).
void configure(Side& s, Ipv4Addr us, Ipv4Addr peer, Cipher c, Mode m, uint32_t out_spi,
               uint8_t out_seed, uint32_t in_spi, uint8_t in_seed) {
  const SaSpec sas[] = {
      sa("out", Direction::outbound, out_spi, us, peer, c, m, out_seed),
      sa("in", Direction::inbound, in_spi, us, peer, c, m, in_seed),
  };
  PolicySpec p;
  p.remote = Ipv4Cidr{peer, 32};
  p.action = PolicyAction::protect;
  p.outbound_sa = "out";
  p.inbound_sa = "in";
  std::string err;
  std::vector<std::string> warnings;
  ASSERT_TRUE(s.esp.init(sas, std::span(&p, 1), s.state.path(), err, warnings)) << err;
  ASSERT_TRUE(warnings.empty()) << warnings[0];
}

// What a side sent, including CBC frames held for a burst.
std::vector<test::SentFrame> sent(Side& s) {
  s.h.stack.flush(s.h.now());
  return s.h.io.take_sent();
}

// Moves every frame each side sent to the other until both are quiet; returns the count.
size_t shuttle(Side& a, Side& b, std::vector<std::vector<uint8_t>>* a_to_b = nullptr) {
  size_t n = 0;
  for (int round = 0; round < 50; ++round) {
    auto fa = sent(a);
    auto fb = sent(b);
    if (fa.empty() && fb.empty()) break;
    for (auto& f : fa) {
      if (a_to_b) a_to_b->push_back(f.bytes);
      b.h.rx(f.bytes);
    }
    for (auto& f : fb) a.h.rx(f.bytes);
    n += fa.size() + fb.size();
  }
  return n;
}

struct Pair {
  Side a{true};
  Side b{false};
  std::vector<std::vector<uint8_t>> a_received;
  void setup(Cipher c, Mode m) {
    configure(a, kOurIp, kPeerIp, c, m, 0x1001, 1, 0x2001, 2);
    configure(b, kPeerIp, kOurIp, c, m, 0x2001, 2, 0x1001, 1);
    a.h.learn(kPeerIp, test::kPeerMac);
    // B's harness speaks as 10.0.0.1: teach it A with an ARP reply to B's own addresses.
    wire::ArpRepr r{wire::ArpOp::kReply, test::kOurMac, kOurIp, test::kPeerMac, kPeerIp};
    b.h.rx(test::arp_frame(test::EthSpec{test::kPeerMac, test::kOurMac, {}, {}}, test::ArpSpec{r}));
    b.h.io.clear_sent();
    b.h.stack.udp_bind(7, [](UdpSocket& s, const UdpDatagram& d, Instant now) {
      s.send_to(d.src, d.payload, now);
    });
    bind_a();
  }
  void bind_a() {
    sock = a.h.stack.udp_bind(5000, [this](UdpSocket&, const UdpDatagram& d, Instant) {
      a_received.emplace_back(d.payload.begin(), d.payload.end());
    });
  }
  bool send(std::span<const uint8_t> payload, uint16_t port = 7) {
    return sock->send_to(Endpoint{kPeerIp, port}, payload, a.h.now());
  }
  UdpSocket* sock = nullptr;
};

class StackEsp : public ::testing::TestWithParam<std::tuple<Cipher, Mode>> {};

TEST_P(StackEsp, UdpEchoOverEspEveryDatagramChecked) {
  auto [cipher, mode] = GetParam();
  Pair p;
  p.setup(cipher, mode);
  std::vector<size_t> sizes = {1, 2, 3, 15, 16, 17, 100, 1000};
  const uint32_t mtu = p.a.h.stack.mtu_to(kPeerIp);
  sizes.push_back(mtu - 28);      // the largest single frame
  sizes.push_back(mtu - 28 + 1);  // the smallest fragmented one
  sizes.push_back(4000);
  std::vector<std::vector<uint8_t>> wire;
  for (size_t n : sizes) {
    auto payload = test::pattern(n, static_cast<uint8_t>(n));
    ASSERT_TRUE(p.send(payload)) << n;
    shuttle(p.a, p.b, &wire);
    ASSERT_EQ(p.a_received.size(), 1u) << n;
    EXPECT_EQ(p.a_received[0], payload) << n;
    p.a_received.clear();
  }
  // Everything on the wire was ESP, no frame beyond the MTU, no plaintext pattern visible.
  size_t ipv4 = 0;
  for (const auto& f : wire) {
    ASSERT_GE(f.size(), 34u);
    if (load_be16(f.data() + 12) != 0x0800) continue;  // ARP
    ++ipv4;
    EXPECT_EQ(f[14 + 9], wire::kIpProtoEsp);
    EXPECT_LE(f.size(), 1514u);
  }
  const auto& out = *p.a.esp.outbound()[0];
  const auto& in = *p.b.esp.inbound()[0];
  EXPECT_EQ(in.counters.packets, out.counters.packets);
  EXPECT_EQ(out.counters.packets, sizes.size());
  EXPECT_GT(ipv4, sizes.size());  // the fragmented ones took several frames
  for (Side* s : {&p.a, &p.b}) {
    for (size_t r = 0; r < kDropReasonCount; ++r) {
      const auto reason = static_cast<DropReason>(r);
      EXPECT_EQ(s->h.drops(reason), 0u) << drop_reason_name(reason);
    }
  }
}

TEST_P(StackEsp, TheMtuLeavesExactlyTheSasOverhead) {
  auto [cipher, mode] = GetParam();
  Pair p;
  p.setup(cipher, mode);
  const uint32_t mtu = p.a.h.stack.mtu_to(kPeerIp);
  const uint32_t inner = mode == Mode::tunnel ? mtu : mtu - 20;
  EXPECT_LE(20 + esp_len(cipher, inner), 1500u);
  EXPECT_GT(20 + esp_len(cipher, inner + 1), 1500u);
  // The largest datagram the reported MTU allows leaves in one frame of at most 1514 bytes.
  auto payload = test::pattern(mtu - 28);
  ASSERT_TRUE(p.send(payload));
  auto frames = sent(p.a);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_LE(frames[0].bytes.size(), 1514u);
  EXPECT_GT(frames[0].bytes.size(), 1514u - pad_block(cipher) - 1);
}

INSTANTIATE_TEST_SUITE_P(CiphersAndModes, StackEsp,
                         ::testing::Combine(::testing::Values(Cipher::aes_gcm_128,
                                                              Cipher::aes_gcm_256,
                                                              Cipher::aes_cbc_128_hmac_sha256,
                                                              Cipher::aes_cbc_256_hmac_sha256),
                                            ::testing::Values(Mode::transport, Mode::tunnel)),
                         [](const auto& i) {
                           std::string s(to_string(std::get<0>(i.param)));
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s + "_" + std::string(to_string(std::get<1>(i.param)));
                         });

// RFC 1191 through ESP: a router's "fragmentation needed" quoting one of our ESP packets
// lowers the SA's path MTU and with it the MTU the stack reports for the inner traffic.
TEST(StackEspPmtu, FragNeededForTheOuterPacketShrinksTheInnerMtu) {
  Pair p;
  p.setup(Cipher::aes_gcm_128, Mode::tunnel);
  const uint32_t before = p.a.h.stack.mtu_to(kPeerIp);
  ASSERT_TRUE(p.send(test::pattern(100)));
  auto frames = sent(p.a);
  ASSERT_EQ(frames.size(), 1u);
  std::vector<uint8_t> quote(frames[0].bytes.begin() + 14, frames[0].bytes.begin() + 14 + 28);
  const Ipv4Addr router = Ipv4Addr::from_octets(10, 0, 0, 9);
  auto frag_needed = [&](uint16_t mtu, std::vector<uint8_t> q) {
    test::IcmpSpec icmp;
    icmp.type = wire::kIcmpDestUnreachable;
    icmp.code = wire::kIcmpCodeFragNeeded;
    icmp.rest = mtu;
    p.a.h.rx(test::icmp_frame(test::StackHarness::eth_in(),
                              test::StackHarness::ip_in(router, kOurIp), icmp, q));
  };
  frag_needed(1400, quote);
  const uint32_t after = p.a.h.stack.mtu_to(kPeerIp);
  EXPECT_EQ(after, p.a.esp.outbound()[0]->inner_mtu(1400));
  EXPECT_LT(after, before);
  frag_needed(1450, quote);  // not below what the SA uses: ignored
  EXPECT_EQ(p.a.h.stack.mtu_to(kPeerIp), after);
  frag_needed(500, quote);  // below 576: ignored
  EXPECT_EQ(p.a.h.stack.mtu_to(kPeerIp), after);
  auto other = quote;
  store_be32(other.data() + 20, 0x9999);  // not our SPI
  frag_needed(1200, other);
  EXPECT_EQ(p.a.h.stack.mtu_to(kPeerIp), after);
  // A datagram sized for the new MTU leaves in one frame that fits the 1400-byte path.
  ASSERT_TRUE(p.send(test::pattern(after - 28)));
  frames = sent(p.a);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_LE(frames[0].bytes.size(), 14u + 1400);
}

// CBC + HMAC frames wait for one burst of jobs: none leaves before flush() (or a full burst),
// then all leave in sequence order, each sealed correctly (the peer opens every one).
TEST(StackEspBurst, CbcFramesLeaveTogetherInOrder) {
  Pair p;
  p.setup(Cipher::aes_cbc_256_hmac_sha256, Mode::transport);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(p.send(test::pattern(100 + i)));
  EXPECT_EQ(p.a.h.io.sent_count(), 0u);
  auto frames = sent(p.a);
  ASSERT_EQ(frames.size(), 5u);
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(load_be32(frames[i].bytes.data() + 34 + 4), i + 1) << i;
    p.b.h.rx(frames[i].bytes);
  }
  p.b.h.stack.flush(p.b.h.now());
  EXPECT_EQ(p.b.esp.inbound()[0]->counters.packets, 5u);
  // A full burst goes without waiting for flush().
  for (size_t i = 0; i < CbcBurst::kMax; ++i) ASSERT_TRUE(p.send(test::pattern(10)));
  EXPECT_EQ(p.a.h.io.sent_count(), CbcBurst::kMax);
}

// Received CBC + HMAC packets are verified and decrypted as one burst of jobs: nothing is
// delivered before flush() (or a full burst), then every one in arrival order; a copy of a
// packet in the same burst passes the window check before decryption and is refused after.
TEST(StackEspBurst, CbcReceivedPacketsOpenTogetherInOrder) {
  Pair p;
  p.setup(Cipher::aes_cbc_128_hmac_sha256, Mode::tunnel);
  std::vector<std::vector<uint8_t>> got;
  p.b.h.stack.udp_bind(9, [&](UdpSocket&, const UdpDatagram& d, Instant) {
    got.emplace_back(d.payload.begin(), d.payload.end());
  });
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < 6; ++i) {
    payloads.push_back(test::pattern(40 + 200 * i, static_cast<uint8_t>(i)));
    ASSERT_TRUE(p.send(payloads.back(), 9));
  }
  auto frames = sent(p.a);
  ASSERT_EQ(frames.size(), 6u);
  for (const auto& f : frames) p.b.h.rx(f.bytes);
  p.b.h.rx(frames[2].bytes);  // a duplicate within the burst
  EXPECT_TRUE(got.empty());
  p.b.h.stack.flush(p.b.h.now());
  EXPECT_EQ(got, payloads);
  const auto& in = *p.b.esp.inbound()[0];
  EXPECT_EQ(in.counters.packets, 6u);
  EXPECT_EQ(in.counters.get(SaError::replayed), 1u);
  // A full burst opens without waiting for flush().
  got.clear();
  for (size_t i = 0; i < CbcRxBurst::kMax; ++i) ASSERT_TRUE(p.send(test::pattern(10), 9));
  for (const auto& f : sent(p.a)) p.b.h.rx(f.bytes);
  EXPECT_EQ(got.size(), CbcRxBurst::kMax);
}

TEST(StackEspRefusals, ReplayedPacketsAreCountedAndNotDelivered) {
  Pair p;
  p.setup(Cipher::aes_gcm_128, Mode::transport);
  auto payload = test::pattern(50);
  ASSERT_TRUE(p.send(payload));
  auto frames = sent(p.a);
  ASSERT_EQ(frames.size(), 1u);
  p.b.h.rx(frames[0].bytes);
  p.b.h.rx(frames[0].bytes);  // a replay
  p.b.h.rx(frames[0].bytes);
  shuttle(p.a, p.b);
  EXPECT_EQ(p.a_received.size(), 1u);  // one echo
  const auto& in = *p.b.esp.inbound()[0];
  EXPECT_EQ(in.counters.get(SaError::replayed), 2u);
  EXPECT_EQ(p.b.h.drops(DropReason::kIpsecSaError), 2u);
}

TEST(StackEspRefusals, AWrongKeyFailsAuthenticationAndDeliversNothing) {
  Pair p;
  configure(p.a, kOurIp, kPeerIp, Cipher::aes_cbc_128_hmac_sha256, Mode::transport, 0x1001, 1,
            0x2001, 2);
  configure(p.b, kPeerIp, kOurIp, Cipher::aes_cbc_128_hmac_sha256, Mode::transport, 0x2001, 2,
            0x1001, 9);  // not the key A sends with
  p.a.h.learn(kPeerIp, test::kPeerMac);
  bool delivered = false;
  p.b.h.stack.udp_bind(7, [&](UdpSocket&, const UdpDatagram&, Instant) { delivered = true; });
  p.bind_a();
  auto payload = test::pattern(64);
  ASSERT_TRUE(p.send(payload));
  for (auto& f : sent(p.a)) p.b.h.rx(f.bytes);
  p.b.h.stack.flush(p.b.h.now());
  EXPECT_FALSE(delivered);
  EXPECT_EQ(p.b.esp.inbound()[0]->counters.get(SaError::auth_failed), 1u);
  EXPECT_EQ(p.b.esp.inbound()[0]->counters.packets, 0u);
}

TEST(StackEspRefusals, UnknownSpiAndPlaintextFromAProtectedPeer) {
  Pair p;
  p.setup(Cipher::aes_gcm_256, Mode::tunnel);
  // A plaintext datagram from the protected peer.
  test::UdpSpec udp;
  udp.dst_port = 5000;
  auto plain = test::udp_frame(test::StackHarness::eth_in(), test::StackHarness::ip_in(), udp,
                               test::pattern(20));
  p.a.h.rx(plain);
  EXPECT_TRUE(p.a_received.empty());
  EXPECT_EQ(p.a.h.drops(DropReason::kIpsecPolicy), 1u);
  // ESP with an SPI nobody configured.
  std::vector<uint8_t> esp(64, 0);
  store_be32(esp.data(), 0x7777);
  store_be32(esp.data() + 4, 1);
  test::Ipv4Spec ip = test::StackHarness::ip_in();
  ip.protocol = wire::kIpProtoEsp;
  p.a.h.rx(test::ipv4_frame(test::StackHarness::eth_in(), ip, esp));
  EXPECT_EQ(p.a.h.drops(DropReason::kIpsecNoSa), 1u);
  // Too short to hold an ESP header.
  p.a.h.rx(test::ipv4_frame(test::StackHarness::eth_in(), ip, std::span(esp).first(5)));
  EXPECT_EQ(p.a.h.drops(DropReason::kIpsecMalformed), 1u);
}

TEST(StackEspRefusals, ASpentSequenceSpaceStopsSending) {
  Pair p;
  // The record says only one number is left before 2^32.
  p.a.state.write("out-00001001-10.0.0.2.seq", "wirespeed esp sequence v1\nnext 4294967295\n");
  p.setup(Cipher::aes_gcm_128, Mode::transport);
  auto payload = test::pattern(10);
  ASSERT_TRUE(p.send(payload));
  ASSERT_TRUE(p.send(payload));
  ASSERT_TRUE(p.send(payload));
  auto frames = sent(p.a);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(load_be32(frames[0].bytes.data() + 34 + 4), 0xffffffffu);
  const auto& out = *p.a.esp.outbound()[0];
  EXPECT_EQ(out.counters.get(SaError::sequence_exhausted), 2u);
  EXPECT_EQ(p.a.h.drops(DropReason::kIpsecSaError), 2u);
}

TEST(StackEspRefusals, PortBypassAheadOfProtectSendsPlaintext) {
  Side a{true};
  const SaSpec sas[] = {
      sa("out", Direction::outbound, 0x1001, kOurIp, kPeerIp, Cipher::aes_gcm_128, Mode::transport,
         1),
      sa("in", Direction::inbound, 0x2001, kOurIp, kPeerIp, Cipher::aes_gcm_128, Mode::transport,
         2),
  };
  PolicySpec bypass;
  bypass.remote = Ipv4Cidr{kPeerIp, 32};
  bypass.protocol = wire::kIpProtoUdp;
  bypass.remote_port = 53;
  bypass.action = PolicyAction::bypass;
  PolicySpec protect;
  protect.remote = Ipv4Cidr{kPeerIp, 32};
  protect.action = PolicyAction::protect;
  protect.outbound_sa = "out";
  protect.inbound_sa = "in";
  const PolicySpec policies[] = {bypass, protect};
  std::string err;
  std::vector<std::string> warnings;
  ASSERT_TRUE(a.esp.init(sas, policies, a.state.path(), err, warnings)) << err;
  a.h.learn(kPeerIp, test::kPeerMac);
  UdpSocket* sock = a.h.stack.udp_bind(5000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  auto payload = test::pattern(30);
  ASSERT_TRUE(sock->send_to(Endpoint{kPeerIp, 53}, payload, a.h.now()));
  ASSERT_TRUE(sock->send_to(Endpoint{kPeerIp, 54}, payload, a.h.now()));
  auto frames = sent(a);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].bytes[14 + 9], wire::kIpProtoUdp);
  EXPECT_TRUE(test::udp_checksum_ok(frames[0].bytes));
  EXPECT_EQ(frames[0].bytes.size(), 14u + 20 + 8 + 30);
  EXPECT_EQ(frames[1].bytes[14 + 9], wire::kIpProtoEsp);
}

}  // namespace
}  // namespace ws::ipsec
