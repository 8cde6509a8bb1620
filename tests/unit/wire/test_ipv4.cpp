#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "stack/core/checksum.hpp"
#include "stack/wire/ipv4.hpp"
#include "tests/unit/wire/captured_frames.hpp"

namespace ws::wire {
namespace {

namespace td = ws::testdata;

const Ipv4Addr kIpA = *Ipv4Addr::parse("10.99.0.1");
const Ipv4Addr kIpB = *Ipv4Addr::parse("10.99.0.2");

std::vector<uint8_t> l3(std::span<const uint8_t> frame) {
  auto s = td::l3_of(frame);
  return {s.begin(), s.end()};
}

TEST(Ipv4, CapturedEchoRequestFields) {
  auto ip = Ipv4View::parse(td::l3_of(td::kIcmpEchoRequest));
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->version(), 4);
  EXPECT_EQ(ip->ihl(), 5);
  EXPECT_EQ(ip->header_len(), 20u);
  EXPECT_EQ(ip->tos(), 0);
  EXPECT_EQ(ip->total_len(), 84);
  EXPECT_EQ(ip->ident(), 0x3c81);
  EXPECT_TRUE(ip->dont_fragment());
  EXPECT_FALSE(ip->more_fragments());
  EXPECT_EQ(ip->frag_offset(), 0u);
  EXPECT_FALSE(ip->is_fragment());
  EXPECT_EQ(ip->ttl(), 64);
  EXPECT_EQ(ip->protocol(), kIpProtoIcmp);
  EXPECT_EQ(ip->checksum(), 0xe95f);
  EXPECT_EQ(ip->src(), kIpA);
  EXPECT_EQ(ip->dst(), kIpB);
  EXPECT_EQ(ip->buffer_len(), 84u);
  EXPECT_EQ(ip->header().size(), 20u);
  EXPECT_EQ(internet_checksum(ip->header()), 0);
  EXPECT_EQ(ip->payload().size(), 64u);
  EXPECT_EQ(ip->payload().data(), td::kIcmpEchoRequest.data() + 34);
}

TEST(Ipv4, CapturedOtherPackets) {
  auto reply = Ipv4View::parse(td::l3_of(td::kIcmpEchoReply));
  ASSERT_TRUE(reply);
  EXPECT_FALSE(reply->dont_fragment());
  EXPECT_EQ(reply->ident(), 0x94db);
  EXPECT_EQ(reply->src(), kIpB);

  auto udp = Ipv4View::parse(td::l3_of(td::kUdpDnsQuery));
  ASSERT_TRUE(udp);
  EXPECT_EQ(udp->protocol(), kIpProtoUdp);
  EXPECT_EQ(udp->total_len(), 57);
  EXPECT_EQ(udp->payload().size(), 37u);

  auto tcp = Ipv4View::parse(td::l3_of(td::kTcpSynAck));
  ASSERT_TRUE(tcp);
  EXPECT_EQ(tcp->protocol(), kIpProtoTcp);
  EXPECT_EQ(tcp->ident(), 0);
  EXPECT_EQ(tcp->checksum(), 0x25f4);
  EXPECT_EQ(internet_checksum(tcp->header()), 0);
}

TEST(Ipv4, TruncatedAtEveryLength) {
  auto b = td::l3_of(td::kUdpDnsQuery);
  for (size_t n = 0; n <= b.size(); ++n) {
    auto ip = Ipv4View::parse(b.first(n));
    EXPECT_EQ(ip.has_value(), n >= Ipv4View::kMinHeaderLen) << n;
    // Past the fixed header the view parses; total_len then exceeds the buffer and
    // the input path drops the packet as ipv4_bad_total_length.
    if (ip) {
      EXPECT_EQ(ip->total_len() <= ip->buffer_len(), n == b.size()) << n;
    }
  }
}

TEST(Ipv4, BadVersionIsReported) {
  for (uint8_t v : {0, 1, 5, 6, 15}) {
    auto b = l3(td::kIcmpEchoRequest);
    b[0] = static_cast<uint8_t>((v << 4) | 5);
    auto ip = Ipv4View::parse(b);
    ASSERT_TRUE(ip);  // the view checks lengths only
    EXPECT_EQ(ip->version(), v);
    EXPECT_EQ(ip->ihl(), 5);
  }
}

TEST(Ipv4, BadIhlIsReported) {
  for (uint8_t ihl = 0; ihl < 16; ++ihl) {
    auto b = l3(td::kIcmpEchoRequest);
    b[0] = static_cast<uint8_t>(0x40 | ihl);
    auto ip = Ipv4View::parse(b);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->version(), 4);
    EXPECT_EQ(ip->ihl(), ihl);
    EXPECT_EQ(ip->header_len(), size_t{ihl} * 4);
    // What the input path checks: IHL >= 5 and the header inside the buffer.
    bool acceptable = ihl >= 5 && ip->header_len() <= ip->buffer_len();
    EXPECT_EQ(acceptable, ihl >= 5) << int{ihl};
  }
  // IHL 15 in a header-only buffer: 60 bytes claimed, 20 present.
  auto b = l3(td::kIcmpEchoRequest);
  b.resize(20);
  b[0] = 0x4f;
  auto ip = Ipv4View::parse(b);
  ASSERT_TRUE(ip);
  EXPECT_GT(ip->header_len(), ip->buffer_len());
}

TEST(Ipv4, HeaderWithOptions) {
  // IHL 6: one word of options (Router Alert, RFC 2113: 94 04 00 00).
  Ipv4Repr r{kIpA, kIpB, kIpProtoUdp, 1, 0, 7, true, false, 0, 8};
  std::vector<uint8_t> b(20);
  emit_ipv4(b.data(), r);
  b.insert(b.begin() + 20, {0x94, 0x04, 0x00, 0x00});
  b.resize(b.size() + 8, 0xab);
  b[0] = 0x46;
  store_be16(b.data() + 2, 32);
  store_be16(b.data() + 10, 0);
  store_be16(b.data() + 10, internet_checksum(std::span(b).first(24)));
  auto ip = Ipv4View::parse(b);
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->header_len(), 24u);
  EXPECT_EQ(ip->header().size(), 24u);
  EXPECT_EQ(internet_checksum(ip->header()), 0);
  EXPECT_EQ(ip->payload().size(), 8u);
  EXPECT_EQ(ip->payload()[0], 0xab);
}

TEST(Ipv4, EthernetPaddingIsOutsidePayload) {
  // A 57-byte datagram in a frame padded to 60 bytes + more trailing bytes.
  auto b = l3(td::kUdpDnsQuery);
  b.resize(b.size() + 13, 0);
  auto ip = Ipv4View::parse(b);
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->buffer_len(), 70u);
  EXPECT_EQ(ip->payload().size(), 37u);
}

TEST(Ipv4, FragmentFields) {
  auto b = l3(td::kIcmpEchoRequest);
  store_be16(b.data() + 6, 0x2000 | 185);  // MF, offset 185*8 = 1480
  auto ip = Ipv4View::parse(b);
  ASSERT_TRUE(ip);
  EXPECT_TRUE(ip->more_fragments());
  EXPECT_FALSE(ip->dont_fragment());
  EXPECT_EQ(ip->frag_offset(), 1480u);
  EXPECT_TRUE(ip->is_fragment());
  store_be16(b.data() + 6, 0x1fff);  // last fragment at the largest offset
  EXPECT_FALSE(Ipv4View::parse(b)->more_fragments());
  EXPECT_EQ(Ipv4View::parse(b)->frag_offset(), 0x1fffu * 8);
  EXPECT_TRUE(Ipv4View::parse(b)->is_fragment());
  store_be16(b.data() + 6, 0x8000);  // reserved bit alone: not a fragment
  EXPECT_FALSE(Ipv4View::parse(b)->is_fragment());
  EXPECT_FALSE(Ipv4View::parse(b)->dont_fragment());
}

TEST(Ipv4, EmitReproducesCapturedHeaders) {
  struct Case {
    std::span<const uint8_t> frame;
    Ipv4Repr r;
  };
  const Case cases[] = {
      {td::kIcmpEchoRequest, Ipv4Repr{kIpA, kIpB, kIpProtoIcmp, 64, 0, 0x3c81, true, false, 0, 64}},
      {td::kIcmpEchoReply, Ipv4Repr{kIpB, kIpA, kIpProtoIcmp, 64, 0, 0x94db, false, false, 0, 64}},
      {td::kUdpDnsQuery, Ipv4Repr{kIpA, kIpB, kIpProtoUdp, 64, 0, 0x84d2, true, false, 0, 37}},
      {td::kTcpSyn, Ipv4Repr{kIpA, kIpB, kIpProtoTcp, 64, 0, 0x7b94, true, false, 0, 40}},
      {td::kTcpSynAck, Ipv4Repr{kIpB, kIpA, kIpProtoTcp, 64, 0, 0x0000, true, false, 0, 40}},
  };
  for (const Case& c : cases) {
    std::array<uint8_t, 20> out{};
    emit_ipv4(out.data(), c.r);
    auto want = td::l3_of(c.frame).first(20);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), want.begin())) << "ident " << c.r.ident;
    emit_ipv4(out.data(), c.r, /*leave_checksum_zero=*/true);
    EXPECT_EQ(load_be16(out.data() + 10), 0);
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + 10, want.begin()));
    EXPECT_TRUE(std::equal(out.begin() + 12, out.end(), want.begin() + 12));
  }
}

TEST(Ipv4, EmitParseRoundTrip) {
  Ipv4Repr r;
  r.src = Ipv4Addr::from_octets(192, 0, 2, 1);
  r.dst = Ipv4Addr::from_octets(198, 51, 100, 255);
  r.protocol = 253;
  r.ttl = 1;
  r.tos = 0xb8;  // DSCP EF
  r.ident = 0xfffe;
  r.dont_fragment = false;
  r.more_fragments = true;
  r.frag_offset = 8 * 0x1234;
  r.payload_len = 1480;
  std::vector<uint8_t> buf(20 + r.payload_len, 0);
  emit_ipv4(buf.data(), r);
  auto ip = Ipv4View::parse(buf);
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->version(), 4);
  EXPECT_EQ(ip->header_len(), 20u);
  EXPECT_EQ(ip->src(), r.src);
  EXPECT_EQ(ip->dst(), r.dst);
  EXPECT_EQ(ip->protocol(), r.protocol);
  EXPECT_EQ(ip->ttl(), r.ttl);
  EXPECT_EQ(ip->tos(), r.tos);
  EXPECT_EQ(ip->ident(), r.ident);
  EXPECT_FALSE(ip->dont_fragment());
  EXPECT_TRUE(ip->more_fragments());
  EXPECT_EQ(ip->frag_offset(), r.frag_offset);
  EXPECT_EQ(ip->total_len(), 1500);
  EXPECT_EQ(ip->payload().size(), 1480u);
  EXPECT_EQ(internet_checksum(ip->header()), 0);
}

TEST(Ipv4, EmitOverwritesEveryHeaderByte) {
  std::array<uint8_t, 20> a, b;
  a.fill(0x00);
  b.fill(0xff);
  Ipv4Repr r{kIpA, kIpB, kIpProtoTcp, 64, 0, 1, true, false, 0, 100};
  emit_ipv4(a.data(), r);
  emit_ipv4(b.data(), r);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace ws::wire
