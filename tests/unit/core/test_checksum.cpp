#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "tests/unit/wire/captured_frames.hpp"

namespace ws {
namespace {

namespace td = ws::testdata;

// Reference: RFC 1071 as literally as possible. Sum big-endian 16-bit words (an odd final
// byte is padded with a zero on the right) in 64 bits, then fold the carries back in.
uint16_t ref_sum16(std::span<const uint8_t> d, uint32_t initial = 0) {
  uint64_t s = initial;
  size_t i = 0;
  for (; i + 1 < d.size(); i += 2) s += (uint32_t{d[i]} << 8) | d[i + 1];
  if (i < d.size()) s += uint32_t{d[i]} << 8;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}
uint16_t ref_checksum(std::span<const uint8_t> d) { return static_cast<uint16_t>(~ref_sum16(d)); }

// csum_partial's result folded to 16 bits without complementing.
uint16_t fold16(uint32_t s) { return static_cast<uint16_t>(~csum_fold(s)); }

TEST(Checksum, Rfc1071Example) {
  // RFC 1071 section 3: the sum of these bytes is ddf2, whose complement is 220d.
  const std::array<uint8_t, 8> b = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(fold16(csum_partial(b)), 0xddf2);
  EXPECT_EQ(internet_checksum(b), 0x220d);
  // Summing the words in another grouping gives the same (associativity).
  uint32_t s = csum_partial(std::span(b).first(4));
  s = csum_partial(std::span(b).subspan(4), s);
  EXPECT_EQ(csum_fold(s), 0x220d);
}

TEST(Checksum, EmptyAndZeroBuffers) {
  EXPECT_EQ(csum_partial({}), 0u);
  EXPECT_EQ(csum_partial({}, 0x1234), 0x1234u);
  EXPECT_EQ(internet_checksum({}), 0xffff);
  std::vector<uint8_t> z(100, 0);
  EXPECT_EQ(internet_checksum(z), 0xffff);
}

TEST(Checksum, OddLengthsPadOnTheRight) {
  const uint8_t one[] = {0x01};
  EXPECT_EQ(fold16(csum_partial(one)), 0x0100);
  const uint8_t three[] = {0x01, 0x02, 0x03};
  EXPECT_EQ(fold16(csum_partial(three)), 0x0402);
  // Nine bytes: one full 8-byte word through the fast path plus an odd tail.
  const uint8_t nine[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xab};
  EXPECT_EQ(fold16(csum_partial(nine)), ref_sum16(nine));
  EXPECT_EQ(fold16(csum_partial(nine)), 0xab00);  // 0xffff is one's-complement zero
}

TEST(Checksum, AllOnesMaximisesCarries) {
  for (size_t n : {2u, 8u, 16u, 1500u, 9000u, 65535u}) {
    std::vector<uint8_t> b(n, 0xff);
    EXPECT_EQ(fold16(csum_partial(b)), ref_sum16(b)) << n;
    EXPECT_EQ(fold16(csum_partial(b, 0xffffffffu)), ref_sum16(b, 0xffffffffu)) << n;
  }
}

// The inline 20-byte sum of IPv4 headers: the same value as csum_partial, carries
// included (all ones, alternating extremes), on random headers at every alignment.
TEST(Checksum, TwentyByteSumMatchesPartialSum) {
  std::array<uint8_t, 28> b{};
  for (uint8_t fill : {uint8_t{0}, uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x01}}) {
    b.fill(fill);
    EXPECT_EQ(fold16(csum_20(b.data())), fold16(csum_partial(std::span(b).first(20)))) << int{fill};
  }
  for (size_t i = 0; i < b.size(); ++i) b[i] = i % 2 ? 0xff : 0x00;
  EXPECT_EQ(fold16(csum_20(b.data())), ref_sum16(std::span(b).first(20)));
  std::mt19937_64 rng(20);
  for (int round = 0; round < 2000; ++round) {
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    for (size_t start = 0; start < 8; ++start) {
      std::span<const uint8_t> d(b.data() + start, 20);
      ASSERT_EQ(fold16(csum_20(d.data())), ref_sum16(d)) << round << " " << start;
      ASSERT_EQ(internet_checksum(d), ref_checksum(d)) << round << " " << start;
    }
  }
}

// The inline sum of a header (IPv4, TCP with options, UDP: a multiple of 4 up to 60 bytes) that
// the IPv4 output adds to the pseudo-header: the same value as csum_partial, all ones
// included, on random bytes at every alignment.
TEST(Checksum, WordSumMatchesPartialSum) {
  std::array<uint8_t, 68> b{};
  b.fill(0xff);
  for (size_t n = 0; n <= 60; n += 4) {
    EXPECT_EQ(fold16(csum_words(b.data(), n)), ref_sum16(std::span(b).first(n))) << n;
  }
  std::mt19937_64 rng(60);
  for (int round = 0; round < 500; ++round) {
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    for (size_t start = 0; start < 8; ++start) {
      for (size_t n = 0; n <= 60; n += 4) {
        std::span<const uint8_t> d(b.data() + start, n);
        ASSERT_EQ(fold16(csum_words(d.data(), n)), ref_sum16(d)) << round << " " << n;
        const uint32_t pseudo = static_cast<uint32_t>(rng());
        ASSERT_EQ(csum_fold(csum_add_at(pseudo, csum_words(d.data(), n), 0)),
                  csum_fold(csum_partial(d, pseudo)))
            << round << " " << n;
      }
    }
  }
}

// csum_short takes its inline path for 4-byte multiples up to 60 bytes and csum_partial's
// for the rest: the same folded sum at every length and alignment, from any initial value.
TEST(Checksum, ShortSumMatchesPartialSum) {
  std::array<uint8_t, 88> b{};
  std::mt19937_64 rng(61);
  for (int round = 0; round < 300; ++round) {
    for (auto& x : b) x = static_cast<uint8_t>(round == 0 ? 0xff : rng());
    for (size_t start = 0; start < 8; ++start) {
      for (size_t n = 0; n <= 80; ++n) {
        std::span<const uint8_t> d(b.data() + start, n);
        const uint32_t initial = round == 0 ? 0xffffffffu : static_cast<uint32_t>(rng());
        ASSERT_EQ(csum_fold(csum_short(d, initial)), csum_fold(csum_partial(d, initial)))
            << round << " " << start << " " << n;
        ASSERT_EQ(fold16(csum_short(d, 0)), ref_sum16(d)) << round << " " << n;
      }
    }
  }
}

// The IPv6 pseudo header laid out as RFC 8200 8.1 draws it and summed by the reference,
// against pseudo_sum's wide-word sum: random addresses, all-ones ones (every carry), and
// lengths across the 16-bit boundary.
TEST(Checksum, Ipv6PseudoSumMatchesTheLaidOutHeader) {
  std::mt19937_64 rng(8200);
  for (int round = 0; round < 2000; ++round) {
    std::array<uint8_t, 40> h{};
    for (size_t i = 0; i < 32; ++i) h[i] = static_cast<uint8_t>(round < 2 ? 0xff : rng());
    const auto len = static_cast<uint32_t>(round == 0 ? 0xffffffffu : rng() % 0x20000);
    const auto next = static_cast<uint8_t>(round == 0 ? 0xff : rng());
    store_be32(h.data() + 32, len);
    h[39] = next;
    const IpAddr src(Ipv6Addr::from_bytes(h.data()));
    const IpAddr dst(Ipv6Addr::from_bytes(h.data() + 16));
    ASSERT_EQ(fold16(pseudo_sum(src, dst, next, len)), ref_sum16(h)) << round;
    ASSERT_EQ(fold16(ipv6_pseudo_sum(src.v6(), dst.v6(), next, len)), ref_sum16(h)) << round;
  }
}

TEST(Checksum, CapturedIpv4HeadersVerify) {
  for (std::span<const uint8_t> f :
       {std::span<const uint8_t>(td::kIcmpEchoRequest),
        std::span<const uint8_t>(td::kIcmpEchoReply), std::span<const uint8_t>(td::kUdpDnsQuery),
        std::span<const uint8_t>(td::kTcpSyn), std::span<const uint8_t>(td::kTcpSynAck),
        std::span<const uint8_t>(td::kTcpData)}) {
    auto ip = td::l3_of(f).first(td::kIpLen);
    EXPECT_EQ(internet_checksum(ip), 0);  // a correct header sums to 0xffff
    // Recomputing with the field zeroed yields the stored value.
    std::array<uint8_t, td::kIpLen> h;
    std::copy(ip.begin(), ip.end(), h.begin());
    uint16_t stored = load_be16(h.data() + 10);
    store_be16(h.data() + 10, 0);
    EXPECT_EQ(internet_checksum(h), stored);
    EXPECT_EQ(ref_checksum(h), stored);
  }
  // The echo request's header checksum as captured.
  EXPECT_EQ(load_be16(td::kIcmpEchoRequest.data() + 24), 0xe95f);
}

TEST(Checksum, CapturedIcmpVerifies) {
  for (std::span<const uint8_t> f : {std::span<const uint8_t>(td::kIcmpEchoRequest),
                                     std::span<const uint8_t>(td::kIcmpEchoReply)}) {
    EXPECT_EQ(internet_checksum(td::l4_of(f)), 0);
  }
}

// UDP/TCP: the checksum covers the pseudo header and the whole segment.
uint16_t l4_verify(std::span<const uint8_t> frame, uint8_t proto) {
  auto ip = td::l3_of(frame);
  Ipv4Addr src{load_be32(ip.data() + 12)};
  Ipv4Addr dst{load_be32(ip.data() + 16)};
  uint16_t total = load_be16(ip.data() + 2);
  auto l4 = ip.subspan(td::kIpLen, total - td::kIpLen);
  return csum_fold(
      csum_partial(l4, ipv4_pseudo_sum(src, dst, proto, static_cast<uint16_t>(l4.size()))));
}

TEST(Checksum, CapturedUdpAndTcpVerifyWithPseudoHeader) {
  EXPECT_EQ(l4_verify(td::kUdpDnsQuery, 17), 0);  // odd length (37 bytes)
  EXPECT_EQ(l4_verify(td::kTcpSyn, 6), 0);
  EXPECT_EQ(l4_verify(td::kTcpSynAck, 6), 0);
  EXPECT_EQ(l4_verify(td::kTcpData, 6), 0);
  // A wrong protocol number in the pseudo header breaks it.
  EXPECT_NE(l4_verify(td::kTcpSyn, 17), 0);
}

TEST(Checksum, PseudoSumMatchesExplicitPseudoHeader) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 10000; ++i) {
    Ipv4Addr src{static_cast<uint32_t>(rng())};
    Ipv4Addr dst{static_cast<uint32_t>(rng())};
    auto proto = static_cast<uint8_t>(rng());
    auto len = static_cast<uint16_t>(rng());
    uint8_t ph[12];
    store_be32(ph, src.v);
    store_be32(ph + 4, dst.v);
    ph[8] = 0;
    ph[9] = proto;
    store_be16(ph + 10, len);
    ASSERT_EQ(fold16(ipv4_pseudo_sum(src, dst, proto, len)), ref_sum16(ph));
  }
  EXPECT_EQ(fold16(ipv4_pseudo_sum(Ipv4Addr::broadcast(), Ipv4Addr::broadcast(), 0xff, 0xffff)),
            ref_sum16(std::array<uint8_t, 12>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0,
                                              0xff, 0xff, 0xff}));
}

// RFC 8200 8.1: source, destination, 32-bit length, three zero bytes, next header.
TEST(Checksum, Ipv6PseudoSumMatchesExplicitPseudoHeader) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    Ipv6Addr src, dst;
    for (auto& x : src.b) x = static_cast<uint8_t>(rng());
    for (auto& x : dst.b) x = static_cast<uint8_t>(rng());
    auto nh = static_cast<uint8_t>(rng());
    auto len = static_cast<uint32_t>(rng()) >> (rng() % 32);
    uint8_t ph[40] = {};
    src.to_bytes(ph);
    dst.to_bytes(ph + 16);
    store_be32(ph + 32, len);
    ph[39] = nh;
    ASSERT_EQ(fold16(pseudo_sum(IpAddr(src), IpAddr(dst), nh, len)), ref_sum16(ph));
    ASSERT_EQ(fold16(ipv6_pseudo_sum(src, dst, nh, len)), ref_sum16(ph));
  }
  // The family-agnostic sum of two IPv4 addresses is the IPv4 pseudo header's.
  const Ipv4Addr a = Ipv4Addr::from_octets(10, 0, 0, 1), b = Ipv4Addr::from_octets(10, 0, 0, 2);
  EXPECT_EQ(pseudo_sum(a, b, 17, 1234), ipv4_pseudo_sum(a, b, 17, 1234));
}

TEST(Checksum, RandomBuffersMatchReferenceAtEveryLengthAndAlignment) {
  std::mt19937_64 rng(0xc0ffee);
  std::vector<uint8_t> buf(2000 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len = 0; len <= 2000; ++len) {
    for (size_t start = 0; start < 8; ++start) {
      std::span<const uint8_t> d(buf.data() + start, len);
      uint32_t p = csum_partial(d);
      ASSERT_EQ(fold16(p), ref_sum16(d)) << "len " << len << " start " << start;
      ASSERT_EQ(internet_checksum(d), ref_checksum(d)) << "len " << len << " start " << start;
    }
    // With an initial sum (as when seeding from the pseudo header).
    auto init = static_cast<uint32_t>(rng());
    std::span<const uint8_t> d(buf.data() + (len % 5), len);
    ASSERT_EQ(fold16(csum_partial(d, init)), ref_sum16(d, init)) << len;
  }
}

// Buffers of 128 bytes and more are summed 64 bytes at a time with AVX2 where the
// CPU has it: block boundaries, every offset within a 64-byte line, large sizes,
// and the fused copy giving the same sum and the same bytes.
TEST(Checksum, VectorBlocksMatchReferenceAtBoundariesAndAlignments) {
  std::mt19937_64 rng(0x5eed);
  std::vector<uint8_t> buf((1u << 20) + 128);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::vector<uint8_t> out(buf.size());
  for (size_t len : {127u, 128u, 129u, 191u, 192u, 193u, 255u, 256u, 257u, 1499u, 1500u, 8999u,
                     9000u, 9014u, 65535u, 1u << 20}) {
    for (size_t start = 0; start < 64; start += (len > 70000 ? 13 : 1)) {
      std::span<const uint8_t> d(buf.data() + start, len);
      uint32_t p = csum_partial(d);
      ASSERT_EQ(fold16(p), ref_sum16(d)) << "len " << len << " start " << start;
      size_t dst_off = (start * 7) % 64;
      uint32_t c = csum_copy(out.data() + dst_off, d);
      ASSERT_EQ(c, p) << "len " << len << " start " << start;
      ASSERT_TRUE(std::equal(d.begin(), d.end(), out.begin() + static_cast<long>(dst_off)))
          << "len " << len << " start " << start;
    }
  }
}

// The fused copy writes exactly the bytes it sums, at every length around the scalar
// words, the byte tail and the vector blocks, from and to every offset within a word: nothing
// before the destination or past its end changes, and the sum is csum_partial's.
TEST(Checksum, CopyWritesExactlyItsBytesAtEveryLength) {
  std::mt19937_64 rng(0xfeed);
  std::vector<uint8_t> src(400);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  std::vector<uint8_t> out(400 + 64);
  for (size_t len = 0; len <= 300; ++len) {
    for (size_t start = 0; start < 8; ++start) {
      const size_t dst_off = 8 + (start * 3) % 8;
      std::fill(out.begin(), out.end(), uint8_t{0xa5});
      std::span<const uint8_t> d(src.data() + start, len);
      const uint32_t c = csum_copy(out.data() + dst_off, d);
      ASSERT_EQ(fold16(c), ref_sum16(d)) << "len " << len << " start " << start;
      ASSERT_EQ(c, csum_partial(d)) << "len " << len << " start " << start;
      ASSERT_TRUE(std::equal(d.begin(), d.end(), out.begin() + static_cast<long>(dst_off)))
          << "len " << len << " start " << start;
      for (size_t i = 0; i < out.size(); ++i) {
        if (i < dst_off || i >= dst_off + len) {
          ASSERT_EQ(out[i], 0xa5) << "len " << len << " start " << start << " byte " << i;
        }
      }
    }
  }
}

TEST(Checksum, ChainedPartialSumsEqualOneShot) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> buf(4096);
  for (int iter = 0; iter < 2000; ++iter) {
    size_t len = rng() % buf.size();
    for (size_t i = 0; i < len; ++i) buf[i] = static_cast<uint8_t>(rng());
    std::span<const uint8_t> all(buf.data(), len);
    uint32_t one_shot = csum_partial(all);
    // Cut at random even offsets; only the last piece may be odd.
    uint32_t s = 0;
    size_t pos = 0;
    while (pos < len) {
      size_t piece = (rng() % 200) & ~size_t{1};
      if (pos + piece >= len) piece = len - pos;
      s = csum_partial(all.subspan(pos, piece), s);
      pos += piece;
    }
    ASSERT_EQ(fold16(s), fold16(one_shot)) << "iteration " << iter;
    ASSERT_EQ(csum_fold(s), ref_checksum(all));
  }
}

TEST(Checksum, ChainingFromAnyInitialValue) {
  // Initial values near the 32-bit limit must not lose carries.
  const uint8_t b[] = {0xff, 0xff, 0x80, 0x01, 0x12, 0x34, 0xab, 0xcd, 0xee, 0xff, 0x00};
  for (uint32_t init : {0u, 1u, 0xffffu, 0x10000u, 0x7fffffffu, 0xfffffffeu, 0xffffffffu}) {
    EXPECT_EQ(fold16(csum_partial(b, init)), ref_sum16(b, init)) << init;
  }
}

TEST(Checksum, Update16MatchesRecomputeOnCapturedHeader) {
  // Decrementing the TTL of a forwarded packet (RFC 1624's motivating case).
  std::array<uint8_t, td::kIpLen> h;
  auto ip = td::l3_of(td::kIcmpEchoRequest).first(td::kIpLen);
  std::copy(ip.begin(), ip.end(), h.begin());
  for (int step = 0; step < 64; ++step) {
    uint16_t old_word = load_be16(h.data() + 8);  // TTL | protocol
    uint16_t old_csum = load_be16(h.data() + 10);
    h[8] = static_cast<uint8_t>(h[8] - 1);
    uint16_t new_word = load_be16(h.data() + 8);
    uint16_t updated = csum_update16(old_csum, old_word, new_word);
    store_be16(h.data() + 10, 0);
    EXPECT_EQ(updated, internet_checksum(h)) << "ttl " << int{h[8]};
    store_be16(h.data() + 10, updated);
    EXPECT_EQ(internet_checksum(h), 0);
  }
}

TEST(Checksum, Update16MatchesRecomputeOnRandomHeaders) {
  std::mt19937_64 rng(1624);
  std::array<uint8_t, 40> h;
  for (int iter = 0; iter < 100000; ++iter) {
    for (auto& b : h) b = static_cast<uint8_t>(rng());
    h[0] |= 0x40;  // never all-zero (the one case where 0x0000 vs 0xffff differ)
    const size_t csum_off = 10;
    store_be16(h.data() + csum_off, 0);
    uint16_t c = internet_checksum(h);
    store_be16(h.data() + csum_off, c);
    size_t off = 2 * (1 + rng() % 19);
    if (off == csum_off) off = 12;
    uint16_t old_v = load_be16(h.data() + off);
    uint16_t new_v = (iter % 8 == 0) ? static_cast<uint16_t>(~old_v) : static_cast<uint16_t>(rng());
    if (iter % 16 == 1) new_v = old_v;
    store_be16(h.data() + off, new_v);
    uint16_t updated = csum_update16(c, old_v, new_v);
    store_be16(h.data() + csum_off, 0);
    ASSERT_EQ(updated, internet_checksum(h)) << "iteration " << iter;
    store_be16(h.data() + csum_off, updated);
    ASSERT_EQ(internet_checksum(h), 0);
  }
}

TEST(Checksum, Update16EdgeValues) {
  // Field changes between the two one's-complement zeros and extreme values.
  std::array<uint8_t, 4> b = {0x12, 0x34, 0x00, 0x00};
  for (uint16_t from : {0x0000, 0xffff, 0x8000, 0x0001}) {
    for (uint16_t to : {0x0000, 0xffff, 0x7fff, 0xfffe}) {
      store_be16(b.data() + 2, from);
      uint16_t c = internet_checksum(b);
      store_be16(b.data() + 2, to);
      EXPECT_EQ(csum_update16(c, from, to), internet_checksum(b)) << from << "->" << to;
    }
  }
}

}  // namespace
}  // namespace ws
