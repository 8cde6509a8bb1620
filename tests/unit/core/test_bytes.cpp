#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "stack/core/bytes.hpp"

namespace ws {
namespace {

TEST(Bytes, LoadBigEndianFromKnownBytes) {
  const std::array<uint8_t, 6> b = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc};
  EXPECT_EQ(load_be16(b.data()), 0x1234);
  EXPECT_EQ(load_be16(b.data() + 1), 0x3456);
  EXPECT_EQ(load_be32(b.data()), 0x12345678u);
  EXPECT_EQ(load_be32(b.data() + 1), 0x3456789au);  // unaligned
  EXPECT_EQ(load_be32(b.data() + 2), 0x56789abcu);
}

TEST(Bytes, HighBitsDoNotSignExtend) {
  const std::array<uint8_t, 4> b = {0xff, 0xfe, 0x80, 0x01};
  EXPECT_EQ(load_be16(b.data()), 0xfffe);
  EXPECT_EQ(load_be16(b.data() + 2), 0x8001);
  EXPECT_EQ(load_be32(b.data()), 0xfffe8001u);
}

TEST(Bytes, StoreWritesNetworkOrderAndNothingElse) {
  std::array<uint8_t, 8> b{};
  b.fill(0xaa);
  store_be16(b.data() + 1, 0xbeef);
  EXPECT_EQ(b, (std::array<uint8_t, 8>{0xaa, 0xbe, 0xef, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa}));
  store_be32(b.data() + 3, 0x01020304u);
  EXPECT_EQ(b, (std::array<uint8_t, 8>{0xaa, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0xaa}));
}

// Two adjacent fields, as the timestamps of a TCP header (value, echo reply), at an odd
// offset: the compiler may merge the stores, the bytes must be those of two fields.
TEST(Bytes, AdjacentStoresKeepEachFieldInNetworkOrder) {
  std::array<uint8_t, 11> b{};
  b.fill(0x55);
  store_be32(b.data() + 1, 0x11223344u);
  store_be32(b.data() + 5, 0xa1b2c3d4u);
  EXPECT_EQ(b, (std::array<uint8_t, 11>{0x55, 0x11, 0x22, 0x33, 0x44, 0xa1, 0xb2, 0xc3, 0xd4, 0x55,
                                        0x55}));
}

TEST(Bytes, RoundTripAtEveryOffset) {
  std::array<uint8_t, 16> b{};
  uint32_t v = 0x9e3779b9u;
  for (size_t off = 0; off + 4 <= b.size(); ++off) {
    v = v * 2654435761u + 1;
    store_be32(b.data() + off, v);
    EXPECT_EQ(load_be32(b.data() + off), v);
    store_be16(b.data() + off, static_cast<uint16_t>(v));
    EXPECT_EQ(load_be16(b.data() + off), static_cast<uint16_t>(v));
  }
  for (uint32_t x : {0u, 1u, 0xffffu, 0x10000u, 0x7fffffffu, 0x80000000u, 0xffffffffu}) {
    store_be32(b.data() + 5, x);
    EXPECT_EQ(load_be32(b.data() + 5), x);
  }
}

}  // namespace
}  // namespace ws
