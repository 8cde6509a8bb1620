// ports[].addresses, ports[].gateway6 and the ipv6 section: values, defaults, and errors
// at the offending node.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

TEST(Ipv6Config, DefaultsWithoutIpv6) {
  LoadResult r = load(kBase);
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_TRUE(r.config->ports[0].addresses6.empty());
  EXPECT_FALSE(r.config->ports[0].gateway6);
  EXPECT_EQ(r.config->ipv6.link_local, LinkLocal::stable);
  EXPECT_EQ(r.config->ipv6.dad_transmits, 1u);
  EXPECT_EQ(r.config->ipv6.stable_secret, (std::array<uint8_t, 16>{}));
}

TEST(Ipv6Config, AddressesBothFamilies) {
  LoadResult r = load(dual("    gateway6: fe80::1\n    gateway: 10.0.0.254\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  const PortConfig& p = r.config->ports[0];
  EXPECT_EQ(p.address.to_string(), "10.0.0.1/24");
  ASSERT_EQ(p.addresses6.size(), 2u);
  EXPECT_EQ(p.addresses6[0].to_string(), "2001:db8::1/64");
  EXPECT_EQ(p.addresses6[1].to_string(), "fd00:1::7/48");
  ASSERT_TRUE(p.gateway6);
  EXPECT_EQ(p.gateway6->to_string(), "fe80::1");
  std::string d = describe(*r.config);
  EXPECT_NE(d.find("2001:db8::1/64"), std::string::npos) << d;
  EXPECT_NE(d.find("gateway6 fe80::1"), std::string::npos) << d;
}

TEST(Ipv6Config, GlobalGatewayInsideAPrefix) {
  LoadResult r = load(dual("    gateway6: 2001:db8::fe\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ports[0].gateway6->to_string(), "2001:db8::fe");
}

TEST(Ipv6Config, AddressErrorsPointAtTheItem) {
  auto line = [](std::string_view items) {
    return std::string(kBase.substr(0, kBase.find("    address:"))) + "    addresses: [" +
           std::string(items) + "]\n";
  };
  EXPECT_TRUE(one_error(line("10.0.0.1/24, 2001:db8::1"), 5, 30,
                        {"ports[0].addresses[1]", "not an IPv6 address/prefix"}));
  EXPECT_TRUE(one_error(line("10.0.0.1/24, fe80::1/64"), 5, 30, {"link-local"}));
  EXPECT_TRUE(one_error(line("10.0.0.1/24, ff02::1/64"), 5, 30, {"not a unicast host"}));
  EXPECT_TRUE(one_error(line("10.0.0.1/24, ::/0"), 5, 30, {"/0 prefix"}));
  EXPECT_TRUE(one_error(line("10.0.0.1/24, 2001:db8::1/64, 2001:db8::1/48"), 5, 46,
                        {"addresses[2]", "listed twice"}));
  EXPECT_TRUE(one_error(line("10.0.0.1/24, 10.0.1.1/24"), 5, 30, {"one IPv4 address"}));
  EXPECT_TRUE(one_error(line("2001:db8::1/64"), 5, 16, {"needs one IPv4 address"}));
  EXPECT_TRUE(one_error(line("10.0.0.0/24"), 5, 17, {"network address"}));
  EXPECT_TRUE(
      one_error(with("    addresses: [10.0.0.1/24]\n"), 6, 5, {"either 'address' or 'addresses'"}));
}

TEST(Ipv6Config, Gateway6Errors) {
  EXPECT_TRUE(one_error(dual("    gateway6: 2001:db9::1\n"), 6, 15,
                        {"ports[0].gateway6", "neither link-local"}));
  EXPECT_TRUE(one_error(dual("    gateway6: 2001:db8::1\n"), 6, 15, {"own address"}));
  EXPECT_TRUE(one_error(dual("    gateway6: ff02::2\n"), 6, 15, {"not a unicast"}));
  EXPECT_TRUE(one_error(dual("    gateway6: 10.0.0.254\n"), 6, 15, {"not an IPv6 address"}));
  // Without IPv6 addresses only a link-local router is on-link.
  EXPECT_TRUE(one_error(with("    gateway6: 2001:db8::fe\n"), 6, 15, {"neither link-local"}));
  EXPECT_TRUE(load(with("    gateway6: fe80::fe\n")).config);
}

TEST(Ipv6Config, Section) {
  LoadResult r = load(with("ipv6:\n  link_local: eui64\n  dad_transmits: 0\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ipv6.link_local, LinkLocal::eui64);
  EXPECT_EQ(r.config->ipv6.dad_transmits, 0u);
  EXPECT_FALSE(r.config->ipv6.accept_ra);
  LoadResult ra = load(with("ipv6:\n  accept_ra: true\n"));
  ASSERT_TRUE(ra.config) << all_errors(ra);
  EXPECT_TRUE(ra.config->ipv6.accept_ra);
  EXPECT_EQ(to_string(LinkLocal::eui64), "eui64");
  EXPECT_EQ(to_string(LinkLocal::stable), "stable");
  EXPECT_TRUE(one_error(with("ipv6:\n  link_local: random\n"), 7, 15,
                        {"ipv6.link_local", "stable, eui64"}));
  EXPECT_TRUE(one_error(with("ipv6:\n  dad_transmits: 11\n"), 7, 18, {"ipv6.dad_transmits"}));
  EXPECT_TRUE(one_error(with("ipv6:\n  accept_ra: sometimes\n"), 7, 14, {"ipv6.accept_ra"}));
  EXPECT_TRUE(one_error(with("ipv6:\n  accept_redirects: true\n"), 7, 3, {"accept_redirects"}));
}

TEST(Ipv6Config, StableSecretFile) {
  char path[] = "/tmp/ws-ipv6-secret-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char hex[] = "000102030405060708090a0b0c0d0e0f\n";
  ASSERT_EQ(write(fd, hex, sizeof hex - 1), static_cast<ssize_t>(sizeof hex - 1));
  close(fd);
  LoadResult r = load(with(std::string("ipv6:\n  stable_secret_file: ") + path + "\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ipv6.stable_secret[0], 0);
  EXPECT_EQ(r.config->ipv6.stable_secret[15], 15);
  chmod(path, 0644);
  EXPECT_TRUE(one_error(with(std::string("ipv6:\n  stable_secret_file: ") + path + "\n"), 7, 23,
                        {"too open"}));
  std::remove(path);
}

}  // namespace
}  // namespace ws::config::test
