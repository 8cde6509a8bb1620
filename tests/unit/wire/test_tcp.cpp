#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "stack/core/checksum.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/tcp.hpp"
#include "tests/unit/wire/captured_frames.hpp"

namespace ws::wire {
namespace {

namespace td = ws::testdata;

const Ipv4Addr kIpA = *Ipv4Addr::parse("10.99.0.1");
const Ipv4Addr kIpB = *Ipv4Addr::parse("10.99.0.2");

std::vector<uint8_t> l4(std::span<const uint8_t> frame) {
  auto s = td::l4_of(frame);
  return {s.begin(), s.end()};
}

uint16_t tcp_csum(std::span<const uint8_t> seg, Ipv4Addr src, Ipv4Addr dst) {
  return csum_fold(
      csum_partial(seg, ipv4_pseudo_sum(src, dst, kIpProtoTcp, static_cast<uint16_t>(seg.size()))));
}

// A segment with a 20-byte header followed by `opts` (padded with EOL to a multiple
// of 4) and no payload.
std::vector<uint8_t> with_options(std::vector<uint8_t> opts) {
  while (opts.size() % 4 != 0) opts.push_back(tcpopt::kEnd);
  std::vector<uint8_t> b = l4(td::kTcpSyn);
  b.resize(20);
  b.insert(b.end(), opts.begin(), opts.end());
  b[12] = static_cast<uint8_t>((b.size() / 4) << 4);
  return b;
}

bool options_ok(std::vector<uint8_t> opts, TcpOptions* out = nullptr) {
  auto b = with_options(std::move(opts));
  auto t = TcpView::parse(b);
  EXPECT_TRUE(t);
  if (!t) return false;
  TcpOptions o;
  bool ok = t->parse_options(o);
  if (out) *out = o;
  return ok;
}

TEST(Tcp, CapturedLinuxSyn) {
  TcpView::Error err = TcpView::Error::kTruncated;
  auto t = TcpView::parse(td::l4_of(td::kTcpSyn), &err);
  ASSERT_TRUE(t);
  EXPECT_EQ(err, TcpView::Error::kNone);
  EXPECT_EQ(t->src_port(), 35118);
  EXPECT_EQ(t->dst_port(), 8080);
  EXPECT_EQ(t->seq(), SeqNum(1054103715u));
  EXPECT_EQ(t->ack(), SeqNum(0));
  EXPECT_EQ(t->header_len(), 40u);
  EXPECT_EQ(t->flags(), tcpflag::kSyn);
  EXPECT_TRUE(t->syn());
  EXPECT_FALSE(t->has_ack() || t->fin() || t->rst() || t->psh() || t->urg());
  EXPECT_EQ(t->window(), 64240);
  EXPECT_EQ(t->checksum(), 0xae84);
  EXPECT_EQ(t->urgent(), 0);
  EXPECT_EQ(t->options_bytes().size(), 20u);
  EXPECT_TRUE(t->payload().empty());
  EXPECT_EQ(t->seg_len(), 1u);  // SYN occupies one sequence number
  EXPECT_EQ(tcp_csum(t->bytes(), kIpA, kIpB), 0);

  TcpOptions o;
  ASSERT_TRUE(t->parse_options(o));
  EXPECT_EQ(o.mss, 1460);
  EXPECT_TRUE(o.sack_permitted);
  EXPECT_EQ(o.ts_val, 2148714870u);
  EXPECT_EQ(o.ts_ecr, 0u);
  EXPECT_EQ(o.wscale, 10);
  EXPECT_EQ(o.sack_count, 0);
}

TEST(Tcp, CapturedLinuxSynAck) {
  auto t = TcpView::parse(td::l4_of(td::kTcpSynAck));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->flags(), tcpflag::kSyn | tcpflag::kAck);
  EXPECT_EQ(t->seq(), SeqNum(4252358004u));
  EXPECT_EQ(t->ack(), SeqNum(1054103716u));
  EXPECT_EQ(t->window(), 65160);
  EXPECT_EQ(tcp_csum(t->bytes(), kIpB, kIpA), 0);
  TcpOptions o;
  ASSERT_TRUE(t->parse_options(o));
  EXPECT_EQ(o.mss, 1460);
  EXPECT_EQ(o.ts_val, 192116407u);
  EXPECT_EQ(o.ts_ecr, 2148714870u);
  EXPECT_EQ(o.wscale, 10);
}

TEST(Tcp, CapturedDataSegment) {
  auto t = TcpView::parse(td::l4_of(td::kTcpData));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->flags(), tcpflag::kPsh | tcpflag::kAck);
  EXPECT_EQ(t->header_len(), 32u);
  EXPECT_EQ(t->window(), 63);  // scaled by 2^10
  ASSERT_EQ(t->payload().size(), 6u);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(t->payload().data()), 6), "hello\n");
  EXPECT_EQ(t->seg_len(), 6u);
  EXPECT_EQ(tcp_csum(t->bytes(), kIpA, kIpB), 0);
  TcpOptions o;
  ASSERT_TRUE(t->parse_options(o));
  EXPECT_FALSE(o.mss);
  EXPECT_FALSE(o.wscale);
  EXPECT_FALSE(o.sack_permitted);
  EXPECT_EQ(o.ts_val, 2148714870u);
  EXPECT_EQ(o.ts_ecr, 192116407u);
}

// The 12 bytes NOP, NOP, Timestamps are read in place; every other layout of the same
// length goes through the general loop and means what it says.
TEST(Tcp, TwelveByteOptionLayouts) {
  using namespace tcpopt;
  TcpOptions o;
  ASSERT_TRUE(options_ok({kNop, kNop, kTimestamp, 10, 1, 2, 3, 4, 5, 6, 7, 8}, &o));
  EXPECT_EQ(o.ts_val, 0x01020304u);
  EXPECT_EQ(o.ts_ecr, 0x05060708u);
  EXPECT_EQ(o.sack_count, 0);
  EXPECT_FALSE(o.mss);
  // Timestamps first, then two NOPs: the same values.
  ASSERT_TRUE(options_ok({kTimestamp, 10, 1, 2, 3, 4, 5, 6, 7, 8, kNop, kNop}, &o));
  EXPECT_EQ(o.ts_val, 0x01020304u);
  EXPECT_EQ(o.ts_ecr, 0x05060708u);
  // NOP, NOP and a timestamp option of a wrong length: malformed, not read as timestamps.
  EXPECT_FALSE(options_ok({kNop, kNop, kTimestamp, 11, 1, 2, 3, 4, 5, 6, 7, 8}));
  // NOP, NOP, one SACK block: no timestamp.
  ASSERT_TRUE(options_ok({kNop, kNop, kSack, 10, 0, 0, 0, 1, 0, 0, 0, 9}, &o));
  EXPECT_FALSE(o.ts_val);
  ASSERT_EQ(o.sack_count, 1);
  EXPECT_EQ(o.sack[0].right, SeqNum(9));
  // Longer headers with the same first word are parsed whole: the SACK block after it.
  ASSERT_TRUE(options_ok({kNop, kNop, kTimestamp, 10, 1, 2, 3, 4, 5, 6, 7, 8,
                          kNop, kNop, kSack,      10, 0, 0, 0, 1, 0, 0, 0, 9},
                         &o));
  EXPECT_EQ(o.ts_val, 0x01020304u);
  EXPECT_EQ(o.sack_count, 1);
}

// The 20 bytes of a SYN's options (MSS, SACK permitted, Timestamps, NOP, Window scale)
// are read in place; a layout of the same length that differs anywhere goes through the
// general loop and means what it says.
TEST(Tcp, SynOptionLayouts) {
  using namespace tcpopt;
  const std::vector<uint8_t> syn = {
      kMss, 4, 0x05, 0xb4, kSackPermitted, 2,       kTimestamp, 10, 1, 2, 3, 4,
      5,    6, 7,    8,    kNop,           kWscale, 3,          7};
  TcpOptions o;
  ASSERT_TRUE(options_ok(syn, &o));
  EXPECT_EQ(o.mss, 1460);
  EXPECT_TRUE(o.sack_permitted);
  EXPECT_EQ(o.ts_val, 0x01020304u);
  EXPECT_EQ(o.ts_ecr, 0x05060708u);
  EXPECT_EQ(o.wscale, 7);
  EXPECT_EQ(o.sack_count, 0);
  // The window scale option's length wrong: malformed, as the general loop says.
  std::vector<uint8_t> bad = syn;
  bad[18] = 4;
  EXPECT_FALSE(options_ok(bad));
  // NOP, NOP instead of SACK permitted: no SACK, the same other values.
  std::vector<uint8_t> nosack = syn;
  nosack[4] = kNop;
  nosack[5] = kNop;
  ASSERT_TRUE(options_ok(nosack, &o));
  EXPECT_FALSE(o.sack_permitted);
  EXPECT_EQ(o.mss, 1460);
  EXPECT_EQ(o.wscale, 7);
  // NOP, NOP, NOP, NOP where the window scale was: none.
  std::vector<uint8_t> nows = syn;
  for (size_t i = 16; i < 20; ++i) nows[i] = kNop;
  o = TcpOptions{};
  ASSERT_TRUE(options_ok(nows, &o));
  EXPECT_FALSE(o.wscale);
  EXPECT_EQ(o.ts_val, 0x01020304u);
  // An MSS option of the wrong length: malformed.
  std::vector<uint8_t> badmss = syn;
  badmss[1] = 5;
  EXPECT_FALSE(options_ok(badmss));
}

TEST(Tcp, FlagsAndSegLen) {
  auto b = l4(td::kTcpData);
  b[13] = tcpflag::kFin | tcpflag::kAck | tcpflag::kUrg | tcpflag::kRst;
  auto t = TcpView::parse(b);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->fin() && t->has_ack() && t->urg() && t->rst());
  EXPECT_FALSE(t->syn() || t->psh());
  EXPECT_EQ(t->seg_len(), 7u);  // 6 bytes + FIN
  b[13] = tcpflag::kSyn | tcpflag::kFin | tcpflag::kEce | tcpflag::kCwr;
  EXPECT_EQ(TcpView::parse(b)->seg_len(), 8u);
}

TEST(Tcp, TruncatedAtEveryLength) {
  auto b = td::l4_of(td::kTcpSyn);
  for (size_t n = 0; n <= b.size(); ++n) {
    TcpView::Error err = TcpView::Error::kNone;
    auto t = TcpView::parse(b.first(n), &err);
    if (n < 20) {
      EXPECT_FALSE(t) << n;
      EXPECT_EQ(err, TcpView::Error::kTruncated) << n;
    } else if (n < 40) {
      // The fixed header is there but the declared 40-byte header is not.
      EXPECT_FALSE(t) << n;
      EXPECT_EQ(err, TcpView::Error::kBadDataOffset) << n;
    } else {
      EXPECT_TRUE(t) << n;
      EXPECT_EQ(err, TcpView::Error::kNone);
    }
  }
}

TEST(Tcp, BadDataOffset) {
  auto b = l4(td::kTcpData);  // 38 bytes
  for (uint8_t off = 0; off < 16; ++off) {
    b[12] = static_cast<uint8_t>(off << 4);
    TcpView::Error err = TcpView::Error::kNone;
    auto t = TcpView::parse(b, &err);
    bool ok = off >= 5 && off * 4u <= b.size();
    EXPECT_EQ(t.has_value(), ok) << int{off};
    EXPECT_EQ(err, ok ? TcpView::Error::kNone : TcpView::Error::kBadDataOffset) << int{off};
    if (t) {
      EXPECT_EQ(t->header_len(), off * 4u);
      EXPECT_EQ(t->payload().size(), b.size() - off * 4u);
    }
  }
  // The low nibble of byte 12 (reserved bits, AE) does not change the data offset.
  b[12] = 0x8f;
  auto t = TcpView::parse(b);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->header_len(), 32u);
}

TEST(Tcp, OptionsWellFormedVariants) {
  TcpOptions o;
  // Only NOPs and an EOL.
  EXPECT_TRUE(options_ok({1, 1, 1, 0}, &o));
  EXPECT_FALSE(o.mss || o.wscale || o.ts_val || o.sack_permitted);
  // Garbage after EOL is ignored.
  EXPECT_TRUE(options_ok({0, 0xff, 0x00, 0x27}, &o));
  EXPECT_FALSE(o.mss);
  // Unknown kinds are skipped by length (TCP-AO 29, experimental 254 with 2 and 6 bytes).
  EXPECT_TRUE(options_ok({29, 4, 0xaa, 0xbb, 254, 2, 2, 4, 0x23, 0x28, 254, 6, 1, 2, 3, 4}, &o));
  EXPECT_EQ(o.mss, 9000);
  // Options exactly filling the 40-byte maximum.
  std::vector<uint8_t> full = {2, 4, 0x05, 0xb4, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 3, 3, 14};
  while (full.size() < 40) full.push_back(1);
  EXPECT_TRUE(options_ok(full, &o));
  EXPECT_EQ(o.wscale, 14);
  EXPECT_EQ(o.ts_val, 1u);
  EXPECT_EQ(o.ts_ecr, 2u);
  // A window scale above RFC 7323's 14 is reported as sent; clamping is TCP's job.
  EXPECT_TRUE(options_ok({3, 3, 15, 0}, &o));
  EXPECT_EQ(o.wscale, 15);
}

TEST(Tcp, OptionsSackBlocks) {
  for (uint8_t n = 1; n <= 4; ++n) {
    std::vector<uint8_t> opts = {1, 1, tcpopt::kSack, static_cast<uint8_t>(2 + 8 * n)};
    opts.resize(4 + 8 * size_t{n});
    for (uint8_t k = 0; k < n; ++k) {
      store_be32(opts.data() + 4 + 8 * k, 0xfffffff0u + k * 0x100);
      store_be32(opts.data() + 8 + 8 * k, 0xfffffff0u + k * 0x100 + 0x80);
    }
    TcpOptions o;
    ASSERT_TRUE(options_ok(opts, &o)) << int{n};
    ASSERT_EQ(o.sack_count, n);
    for (uint8_t k = 0; k < n; ++k) {
      EXPECT_EQ(o.sack[k].left, SeqNum(0xfffffff0u + k * 0x100));
      EXPECT_EQ(o.sack[k].right - o.sack[k].left, 0x80);
    }
  }
}

TEST(Tcp, OptionsMalformedLengths) {
  struct Case {
    std::vector<uint8_t> opts;
    const char* what;
  };
  const Case bad[] = {
      {{2, 3, 5, 0}, "MSS length 3"},
      {{2, 5, 5, 0xb4, 0}, "MSS length 5"},
      {{2, 2, 1, 1}, "MSS length 2"},
      {{3, 2, 1, 1}, "WS length 2"},
      {{3, 4, 7, 0}, "WS length 4"},
      {{4, 3, 0, 1}, "SACK-permitted length 3"},
      {{4, 4, 0, 0}, "SACK-permitted length 4"},
      {{8, 9, 0, 0, 0, 1, 0, 0, 0}, "TS length 9"},
      {{8, 11, 0, 0, 0, 1, 0, 0, 0, 2, 0}, "TS length 11"},
      {{5, 2, 1, 1}, "SACK with no blocks"},
      {{5, 9, 0, 0, 0, 1, 0, 0, 0}, "SACK length 9"},
      {{5, 11, 0, 0, 0, 1, 0, 0, 0, 2, 0}, "SACK length 11"},
      {{5, 26, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4},
       "SACK length 26 running past the header"},
      {{30, 0, 1, 1}, "unknown kind length 0"},
      {{30, 1, 1, 1}, "unknown kind length 1"},
      {{2, 0, 1, 1}, "MSS length 0 (would loop forever if accepted)"},
      {{1, 1, 1, 8}, "TS kind in the last byte, no length"},
      {{1, 1, 8, 10}, "TS running past the header"},
      {{2, 4, 5, 0xb4, 30, 40, 0, 0}, "unknown option running past the header"},
  };
  for (const Case& c : bad) {
    EXPECT_FALSE(options_ok(c.opts)) << c.what;
  }
}

TEST(Tcp, OptionsCutAtEveryLengthOfTheCapturedSyn) {
  // The SYN's options MSS(4) SACK_PERM(2) TS(10) NOP(1) WS(3), cut after `cut` bytes
  // and padded with EOL. Cut between options, exactly the options before the cut are
  // found; cut inside one, the parser must stay within the header (checked by ASan). (A
  // cut timestamp may still parse: its zero TSecr is indistinguishable from EOL padding.)
  auto syn = l4(td::kTcpSyn);
  std::vector<uint8_t> opts(syn.begin() + 20, syn.begin() + 40);
  for (size_t cut = 0; cut <= opts.size(); ++cut) {
    auto b = with_options({opts.begin(), opts.begin() + static_cast<std::ptrdiff_t>(cut)});
    TcpOptions o;
    bool ok = TcpView::parse(b)->parse_options(o);
    SCOPED_TRACE(cut);
    if (cut == 0 || cut == 4 || cut == 6 || cut == 16 || cut == 17 || cut == 20) {
      ASSERT_TRUE(ok);
      EXPECT_EQ(o.mss.has_value(), cut >= 4);
      EXPECT_EQ(o.sack_permitted, cut >= 6);
      EXPECT_EQ(o.ts_val.has_value(), cut >= 16);
      EXPECT_EQ(o.wscale.has_value(), cut >= 20);
    }
    if (cut < 20) {
      EXPECT_FALSE(o.wscale.has_value() && *o.wscale == 10);
    }
  }
  // Kind and length present but the value cut off by the end of the header.
  EXPECT_FALSE(options_ok({1, 1, 2, 4}));
  EXPECT_FALSE(options_ok({1, 1, 3, 3}));
  EXPECT_FALSE(options_ok({8, 10, 0, 0, 0, 1}));
}

TEST(Tcp, EmitReproducesLinuxSyn) {
  TcpRepr r;
  r.src_port = 35118;
  r.dst_port = 8080;
  r.seq = SeqNum(1054103715u);
  r.flags = tcpflag::kSyn;
  r.window = 64240;
  r.mss = 1460;
  r.sack_permitted = true;
  r.ts_val = 2148714870u;
  r.ts_ecr = 0;
  r.wscale = 10;
  EXPECT_EQ(r.header_len(), 40u);
  std::array<uint8_t, 60> out;
  out.fill(0xee);
  ASSERT_EQ(emit_tcp(out.data(), r), 40u);
  EXPECT_EQ(load_be16(out.data() + 16), 0);  // checksum left zero
  store_be16(out.data() + 16, tcp_csum(std::span(out).first(40), kIpA, kIpB));
  auto want = td::l4_of(td::kTcpSyn);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), out.begin()));
  // The inline writer of a SYN with every option (the stack's SYNs) writes the same.
  std::array<uint8_t, 60> inlined;
  inlined.fill(0xee);
  ASSERT_EQ(emit_tcp_syn(inlined.data(), r), 40u);
  store_be16(inlined.data() + 16, tcp_csum(std::span(inlined).first(40), kIpA, kIpB));
  EXPECT_TRUE(std::equal(want.begin(), want.end(), inlined.begin()));
}

TEST(Tcp, EmitReproducesLinuxDataSegmentHeader) {
  TcpRepr r;
  r.src_port = 35118;
  r.dst_port = 8080;
  r.seq = SeqNum(1054103716u);
  r.ack = SeqNum(4252358006u);
  r.flags = tcpflag::kPsh | tcpflag::kAck;
  r.window = 63;
  r.ts_val = 2148714870u;
  r.ts_ecr = 192116407u;
  std::vector<uint8_t> out(38);
  ASSERT_EQ(emit_tcp(out.data(), r), 32u);
  const char* hello = "hello\n";
  std::copy(hello, hello + 6, out.begin() + 32);
  store_be16(out.data() + 16, tcp_csum(out, kIpA, kIpB));
  auto want = td::l4_of(td::kTcpData);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), out.begin()));
}

// Every combination of options: header_len() agrees with emit_tcp(), the result is a
// valid header, and parsing it returns what was emitted (SACK blocks clipped to room).
TEST(Tcp, EmitParseRoundTripAllOptionCombinations) {
  for (int mask = 0; mask < 16; ++mask) {
    for (uint8_t sacks = 0; sacks <= 5; ++sacks) {
      TcpRepr r;
      r.src_port = 1;
      r.dst_port = 65535;
      r.seq = SeqNum(0xffffffffu);
      r.ack = SeqNum(0x80000000u);
      r.flags = tcpflag::kAck;
      r.window = 0xffff;
      if (mask & 1) r.mss = 8960;
      if (mask & 2) r.wscale = 7;
      if (mask & 4) r.sack_permitted = true;
      if (mask & 8) {
        r.ts_val = 0xdeadbeef;
        r.ts_ecr = 0x01020304;
      }
      r.sack_count = sacks;
      for (size_t k = 0; k < r.sack.size(); ++k) {
        r.sack[k] = {SeqNum(0x1000u * static_cast<uint32_t>(k + 1)),
                     SeqNum(0x1000u * static_cast<uint32_t>(k + 1) + 0x800)};
      }
      std::array<uint8_t, 64> out;
      out.fill(0xee);
      size_t hl = emit_tcp(out.data(), r);
      SCOPED_TRACE(testing::Message() << "mask " << mask << " sacks " << int{sacks});
      EXPECT_EQ(hl, r.header_len());
      EXPECT_EQ(hl % 4, 0u);
      EXPECT_LE(hl, TcpView::kMaxHeaderLen);
      EXPECT_EQ(out[60], 0xee);  // never writes past 60 bytes
      auto t = TcpView::parse(std::span(out).first(hl));
      ASSERT_TRUE(t);
      EXPECT_EQ(t->header_len(), hl);
      EXPECT_EQ(t->src_port(), 1);
      EXPECT_EQ(t->dst_port(), 65535);
      EXPECT_EQ(t->seq(), r.seq);
      EXPECT_EQ(t->ack(), r.ack);
      EXPECT_EQ(t->flags(), tcpflag::kAck);
      EXPECT_EQ(t->window(), 0xffff);
      EXPECT_EQ(t->urgent(), 0);
      TcpOptions o;
      ASSERT_TRUE(t->parse_options(o));
      EXPECT_EQ(o.mss, r.mss);
      EXPECT_EQ(o.wscale, r.wscale);
      EXPECT_EQ(o.sack_permitted, r.sack_permitted);
      EXPECT_EQ(o.ts_val, r.ts_val);
      if (r.ts_val) {
        EXPECT_EQ(o.ts_ecr, r.ts_ecr);
      }
      // Room for SACK: 40 option bytes minus the others, 4 for the kind/len/padding.
      size_t used =
          (r.mss ? 4 : 0) + (r.ts_val ? 12 : (r.sack_permitted ? 4 : 0)) + (r.wscale ? 4 : 0);
      size_t fit = used + 4 > 40 ? 0 : (40 - used - 4) / 8;
      size_t expect = std::min<size_t>({sacks, fit, 4});
      EXPECT_EQ(o.sack_count, expect);
      for (size_t k = 0; k < expect; ++k) {
        EXPECT_EQ(o.sack[k].left, r.sack[k].left);
        EXPECT_EQ(o.sack[k].right, r.sack[k].right);
      }
    }
  }
}

TEST(Tcp, TimestampsLeaveRoomForThreeSackBlocks) {
  // As on Linux: with timestamps on an established connection, three SACK blocks fit.
  TcpRepr r;
  r.ts_val = 1;
  r.sack_count = 4;
  EXPECT_EQ(r.header_len(), 20u + 12u + 4u + 3u * 8u);
}

}  // namespace
}  // namespace ws::wire
