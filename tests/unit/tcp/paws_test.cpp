#include "stack/tcp/paws.hpp"

#include <gtest/gtest.h>

namespace ws::tcp {
namespace {

TEST(Paws, OneTickOlderIsNotOld) {
  EXPECT_FALSE(paws_old(99, 100));
  EXPECT_TRUE(paws_old(98, 100));
  EXPECT_FALSE(paws_old(5, 0xfffffffeu));  // newer across the wrap of the clock
  EXPECT_TRUE(paws_old(0xfffffff0u, 5));   // older across it
}

// New data a little older than TS.Recent passes while no sequence number in the window
// can have been used before; too old, or once 2^31 bytes have arrived, it does not.
TEST(Paws, ReorderedNewDataIsSparedOnlyBeforeTheSequenceSpaceCouldWrap) {
  const uint32_t recent = 50'000;
  EXPECT_TRUE(paws_spares_reordered(recent - 20, recent, 0, 1 << 20));
  EXPECT_TRUE(paws_spares_reordered(recent - kPawsReorderTicks, recent, 0, 1 << 20));
  EXPECT_FALSE(paws_spares_reordered(recent - kPawsReorderTicks - 1, recent, 0, 1 << 20));
  EXPECT_TRUE(
      paws_spares_reordered(0xfffffff0u, 0xfffffff0u + 20, 1 << 30, 1 << 20));  // clock wrap
  EXPECT_FALSE(paws_spares_reordered(recent - 20, recent, kPawsNoWrapBytes - (1 << 20), 1 << 20));
  EXPECT_TRUE(
      paws_spares_reordered(recent - 20, recent, kPawsNoWrapBytes - (1 << 20) - 1, 1 << 20));
}

}  // namespace
}  // namespace ws::tcp
