// services[].family and IPv6 client targets: values, defaults, and errors at the node.
#include <gtest/gtest.h>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

TEST(ServiceFamily, BothUnlessTold) {
  LoadResult r =
      load(with("services:\n"
                "  - {name: e, kind: echo, protocol: tcp, port: 7}\n"
                "  - {name: u, kind: echo, protocol: udp, port: 7, family: ipv6}\n"
                "  - {name: s, kind: sink, protocol: tcp, port: 9, family: ipv4}\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->services[0].family, AddrFamily::kAny);
  EXPECT_EQ(r.config->services[1].family, AddrFamily::kIpv6);
  EXPECT_EQ(r.config->services[2].family, AddrFamily::kIpv4);
}

TEST(ServiceFamily, Errors) {
  EXPECT_TRUE(one_error(with("services:\n"
                             "  - {name: e, kind: echo, protocol: tcp, port: 7, family: ip6}\n"),
                        7, 59, {"services[0].family", "ipv4", "ipv6"}));
  EXPECT_TRUE(one_error(with("services:\n"
                             "  - {name: c, kind: ping, protocol: tcp, target: 10.0.0.2:7,\n"
                             "     family: ipv4}\n"),
                        8, 6, {"services[0].family", "client kind"}));
}

TEST(ClientTarget, Ipv6InBrackets) {
  LoadResult r =
      load(with("services:\n"
                "  - {name: c, kind: ping, protocol: udp, target: '[2001:db8::2]:7'}\n"
                "  - {name: d, kind: ping, protocol: tcp, target: 10.0.0.2:7}\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  ASSERT_TRUE(r.config->services[0].target);
  EXPECT_EQ(r.config->services[0].target->to_string(), "[2001:db8::2]:7");
  EXPECT_FALSE(r.config->services[0].target->addr.is_v4());
  EXPECT_TRUE(r.config->services[1].target->addr.is_v4());
  for (const char* bad : {"'2001:db8::2:7'", "'[2001:db8::2]'", "'[::1]:7'", "'[fe80::1%eth0]:7'",
                          "'[2001:db8::2]:0'"}) {
    EXPECT_TRUE(one_error(with(std::string("services:\n  - {name: c, kind: ping, protocol: udp, "
                                           "target: ") +
                               bad + "}\n"),
                          7, 50, {"services[0].target", "[2001:db8::2]:7"}))
        << bad;
  }
}

}  // namespace
}  // namespace ws::config::test
