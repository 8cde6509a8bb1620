#include "stack/tcp/isn.hpp"

#include <gtest/gtest.h>

namespace ws::tcp {
namespace {

TEST(SipHash, ReferenceVector) {
  // SipHash-2-4 paper, appendix A: key 00..0f, message 00..0e.
  std::array<uint8_t, 16> key;
  for (int i = 0; i < 16; ++i) key[i] = static_cast<uint8_t>(i);
  uint8_t msg[15];
  for (int i = 0; i < 15; ++i) msg[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(siphash24(key, msg, 15), 0xa129ca6149be45e5ull);
}

// The salt absorbed once (IsnGenerator) gives the hash of salt and message together.
TEST(SipHash, PrefixAbsorbedOnceEqualsTheWholeMessage) {
  std::array<uint8_t, 16> key;
  for (int i = 0; i < 16; ++i) key[i] = static_cast<uint8_t>(3 * i + 1);
  uint8_t msg[64];
  for (int i = 0; i < 64; ++i) msg[i] = static_cast<uint8_t>(i * 7 + 5);
  for (size_t prefix : {0, 8, 16, 24}) {
    SipHasher h(key);
    h.absorb(msg, prefix);
    for (size_t len = 0; len + prefix <= 64; ++len)
      EXPECT_EQ(h.finish(msg + prefix, len), siphash24(key, msg, prefix + len))
          << prefix << " " << len;
  }
}

TEST(Isn, KeyedPerTupleAndAdvancesEvery4us) {
  std::array<uint8_t, 32> s1{}, s2{};
  s2[31] = 1;
  IsnGenerator g1(s1), g2(s2);
  Endpoint l{Ipv4Addr::from_octets(10, 0, 0, 1), 80}, r{Ipv4Addr::from_octets(10, 0, 0, 2), 4000};
  Endpoint r2{Ipv4Addr::from_octets(10, 0, 0, 2), 4001};
  Instant t = Instant::from_ns(1'000'000'000);
  EXPECT_NE(g1.isn(l, r, t), g2.isn(l, r, t));  // every byte of the secret matters
  EXPECT_NE(g1.isn(l, r, t), g1.isn(l, r2, t));
  // RFC 6528: M is a 4 us timer.
  EXPECT_EQ(g1.isn(l, r, t + Duration::micros(4)) - g1.isn(l, r, t), 1u);
  EXPECT_EQ(g1.isn(l, r, t + Duration::micros(400)) - g1.isn(l, r, t), 100u);
}

// A new connection takes both per-connection values from one hash (TcpStack::new_tcb).
TEST(Isn, InitialGivesTheSameValuesAsTheSeparateCalls) {
  std::array<uint8_t, 32> s{};
  s[0] = 7;
  IsnGenerator g(s);
  Endpoint l{Ipv4Addr::from_octets(10, 0, 0, 1), 80}, r{Ipv4Addr::from_octets(10, 0, 0, 2), 4000};
  Endpoint r2{Ipv4Addr::from_octets(10, 0, 0, 2), 4001};
  Instant t = Instant::from_ns(3'000'000'000);
  IsnGenerator::Initial i = g.initial(l, r, t);
  EXPECT_EQ(i.isn, g.isn(l, r, t));
  EXPECT_EQ(i.ts_offset, g.ts_offset(l, r));
  EXPECT_NE(g.ts_offset(l, r), g.ts_offset(l, r2));
  // Different halves of the hash: the offset is not F.
  EXPECT_NE(i.ts_offset, i.isn - static_cast<uint32_t>(t.ns() / 4000));
  EXPECT_EQ(i.f, i.isn - static_cast<uint32_t>(t.ns() / 4000));
}

// A connection that takes over its tuple's TIME_WAIT block reuses the block's hash: the
// values are those a fresh hash gives at the later time.
TEST(Isn, AgainGivesTheValuesOfANewHash) {
  std::array<uint8_t, 32> s{};
  s[5] = 9;
  IsnGenerator g(s);
  Endpoint l{Ipv4Addr::from_octets(10, 0, 0, 1), 40000}, r{Ipv4Addr::from_octets(10, 0, 0, 2), 80};
  const Instant t0 = Instant::from_ns(5'000'000'000);
  const Instant t1 = t0 + Duration::millis(113);
  const IsnGenerator::Initial before = g.initial(l, r, t0);
  const IsnGenerator::Initial again = IsnGenerator::again(before, t1);
  const IsnGenerator::Initial fresh = g.initial(l, r, t1);
  EXPECT_EQ(again.isn, fresh.isn);
  EXPECT_EQ(again.ts_offset, fresh.ts_offset);
  EXPECT_EQ(again.f, fresh.f);
  EXPECT_EQ(again.isn - before.isn, 113'000u / 4);
}

}  // namespace
}  // namespace ws::tcp
