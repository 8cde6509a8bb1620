#include "stack/tcp/mss.hpp"

#include <gtest/gtest.h>

namespace ws::tcp {
namespace {

static_assert(advertised_mss(1500) == 1460);
static_assert(effective_send_mss(1460, 1460, true) == 1448);

TEST(Mss, AdvertisedIsMtuMinus40) {
  EXPECT_EQ(advertised_mss(576), 536u);
  EXPECT_EQ(advertised_mss(1500), 1460u);
  EXPECT_EQ(advertised_mss(4000), 3960u);
  EXPECT_EQ(advertised_mss(9000), 8960u);
}

TEST(Mss, EffectiveIsMinLessTimestamps) {
  // Both ends at the same MTU: MTU - 52 with timestamps (what `ss -ti` shows), - 40 without.
  for (uint32_t mtu : {576u, 1500u, 4000u, 9000u}) {
    uint32_t m = advertised_mss(mtu);
    EXPECT_EQ(effective_send_mss(m, m, true), mtu - 52);
    EXPECT_EQ(effective_send_mss(m, m, false), mtu - 40);
  }
  // Clamped to the peer's MSS.
  EXPECT_EQ(effective_send_mss(advertised_mss(9000), advertised_mss(1500), true), 1448u);
  EXPECT_EQ(effective_send_mss(advertised_mss(1500), 536, false), 536u);
  EXPECT_EQ(effective_send_mss(advertised_mss(576), advertised_mss(9000), true), 524u);
}

}  // namespace
}  // namespace ws::tcp
