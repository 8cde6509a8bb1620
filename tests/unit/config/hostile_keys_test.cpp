// tcp.syncookies, tcp.rst_rate_limit and tcp.challenge_ack_limit (docs/config.md,
// docs/security.md).
#include <gtest/gtest.h>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

TEST(ConfigHostile, Defaults) {
  LoadResult r = load(kBase);
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->tcp.syncookies, SynCookies::when_full);
  EXPECT_EQ(r.config->tcp.rst_rate_limit, 1000u);
  EXPECT_EQ(r.config->tcp.challenge_ack_limit, 1000u);
}

TEST(ConfigHostile, Set) {
  for (auto [text, want] :
       {std::pair{"auto", SynCookies::when_full}, std::pair{"always", SynCookies::always},
        std::pair{"never", SynCookies::never}}) {
    LoadResult r = load(with(std::string("tcp:\n  syncookies: ") + text +
                             "\n  rst_rate_limit: 50\n  challenge_ack_limit: 7\n"));
    ASSERT_TRUE(r.config) << all_errors(r);
    EXPECT_EQ(r.config->tcp.syncookies, want) << text;
    EXPECT_EQ(r.config->tcp.rst_rate_limit, 50u);
    EXPECT_EQ(r.config->tcp.challenge_ack_limit, 7u);
  }
}

TEST(ConfigHostile, BadValues) {
  EXPECT_TRUE(one_error(with("tcp:\n  syncookies: yes\n"), 7, 15,
                        {"tcp.syncookies", "'yes'", "auto, always, never"}));
  EXPECT_TRUE(one_error(with("tcp:\n  syncookies: [auto]\n"), 7, 15, {"tcp.syncookies"}));
  EXPECT_TRUE(one_error(with("tcp:\n  rst_rate_limit: 0\n"), 7, 19, {"tcp.rst_rate_limit"}));
  EXPECT_TRUE(one_error(with("tcp:\n  challenge_ack_limit: 10000001\n"), 7, 24,
                        {"tcp.challenge_ack_limit"}));
  EXPECT_TRUE(one_error(with("tcp:\n  syn_cookies: auto\n"), 7, 3, {"syn_cookies"}));
}

}  // namespace
}  // namespace ws::config::test
