#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "stack/core/addr.hpp"

namespace ws {
namespace {

using namespace std::string_view_literals;

// ---- MacAddr ----

TEST(MacAddr, ParseAndFormat) {
  auto m = MacAddr::parse("02:00:00:00:00:01");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->b, (std::array<uint8_t, 6>{0x02, 0, 0, 0, 0, 0x01}));
  EXPECT_EQ(m->to_string(), "02:00:00:00:00:01");

  auto u = MacAddr::parse("AA:bb:Cc:dD:0e:F0");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->b, (std::array<uint8_t, 6>{0xaa, 0xbb, 0xcc, 0xdd, 0x0e, 0xf0}));
  EXPECT_EQ(u->to_string(), "aa:bb:cc:dd:0e:f0");  // always lower case
}

TEST(MacAddr, ParseRejects) {
  for (std::string_view s : {
           ""sv,
           "02:00:00:00:00"sv,
           "02:00:00:00:00:01:02"sv,
           "02:00:00:00:00:01:"sv,
           "02-00-00-00-00-01"sv,
           "02.00.00.00.00.01"sv,
           "0200.0000.0001"sv,
           "020000000001"sv,
           "0g:00:00:00:00:01"sv,
           "02:00:00:00:00:0x"sv,
           "2:00:00:00:00:01"sv,
           " 2:00:00:00:00:01"sv,
           "02:00:00:00:00:01 "sv,
           "02:00:00:00:00:1"sv,
           "02:00:00:00:00:001"sv,
           "02:00:00:00:00::1"sv,
           "02::0:00:00:00:01"sv,
           "+2:00:00:00:00:01"sv,
           "02:00:00:00:00:0\0"sv,
       }) {
    EXPECT_FALSE(MacAddr::parse(s)) << "accepted \"" << s << "\"";
  }
}

TEST(MacAddr, Predicates) {
  EXPECT_TRUE(MacAddr::broadcast().is_broadcast());
  EXPECT_TRUE(MacAddr::broadcast().is_multicast());
  EXPECT_FALSE(MacAddr::broadcast().is_zero());
  EXPECT_TRUE(MacAddr{}.is_zero());
  EXPECT_FALSE(MacAddr{}.is_multicast());
  EXPECT_TRUE(MacAddr::parse("01:00:5e:00:00:01")->is_multicast());
  EXPECT_FALSE(MacAddr::parse("01:00:5e:00:00:01")->is_broadcast());
  EXPECT_TRUE(MacAddr::parse("33:33:00:00:00:01")->is_multicast());
  EXPECT_FALSE(MacAddr::parse("02:00:00:00:00:01")->is_multicast());  // locally administered
  EXPECT_FALSE(MacAddr::parse("ff:ff:ff:ff:ff:fe")->is_broadcast());
  EXPECT_FALSE(MacAddr::parse("00:00:00:00:00:01")->is_zero());
}

TEST(MacAddr, BytesRoundTripAndOrdering) {
  const uint8_t raw[8] = {0x99, 0x36, 0x52, 0xa6, 0xa7, 0xbf, 0x74, 0x99};
  MacAddr m = MacAddr::from_bytes(raw + 1);
  EXPECT_EQ(m.to_string(), "36:52:a6:a7:bf:74");
  uint8_t out[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  m.to_bytes(out + 1);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[7], 0);
  EXPECT_EQ(MacAddr::from_bytes(out + 1), m);
  EXPECT_LT(*MacAddr::parse("00:00:00:00:00:ff"), *MacAddr::parse("00:00:00:00:01:00"));
}

// ---- Ipv4Addr ----

TEST(Ipv4Addr, ParseAccepts) {
  struct Case {
    std::string_view s;
    uint32_t v;
  };
  for (const Case& c : {
           Case{"0.0.0.0", 0},
           Case{"255.255.255.255", 0xffffffffu},
           Case{"10.77.0.1", 0x0a4d0001u},
           Case{"1.2.3.4", 0x01020304u},
           Case{"192.168.100.200", 0xc0a864c8u},
           Case{"127.0.0.1", 0x7f000001u},
           Case{"224.0.0.251", 0xe00000fbu},
           Case{"100.0.10.0", 0x64000a00u},
       }) {
    auto a = Ipv4Addr::parse(c.s);
    ASSERT_TRUE(a) << c.s;
    EXPECT_EQ(a->v, c.v) << c.s;
    EXPECT_EQ(a->to_string(), c.s);  // canonical form round-trips
  }
}

TEST(Ipv4Addr, ParseRejects) {
  for (std::string_view s : {
           ""sv,
           "1"sv,
           "1.2"sv,
           "1.2.3"sv,
           "1.2.3."sv,
           ".1.2.3"sv,
           "1.2.3.4."sv,
           "1.2.3.4.5"sv,
           "1..2.3"sv,
           "...."sv,
           "..."sv,
           "256.0.0.1"sv,
           "1.2.3.256"sv,
           "1.2.300.4"sv,
           "1.2.3.99999999999"sv,
           "4294967296.0.0.0"sv,
           "16909060"sv,  // inet_aton's single-number form
           "01.2.3.4"sv,  // leading zeros: octal ambiguity
           "1.2.3.04"sv,
           "1.2.3.00"sv,
           "1.02.3.4"sv,
           "0x1.2.3.4"sv,
           "a.b.c.d"sv,
           "1.2.3.4a"sv,
           " 1.2.3.4"sv,
           "1.2.3.4 "sv,
           "1.2. 3.4"sv,
           "+1.2.3.4"sv,
           "1.2.3.-4"sv,
           "1.2.3.4/24"sv,
           "1.2.3.4:80"sv,
           "1.2.3.4\0"sv,
           "::1"sv,
       }) {
    EXPECT_FALSE(Ipv4Addr::parse(s)) << "accepted \"" << s << "\"";
  }
}

TEST(Ipv4Addr, OctetsAndPredicates) {
  EXPECT_EQ(Ipv4Addr::from_octets(10, 99, 0, 2).v, 0x0a630002u);
  EXPECT_TRUE(Ipv4Addr::any().is_any());
  EXPECT_TRUE(Ipv4Addr::broadcast().is_broadcast());
  EXPECT_TRUE(Ipv4Addr::from_octets(224, 0, 0, 1).is_multicast());
  EXPECT_TRUE(Ipv4Addr::from_octets(239, 255, 255, 255).is_multicast());
  EXPECT_FALSE(Ipv4Addr::from_octets(223, 255, 255, 255).is_multicast());
  EXPECT_FALSE(Ipv4Addr::from_octets(240, 0, 0, 0).is_multicast());
  EXPECT_TRUE(Ipv4Addr::from_octets(127, 1, 2, 3).is_loopback());
  EXPECT_FALSE(Ipv4Addr::from_octets(128, 0, 0, 1).is_loopback());
  EXPECT_LT(Ipv4Addr::from_octets(9, 255, 255, 255), Ipv4Addr::from_octets(10, 0, 0, 0));
}

TEST(Ipv4Addr, ToStringOfEveryOctetValue) {
  for (uint32_t o = 0; o < 256; ++o) {
    Ipv4Addr a{(o << 24) | (o << 16) | ((255 - o) << 8) | o};
    auto back = Ipv4Addr::parse(a.to_string());
    ASSERT_TRUE(back) << a.to_string();
    EXPECT_EQ(*back, a);
  }
}

// ---- Ipv4Cidr ----

TEST(Ipv4Cidr, ParseAccepts) {
  auto c = Ipv4Cidr::parse("10.77.0.1/24");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->addr, Ipv4Addr::from_octets(10, 77, 0, 1));  // host bits are kept
  EXPECT_EQ(c->prefix_len, 24);
  EXPECT_EQ(c->to_string(), "10.77.0.1/24");
  EXPECT_EQ(c->mask(), 0xffffff00u);
  EXPECT_EQ(c->network(), Ipv4Addr::from_octets(10, 77, 0, 0));
  EXPECT_EQ(c->directed_broadcast(), Ipv4Addr::from_octets(10, 77, 0, 255));
  EXPECT_TRUE(c->contains(Ipv4Addr::from_octets(10, 77, 0, 200)));
  EXPECT_FALSE(c->contains(Ipv4Addr::from_octets(10, 77, 1, 1)));

  auto all = Ipv4Cidr::parse("0.0.0.0/0");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->mask(), 0u);
  EXPECT_TRUE(all->contains(Ipv4Addr::broadcast()));
  EXPECT_EQ(all->directed_broadcast(), Ipv4Addr::broadcast());

  auto host = Ipv4Cidr::parse("1.2.3.4/32");
  ASSERT_TRUE(host);
  EXPECT_EQ(host->mask(), 0xffffffffu);
  EXPECT_TRUE(host->contains(Ipv4Addr::from_octets(1, 2, 3, 4)));
  EXPECT_FALSE(host->contains(Ipv4Addr::from_octets(1, 2, 3, 5)));
  EXPECT_EQ(host->directed_broadcast(), host->addr);
}

TEST(Ipv4Cidr, MaskForEveryPrefixLength) {
  for (uint8_t len = 0; len <= 32; ++len) {
    Ipv4Cidr c{Ipv4Addr::broadcast(), len};
    uint32_t m = c.mask();
    EXPECT_EQ(__builtin_popcount(m), len);
    uint32_t host = ~m;
    EXPECT_EQ(host & (host + 1), 0u) << "mask not contiguous from the top for /" << int{len};
    EXPECT_EQ(c.network().v, m);
    auto back = Ipv4Cidr::parse("255.255.255.255/" + std::to_string(len));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->prefix_len, len);
  }
}

TEST(Ipv4Cidr, ParseRejects) {
  for (std::string_view s : {
           ""sv,
           "1.2.3.4"sv,
           "1.2.3.4/"sv,
           "/24"sv,
           "1.2.3/24"sv,
           "1.2.3.4/33"sv,
           "1.2.3.4/4294967296"sv,
           "1.2.3.4/024"sv,
           "1.2.3.4/00"sv,
           "1.2.3.4/-1"sv,
           "1.2.3.4/+8"sv,
           "1.2.3.4/2 4"sv,
           "1.2.3.4/24 "sv,
           "1.2.3.4//24"sv,
           "1.2.3.4/24/1"sv,
           "1.2.3.4/255.255.255.0"sv,
           "01.2.3.4/8"sv,
           "1.2.3.4/x"sv,
       }) {
    EXPECT_FALSE(Ipv4Cidr::parse(s)) << "accepted \"" << s << "\"";
  }
}

// ---- Endpoint ----

TEST(Endpoint, ParseAccepts) {
  auto e = Endpoint::parse("10.77.0.2:9");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->addr, Ipv4Addr::from_octets(10, 77, 0, 2));
  EXPECT_EQ(e->port, 9);
  EXPECT_EQ(e->to_string(), "10.77.0.2:9");

  auto lo = Endpoint::parse("0.0.0.0:0");
  ASSERT_TRUE(lo);
  EXPECT_EQ(lo->port, 0);
  auto hi = Endpoint::parse("255.255.255.255:65535");
  ASSERT_TRUE(hi);
  EXPECT_EQ(hi->port, 65535);
  EXPECT_EQ(hi->to_string(), "255.255.255.255:65535");
}

TEST(Endpoint, ParseRejects) {
  for (std::string_view s : {
           ""sv,
           ":"sv,
           "10.77.0.2"sv,
           "10.77.0.2:"sv,
           ":80"sv,
           "10.77.0.2:65536"sv,
           "10.77.0.2:99999999999"sv,
           "10.77.0.2:080"sv,
           "10.77.0.2:-1"sv,
           "10.77.0.2:+1"sv,
           "10.77.0.2:8a"sv,
           "10.77.0.2: 80"sv,
           "10.77.0.2:80:80"sv,
           "10.77.0:80"sv,
           "10.77.0.256:80"sv,
           "host:80"sv,
           "2001:db8::2:7"sv,  // an IPv6 address needs its brackets
           "[2001:db8::2]"sv,  // no port
           "[2001:db8::2]:"sv,
           "[2001:db8::2]:65536"sv,
           "[2001:db8::2:7"sv,
           "2001:db8::2]:7"sv,
           "[]:7"sv,
           "[10.77.0.2]:7"sv,         // brackets hold IPv6 only
           "[::ffff:10.77.0.2]:7"sv,  // no dotted tail, and no IPv4-mapped address
           "[::ffff:a4d:2]:7"sv,
           "[2001:db8::g]:7"sv,
           "[::1]:80"sv,  // ::/64 names no peer (IpAddr)
           "[::a4d:2]:7"sv,
       }) {
    EXPECT_FALSE(Endpoint::parse(s)) << "accepted \"" << s << "\"";
  }
}

TEST(Endpoint, ParsesBracketedIpv6) {
  auto e = Endpoint::parse("[2001:db8::2]:7");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->addr.is_v4());
  EXPECT_EQ(e->addr.v6(), *Ipv6Addr::parse("2001:db8::2"));
  EXPECT_EQ(e->port, 7);
  EXPECT_EQ(e->to_string(), "[2001:db8::2]:7");
  EXPECT_EQ(Endpoint::parse("10.77.0.2:9")->to_string(), "10.77.0.2:9");
}

TEST(IpAddr, FamiliesStayApart) {
  const IpAddr v4(Ipv4Addr::from_octets(10, 77, 0, 2));
  EXPECT_TRUE(v4.is_v4());
  EXPECT_EQ(v4.v4(), Ipv4Addr::from_octets(10, 77, 0, 2));
  EXPECT_EQ(v4.to_string(), "10.77.0.2");
  // The IPv4-mapped form is how an IPv4 address is held, so that text is refused.
  EXPECT_FALSE(IpAddr::parse("::ffff:a4d:2"));
  EXPECT_FALSE(IpAddr::parse("::1"));
  EXPECT_TRUE(IpAddr::reserved_v6(*Ipv6Addr::parse("::1:2:3:4")));
  EXPECT_FALSE(IpAddr::reserved_v6(*Ipv6Addr::parse("0:0:0:1::")));
  const IpAddr v6 = *IpAddr::parse("2001:db8::a4d:2");
  EXPECT_FALSE(v6.is_v4());
  EXPECT_NE(v4, v6);
  EXPECT_EQ(v6.v6(), *Ipv6Addr::parse("2001:db8::a4d:2"));
  EXPECT_EQ(v6.to_string(), "2001:db8::a4d:2");
  // Both "any" addresses, and the default (IPv4 any).
  EXPECT_TRUE(IpAddr().is_any());
  EXPECT_TRUE(IpAddr().is_v4());
  EXPECT_TRUE(IpAddr(Ipv6Addr{}).is_any());
  uint8_t b[16];
  EXPECT_EQ(v4.to_bytes(b), 4u);
  EXPECT_EQ(b[0], 10);
  EXPECT_EQ(b[3], 2);
  EXPECT_EQ(v6.to_bytes(b), 16u);
  EXPECT_EQ(b[0], 0x20);
  EXPECT_EQ(b[15], 2);
}

TEST(Endpoint, Ordering) {
  Endpoint a{Ipv4Addr::from_octets(1, 1, 1, 1), 80};
  Endpoint b{Ipv4Addr::from_octets(1, 1, 1, 1), 81};
  Endpoint c{Ipv4Addr::from_octets(1, 1, 1, 2), 1};
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(a, *Endpoint::parse("1.1.1.1:80"));
}

}  // namespace
}  // namespace ws
