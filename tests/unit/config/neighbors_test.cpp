// ports[].neighbors: static link addresses of both families, and errors at the offending
// node.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

TEST(NeighborsConfig, BothFamiliesKeptInOrder) {
  LoadResult r =
      load(dual("    neighbors:\n"
                "      - { address: 10.0.0.2, mac: '02:00:00:00:00:02' }\n"
                "      - { address: 2001:db8::2, mac: '02:00:00:00:00:03' }\n"
                "      - { address: 'fe80::7', mac: '02:00:00:00:00:04' }\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  const auto& n = r.config->ports[0].neighbors;
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].address.to_string(), "10.0.0.2");
  EXPECT_EQ(n[0].mac.to_string(), "02:00:00:00:00:02");
  EXPECT_EQ(n[1].address.to_string(), "2001:db8::2");
  EXPECT_EQ(n[2].address.to_string(), "fe80::7");
  std::string d = describe(*r.config);
  EXPECT_NE(d.find("neighbour 10.0.0.2 at 02:00:00:00:00:02"), std::string::npos) << d;
}

TEST(NeighborsConfig, NoneByDefault) {
  LoadResult r = load(kBase);
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_TRUE(r.config->ports[0].neighbors.empty());
}

TEST(NeighborsConfig, AddressErrors) {
  auto one = [](std::string_view addr) {
    return with("    neighbors: [{ address: " + std::string(addr) +
                ", mac: '02:00:00:00:00:02' }]\n");
  };
  EXPECT_TRUE(one_error(one("10.0.1.2"), 6, 28,
                        {"ports[0].neighbors[0].address", "outside the port's subnet"}));
  EXPECT_TRUE(one_error(one("10.0.0.1"), 6, 28, {"the port's own address"}));
  EXPECT_TRUE(one_error(one("10.0.0.255"), 6, 28, {"network or broadcast"}));
  EXPECT_TRUE(one_error(one("bad"), 6, 28, {"not an IPv4 or IPv6 address"}));
  EXPECT_TRUE(one_error(one("'2001:db8::2'"), 6, 28, {"the port runs no IPv6"}));
  auto one6 = [](std::string_view addr) {
    return dual("    neighbors: [{ address: '" + std::string(addr) +
                "', mac: '02:00:00:00:00:02' }]\n");
  };
  EXPECT_TRUE(one_error(one6("2001:db9::2"), 6, 28, {"neither link-local nor inside"}));
  EXPECT_TRUE(one_error(one6("2001:db8::1"), 6, 28, {"the port's own address"}));
  EXPECT_TRUE(one_error(one6("ff02::1"), 6, 28, {"not a unicast address"}));
}

TEST(NeighborsConfig, MacDuplicateAndCountErrors) {
  EXPECT_TRUE(one_error(with("    neighbors: [{ address: 10.0.0.2, mac: 'ff:ff:ff:ff:ff:ff' }]\n"),
                        6, 43, {"ports[0].neighbors[0].mac", "not a unicast MAC"}));
  EXPECT_TRUE(one_error(with("    neighbors: [{ address: 10.0.0.2 }]\n"), 6, 17,
                        {"missing required key 'mac'"}));
  EXPECT_TRUE(one_error(with("    neighbors:\n"
                             "      - { address: 10.0.0.2, mac: '02:00:00:00:00:02' }\n"
                             "      - { address: 10.0.0.2, mac: '02:00:00:00:00:03' }\n"),
                        8, 20, {"ports[0].neighbors[1].address", "listed twice"}));
  std::string many = "    neighbors:\n";
  for (int i = 2; i < 2 + 65; ++i) {
    many += "      - { address: 10.0.0." + std::to_string(i) + ", mac: '02:00:00:00:00:02' }\n";
  }
  EXPECT_TRUE(one_error(with(many), 7, 7, {"65 neighbours; a port takes at most 64"}));
}

}  // namespace
}  // namespace ws::config::test
