// tcp.mtu_probing and tcp.pmtu_recovery_s (path MTU, docs/config.md and docs/tcp.md).
#include <gtest/gtest.h>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

TEST(ConfigPmtu, Defaults) {
  LoadResult r = load(kBase);
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_TRUE(r.config->tcp.mtu_probing);
  EXPECT_EQ(r.config->tcp.pmtu_recovery_s, 600u);  // RFC 1191 section 6.3: 10 minutes
}

TEST(ConfigPmtu, Set) {
  LoadResult r = load(with("tcp:\n  mtu_probing: false\n  pmtu_recovery_s: 30\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_FALSE(r.config->tcp.mtu_probing);
  EXPECT_EQ(r.config->tcp.pmtu_recovery_s, 30u);
}

TEST(ConfigPmtu, BadValues) {
  EXPECT_TRUE(one_error(with("tcp:\n  pmtu_recovery_s: 0\n"), 7, 20, {"tcp.pmtu_recovery_s"}));
  EXPECT_TRUE(one_error(with("tcp:\n  pmtu_recovery_s: 86401\n"), 7, 20, {"tcp.pmtu_recovery_s"}));
  EXPECT_TRUE(one_error(with("tcp:\n  mtu_probing: maybe\n"), 7, 16, {"tcp.mtu_probing"}));
  EXPECT_TRUE(one_error(with("tcp:\n  mtu_probe: true\n"), 7, 3, {"mtu_probe"}));
}

}  // namespace
}  // namespace ws::config::test
