// The default router list (RFC 4861 6.3.4, 6.3.6): add, refresh, withdraw, expire, bound,
// and the choice of router.
#include <gtest/gtest.h>

#include "stack/iface/router_list.hpp"

namespace ws {
namespace {

Ipv6Addr router(uint8_t n) {
  Ipv6Addr a = *Ipv6Addr::parse("fe80::");
  a.b[15] = n;
  return a;
}

TEST(DefaultRouters, AddRefreshWithdrawExpire) {
  DefaultRouters r;
  const Instant t0 = Instant::from_ns(1'000'000'000);
  EXPECT_EQ(r.advertised(router(1), Duration::zero(), t0), DefaultRouters::Change::kIgnored);
  EXPECT_EQ(r.advertised(router(1), Duration::seconds(30), t0), DefaultRouters::Change::kAdded);
  EXPECT_EQ(r.advertised(router(2), Duration::seconds(60), t0), DefaultRouters::Change::kAdded);
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r.poll(t0), t0 + Duration::seconds(30));
  EXPECT_EQ(r.advertised(router(1), Duration::seconds(90), t0 + Duration::seconds(20)),
            DefaultRouters::Change::kRefreshed);
  EXPECT_EQ(r.poll(t0 + Duration::seconds(59)), t0 + Duration::seconds(60));
  EXPECT_EQ(r.poll(t0 + Duration::seconds(60)), t0 + Duration::seconds(110));
  EXPECT_EQ(r.size(), 1u);  // router 2 expired
  EXPECT_EQ(r.first(t0 + Duration::seconds(60)), router(1));
  EXPECT_EQ(r.advertised(router(1), Duration::zero(), t0 + Duration::seconds(61)),
            DefaultRouters::Change::kWithdrawn);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_FALSE(r.first(t0 + Duration::seconds(61)));
  EXPECT_EQ(r.poll(t0 + Duration::seconds(61)), Instant::never());
}

TEST(DefaultRouters, BoundedAndExpiredSlotsAreReused) {
  DefaultRouters r;
  const Instant t0 = Instant::from_ns(1'000'000'000);
  for (uint8_t i = 0; i < DefaultRouters::kMaxRouters; ++i) {
    EXPECT_EQ(r.advertised(router(i), Duration::seconds(10 + i), t0),
              DefaultRouters::Change::kAdded);
  }
  EXPECT_EQ(r.advertised(router(99), Duration::seconds(10), t0), DefaultRouters::Change::kFull);
  // Past the first one's lifetime its slot takes the newcomer, without a poll between.
  EXPECT_EQ(r.advertised(router(99), Duration::seconds(10), t0 + Duration::seconds(10)),
            DefaultRouters::Change::kAdded);
  EXPECT_EQ(r.size(), DefaultRouters::kMaxRouters);
}

TEST(DefaultRouters, SelectPrefersARouterNotKnownUnreachable) {
  DefaultRouters r;
  const Instant t0 = Instant::from_ns(1'000'000'000);
  r.advertised(router(1), Duration::seconds(30), t0);
  r.advertised(router(2), Duration::seconds(30), t0);
  EXPECT_EQ(r.select(t0, [](const Ipv6Addr& a) { return a != router(1); }), router(2));
  EXPECT_EQ(r.select(t0, [](const Ipv6Addr&) { return false; }), router(1));  // all failing
  EXPECT_FALSE(r.select(t0 + Duration::seconds(30), [](const Ipv6Addr&) { return true; }));
}

}  // namespace
}  // namespace ws
