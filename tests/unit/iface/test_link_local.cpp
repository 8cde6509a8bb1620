// Link-local addresses: modified EUI-64 and RFC 7217 stable identifiers.
#include <gtest/gtest.h>

#include <set>

#include "stack/iface/link_local.hpp"

namespace ws {
namespace {

TEST(LinkLocal, Eui64) {
  // RFC 4291 appendix A: 02:00:00:00:00:01 -> 0000:00ff:fe00:0001 (U/L bit inverted).
  EXPECT_EQ(eui64_link_local(*MacAddr::parse("02:00:00:00:00:01")).to_string(), "fe80::ff:fe00:1");
  EXPECT_EQ(eui64_link_local(*MacAddr::parse("00:1b:21:aa:bb:cc")).to_string(),
            "fe80::21b:21ff:feaa:bbcc");
}

TEST(LinkLocal, StableIsStableAndKeyed) {
  const MacAddr m1 = *MacAddr::parse("02:00:00:00:00:01");
  const MacAddr m2 = *MacAddr::parse("02:00:00:00:00:02");
  std::array<uint8_t, 16> k0{};
  std::array<uint8_t, 16> k1{};
  k1[0] = 1;
  const Ipv6Addr a = stable_link_local(m1, k0);
  EXPECT_TRUE(a.is_link_local());
  for (size_t i = 2; i < 8; ++i) EXPECT_EQ(a.b[i], 0) << i;  // fe80::/64
  EXPECT_EQ(stable_link_local(m1, k0), a);                   // same inputs, same address
  std::set<Ipv6Addr> seen = {a, stable_link_local(m2, k0), stable_link_local(m1, k1),
                             stable_link_local(m1, k0, 1)};
  EXPECT_EQ(seen.size(), 4u);  // MAC, secret and DAD counter each change it
  EXPECT_NE(a, eui64_link_local(m1));
}

}  // namespace
}  // namespace ws
