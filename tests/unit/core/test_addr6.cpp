// Ipv6Addr and Ipv6Cidr: RFC 4291 text input, RFC 5952 text output, predicates and
// the derived multicast addresses.
#include <gtest/gtest.h>

#include <string>

#include "stack/core/addr.hpp"

namespace ws {
namespace {

TEST(Ipv6Addr, ParseAndCanonicalText) {
  const std::pair<const char*, const char*> cases[] = {
      {"2001:db8::1", "2001:db8::1"},
      {"2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"},
      {"::", "::"},
      {"::1", "::1"},
      {"fe80::", "fe80::"},
      {"1:0:0:2:0:0:0:3", "1:0:0:2::3"},                 // the longest run is compressed
      {"1:0:0:2:0:0:3:4", "1::2:0:0:3:4"},               // the first of two equal runs
      {"2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"},  // one zero group stays
      {"ff02::1:ff00:1", "ff02::1:ff00:1"},
  };
  for (const auto& [in, out] : cases) {
    auto a = Ipv6Addr::parse(in);
    ASSERT_TRUE(a) << in;
    EXPECT_EQ(a->to_string(), out) << in;
    EXPECT_EQ(Ipv6Addr::parse(a->to_string()), a) << in;
  }
  auto a = Ipv6Addr::parse("2001:db8::102:304");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->b[0], 0x20);
  EXPECT_EQ(a->b[1], 0x01);
  EXPECT_EQ(a->b[3], 0xb8);
  EXPECT_EQ(a->b[12], 1);
  EXPECT_EQ(a->b[15], 4);
}

TEST(Ipv6Addr, ParseRejects) {
  for (const char* s : {"", ":", ":::", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1::2::3",
                        "12345::", "1:", ":1", "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8",
                        "g::", "::ffff:1.2.3.4", "10.0.0.1", "2001:db8::1/64", " ::1", "::1 "}) {
    EXPECT_FALSE(Ipv6Addr::parse(s)) << s;
  }
  EXPECT_TRUE(Ipv6Addr::parse("1:2:3:4:5:6:7::"));  // "::" for exactly one group
  EXPECT_TRUE(Ipv6Addr::parse("::2:3:4:5:6:7:8"));
}

TEST(Ipv6Addr, Predicates) {
  EXPECT_TRUE(Ipv6Addr::parse("::")->is_unspecified());
  EXPECT_TRUE(Ipv6Addr::parse("::1")->is_loopback());
  EXPECT_FALSE(Ipv6Addr::parse("::2")->is_loopback());
  EXPECT_TRUE(Ipv6Addr::parse("fe80::1")->is_link_local());
  EXPECT_TRUE(Ipv6Addr::parse("febf::1")->is_link_local());
  EXPECT_FALSE(Ipv6Addr::parse("fec0::1")->is_link_local());
  EXPECT_TRUE(Ipv6Addr::parse("ff02::1")->is_multicast());
  EXPECT_TRUE(Ipv6Addr::parse("::ffff:a00:1")->is_v4_mapped());
  EXPECT_EQ(Ipv6Addr::all_nodes(), *Ipv6Addr::parse("ff02::1"));
  EXPECT_EQ(Ipv6Addr::all_routers(), *Ipv6Addr::parse("ff02::2"));
}

TEST(Ipv6Addr, SolicitedNodeAndMulticastMac) {
  // RFC 4291 2.7.1: ff02::1:ff and the low 24 bits; RFC 2464 7: 33:33 and the low 32.
  auto a = *Ipv6Addr::parse("2001:db8::aa:bbcc:ddee");
  EXPECT_EQ(a.solicited_node().to_string(), "ff02::1:ffcc:ddee");
  EXPECT_TRUE(a.solicited_node().is_solicited_node());
  EXPECT_FALSE(Ipv6Addr::all_nodes().is_solicited_node());
  EXPECT_FALSE(Ipv6Addr::parse("ff02::1:fe00:1")->is_solicited_node());
  EXPECT_EQ(a.solicited_node().multicast_mac().to_string(), "33:33:ff:cc:dd:ee");
  EXPECT_EQ(Ipv6Addr::all_nodes().multicast_mac().to_string(), "33:33:00:00:00:01");
}

TEST(Ipv6Cidr, ParseContainsFormat) {
  auto c = Ipv6Cidr::parse("2001:db8:1::5/48");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->prefix_len, 48);
  EXPECT_EQ(c->to_string(), "2001:db8:1::5/48");
  EXPECT_TRUE(c->contains(*Ipv6Addr::parse("2001:db8:1:ffff::9")));
  EXPECT_FALSE(c->contains(*Ipv6Addr::parse("2001:db8:2::5")));
  auto odd = Ipv6Cidr::parse("2001:db8::/33");
  ASSERT_TRUE(odd);
  EXPECT_TRUE(odd->contains(*Ipv6Addr::parse("2001:db8:7fff::")));
  EXPECT_FALSE(odd->contains(*Ipv6Addr::parse("2001:db8:8000::")));
  EXPECT_TRUE(Ipv6Cidr::parse("::/0")->contains(*Ipv6Addr::parse("ff02::1")));
  for (const char* s : {"2001:db8::1", "2001:db8::1/129", "2001:db8::1/", "2001:db8::1/064", "/64",
                        "10.0.0.1/24"}) {
    EXPECT_FALSE(Ipv6Cidr::parse(s)) << s;
  }
}

// The word-wise contains() against a bit-by-bit reference, at every prefix length, for
// addresses that differ from the prefix in one bit each (and not at all).
TEST(Ipv6Cidr, ContainsAgreesWithBitwiseReferenceAtEveryLength) {
  const Ipv6Addr base = *Ipv6Addr::parse("2001:db8:a5a5:5a5a:1234:5678:9abc:def0");
  auto bit = [](const Ipv6Addr& a, unsigned i) { return (a.b[i / 8] >> (7 - i % 8)) & 1; };
  for (unsigned len = 0; len <= 128; ++len) {
    const Ipv6Cidr c{base, static_cast<uint8_t>(len)};
    for (unsigned flip = 0; flip <= 128; ++flip) {
      Ipv6Addr a = base;
      if (flip < 128) a.b[flip / 8] ^= static_cast<uint8_t>(0x80 >> (flip % 8));
      bool want = true;
      for (unsigned i = 0; i < len; ++i) want = want && bit(a, i) == bit(base, i);
      EXPECT_EQ(c.contains(a), want) << "prefix " << len << ", bit " << flip;
    }
  }
  // The same code at compile time (the byte loops of half()).
  static_assert(Ipv6Cidr{Ipv6Addr::all_nodes(), 16}.contains(Ipv6Addr{{0xff, 0x02, 9}}));
  static_assert(Ipv6Cidr{Ipv6Addr::all_nodes(), 15}.contains(Ipv6Addr{{0xff, 0x03}}));
  static_assert(!Ipv6Cidr{Ipv6Addr::all_nodes(), 16}.contains(Ipv6Addr{{0xff, 0x03}}));
}

TEST(Ipv6Addr, HalvesAndEquality) {
  const Ipv6Addr a = *Ipv6Addr::parse("102:304:506:708:90a:b0c:d0e:f10");
  EXPECT_EQ(a.half(0), 0x0102030405060708ull);
  EXPECT_EQ(a.half(1), 0x090a0b0c0d0e0f10ull);
  EXPECT_EQ(Ipv6Addr::from_halves(a.half(0), a.half(1)), a);
  EXPECT_EQ(IpAddr(a).v6(), a);
  for (size_t i = 0; i < 16; ++i) {
    Ipv6Addr b = a;
    b.b[i] ^= 1;
    EXPECT_NE(a, b) << i;
  }
  static_assert(Ipv6Addr::from_halves(0xff02000000000000ull, 1) == Ipv6Addr::all_nodes());
  EXPECT_FALSE(Ipv6Addr::parse("::1")->is_unspecified());
  EXPECT_FALSE(Ipv6Addr::parse("1::1")->is_loopback());
  EXPECT_FALSE(Ipv6Addr::parse("::1:0:0:1")->is_loopback());
  EXPECT_FALSE(Ipv6Addr::parse("::fffe:a00:1")->is_v4_mapped());
  EXPECT_FALSE(Ipv6Addr::parse("::1:ffff:a00:1")->is_v4_mapped());
  EXPECT_FALSE(Ipv6Addr::parse("1::ffff:a00:1")->is_v4_mapped());
}

}  // namespace
}  // namespace ws
