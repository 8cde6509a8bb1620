// SYN cookie encoding (stack/tcp/syncookie.hpp): round trips, the MSS table, key
// rotation and expiry, forgeries.
#include "stack/tcp/syncookie.hpp"

#include <gtest/gtest.h>

#include <set>

namespace ws::tcp {
namespace {

std::array<uint8_t, 32> secret(uint8_t k) {
  std::array<uint8_t, 32> s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(i * 13 + k);
  return s;
}

const Endpoint kLocal{Ipv4Addr::from_octets(10, 0, 0, 1), 80};
const Endpoint kRemote{Ipv4Addr::from_octets(10, 0, 0, 2), 40000};
const Instant kT0 = Instant::from_ns(1000ull * 1000 * 1000 * 1000);  // 1000 s
constexpr uint32_t kMtu = 1500;

TEST(CookieMssTable, DerivedFromTheMtu) {
  CookieMssTable eth(1500);
  ASSERT_EQ(eth.size(), 6u);
  EXPECT_EQ(eth.at(0), 536u);
  EXPECT_EQ(eth.at(eth.size() - 1), 1460u);
  CookieMssTable jumbo(9000);
  EXPECT_EQ(jumbo.size(), 7u);
  EXPECT_EQ(jumbo.at(6), 8960u);
  CookieMssTable big(9216);  // the common jumbo size, then the port's own
  ASSERT_EQ(big.size(), 8u);
  EXPECT_EQ(big.at(6), 8960u);
  EXPECT_EQ(big.at(7), 9176u);
  CookieMssTable tunnel(1280);
  EXPECT_EQ(tunnel.at(tunnel.size() - 1), 1240u);
  EXPECT_EQ(tunnel.size(), 3u);  // 536, 1220, 1240
  CookieMssTable tiny(576);
  EXPECT_EQ(tiny.size(), 1u);
  for (uint32_t mtu : {576u, 1280u, 1500u, 4000u, 9000u, 65535u}) {
    CookieMssTable t(mtu);
    ASSERT_LE(t.size(), CookieMssTable::kMax);
    for (size_t i = 1; i < t.size(); ++i) EXPECT_LT(t.at(i - 1), t.at(i)) << mtu;
  }
}

TEST(CookieMssTable, RoundsThePeersMssDown) {
  CookieMssTable t(1500);
  EXPECT_EQ(t.at(t.index_for(1460)), 1460u);
  EXPECT_EQ(t.at(t.index_for(9000)), 1460u);
  EXPECT_EQ(t.at(t.index_for(1452)), 1440u);
  EXPECT_EQ(t.at(t.index_for(1300)), 1220u);
  EXPECT_EQ(t.at(t.index_for(536)), 536u);
  EXPECT_EQ(t.at(t.index_for(100)), 536u);  // as Linux: every host takes 576-byte datagrams
}

// Every option combination survives the round trip through the ISS and the TSecr.
TEST(SynCookies, RoundTripKeepsOptions) {
  SynCookies c(secret(1));
  SeqNum irs(123456789);
  const uint32_t clock = 0x12345678;
  for (uint32_t mss : {536u, 1220u, 1400u, 1460u, 9000u}) {
    for (int ws = -1; ws <= 14; ++ws) {
      for (int bits = 0; bits < 4; ++bits) {
        CookieOptions o;
        o.mss = mss;
        o.ts = bits & 1;
        o.sack = o.ts && (bits & 2);
        if (o.ts && ws >= 0) o.wscale = static_cast<uint8_t>(ws);
        auto is = c.make(kLocal, kRemote, irs, o, kMtu, clock, kT0);
        std::optional<uint32_t> ecr;
        if (o.ts) {
          ecr = is.ts_val;
          // Never ahead of the clock, and at most 64 ms behind it.
          EXPECT_LE(clock - is.ts_val, 64u);
        }
        auto back = c.check(kLocal, kRemote, SeqNum(is.iss), irs, ecr, kMtu, kT0);
        ASSERT_TRUE(back) << mss << " " << ws << " " << bits;
        CookieOptions want = o;
        want.mss = CookieMssTable(kMtu).at(CookieMssTable(kMtu).index_for(mss));
        EXPECT_EQ(*back, want);
      }
    }
  }
}

TEST(SynCookies, AcceptedForOneRotationThenExpired) {
  SynCookies c(secret(2));
  CookieOptions o;
  SeqNum irs(42);
  // Made at the very end of an epoch: valid through the next, not after.
  const uint64_t p = static_cast<uint64_t>(SynCookies::kPeriod.ns());
  Instant end_of_epoch = Instant::from_ns((kT0.ns() / p + 1) * p - 1);
  auto is = c.make(kLocal, kRemote, irs, o, kMtu, 0, end_of_epoch);
  auto at = [&](Instant t) {
    return c.check(kLocal, kRemote, SeqNum(is.iss), irs, std::nullopt, kMtu, t).has_value();
  };
  EXPECT_TRUE(at(end_of_epoch));
  EXPECT_TRUE(at(end_of_epoch + Duration::nanos(1)));  // rotated: the previous key
  EXPECT_TRUE(at(end_of_epoch + SynCookies::kPeriod));
  EXPECT_FALSE(at(end_of_epoch + SynCookies::kPeriod + Duration::nanos(1)));
  // Four periods on, the 2-bit epoch in the cookie names the current one again: the key
  // has moved on, so still no.
  EXPECT_FALSE(at(end_of_epoch + SynCookies::kPeriod * 4));
}

TEST(SynCookies, ForgedOrDamagedCookiesRejected) {
  SynCookies c(secret(3));
  CookieOptions o;
  o.ts = true;
  o.sack = true;
  o.wscale = 7;
  SeqNum irs(777);
  auto is = c.make(kLocal, kRemote, irs, o, kMtu, 100000, kT0);
  auto ok = [&](Endpoint l, Endpoint r, uint32_t iss, SeqNum peer, std::optional<uint32_t> ecr) {
    return c.check(l, r, SeqNum(iss), peer, ecr, kMtu, kT0).has_value();
  };
  ASSERT_TRUE(ok(kLocal, kRemote, is.iss, irs, is.ts_val));
  // Each bit of the cookie flipped.
  for (int b = 0; b < 32; ++b)
    EXPECT_FALSE(ok(kLocal, kRemote, is.iss ^ (1u << b), irs, is.ts_val));
  // Another peer ISN, port or address.
  EXPECT_FALSE(ok(kLocal, kRemote, is.iss, irs + 1, is.ts_val));
  EXPECT_FALSE(ok(kLocal, {kRemote.addr, 40001}, is.iss, irs, is.ts_val));
  EXPECT_FALSE(ok(kLocal, {Ipv4Addr::from_octets(10, 0, 0, 3), 40000}, is.iss, irs, is.ts_val));
  EXPECT_FALSE(ok({kLocal.addr, 81}, kRemote, is.iss, irs, is.ts_val));
  // Options changed in the TSecr (another scale, SACK off), or timestamps dropped.
  EXPECT_FALSE(ok(kLocal, kRemote, is.iss, irs, is.ts_val ^ 1));
  EXPECT_FALSE(ok(kLocal, kRemote, is.iss, irs, is.ts_val ^ 0x10));
  EXPECT_FALSE(ok(kLocal, kRemote, is.iss, irs, std::nullopt));
  // Bits of the TSecr above the option field are the clock's: free to differ.
  EXPECT_TRUE(ok(kLocal, kRemote, is.iss, irs, is.ts_val + 64));
  // Another secret.
  SynCookies other(secret(4));
  EXPECT_FALSE(other.check(kLocal, kRemote, SeqNum(is.iss), irs, is.ts_val, kMtu, kT0));
  // Blind guesses: 27 bits of MAC, 2 of the epoch's 4 values and 3 of 8 MSS indexes
  // (6 at MTU 1500) let about 1 in 2^28 through; none of 200000 passes.
  int passed = 0;
  for (uint32_t g = 0; g < 200000; ++g)
    passed += ok(kLocal, kRemote, g * 2654435761u, irs, is.ts_val) ? 1 : 0;
  EXPECT_EQ(passed, 0);
}

// The ISS of cookie connections looks random: distinct across peers and peer ISNs,
// with every bit in use (the epoch and MSS index are whitened).
TEST(SynCookies, CookiesLookRandom) {
  SynCookies c(secret(5));
  std::set<uint32_t> seen;
  uint32_t ones = 0, zeros = 0;
  CookieOptions o;
  for (uint32_t i = 0; i < 4096; ++i) {
    auto is =
        c.make(kLocal, {kRemote.addr, static_cast<uint16_t>(1024 + i)}, SeqNum(i), o, kMtu, 0, kT0);
    seen.insert(is.iss);
    ones |= is.iss;
    zeros |= ~is.iss;
  }
  EXPECT_EQ(seen.size(), 4096u);
  EXPECT_EQ(ones, 0xffffffffu);
  EXPECT_EQ(zeros, 0xffffffffu);
}

}  // namespace
}  // namespace ws::tcp
