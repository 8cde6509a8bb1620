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

}  // namespace
}  // namespace ws
