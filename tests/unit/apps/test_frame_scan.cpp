// FrameDecoder::scan (count and verify many frames per call, for sinks) and the word-wide
// check_pattern: the same answers as the event path, at any split and for any wrong byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "stack/codec/framing.hpp"

namespace ws {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes stream_of(const std::vector<uint32_t>& sizes) {
  Bytes out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t at = out.size();
    out.resize(at + kFrameHeaderBytes + sizes[i]);
    EXPECT_TRUE(write_frame_header(std::span<uint8_t>(out).subspan(at), sizes[i]));
    fill_pattern(i, 0, std::span<uint8_t>(out).subspan(at + kFrameHeaderBytes, sizes[i]));
  }
  return out;
}

std::vector<uint32_t> mixed_sizes() {
  std::vector<uint32_t> sizes;
  uint64_t lcg = 5;
  for (int i = 0; i < 600; ++i) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = lcg >> 33;
    sizes.push_back(r % 7 == 0 ? 0 : (r % 5 == 0 ? static_cast<uint32_t>(r % 5000) : 8));
  }
  return sizes;
}

// Scans `s` in pieces from `piece()`; returns the sum of the results.
template <class Piece>
FrameScan scan_in_pieces(FrameDecoder& dec, const Bytes& s, bool verify, Piece piece) {
  FrameScan total;
  size_t at = 0;
  while (at < s.size()) {
    const size_t n = std::min(piece(), s.size() - at);
    const FrameScan r = dec.scan(std::span<const uint8_t>(s).subspan(at, n), verify);
    total.messages += r.messages;
    total.mismatches += r.mismatches;
    total.error |= r.error;
    at += n;
  }
  return total;
}

TEST(FrameScan, CountsEveryMessageAtAnyPieceSize) {
  const std::vector<uint32_t> sizes = mixed_sizes();
  const Bytes s = stream_of(sizes);
  for (size_t piece : {size_t{1}, size_t{3}, size_t{7}, size_t{13}, size_t{1448}, s.size()}) {
    for (bool verify : {false, true}) {
      FrameDecoder dec;
      const FrameScan r = scan_in_pieces(dec, s, verify, [piece] { return piece; });
      EXPECT_EQ(r.messages, sizes.size()) << piece;
      EXPECT_EQ(r.mismatches, 0u) << piece;
      EXPECT_FALSE(r.error);
      EXPECT_FALSE(dec.in_message());
      EXPECT_EQ(dec.messages(), sizes.size());
      EXPECT_EQ(dec.stream_bytes(), s.size());
    }
  }
}

TEST(FrameScan, MixesWithNextAndKeepsCounters) {
  const std::vector<uint32_t> sizes = mixed_sizes();
  const Bytes s = stream_of(sizes);
  FrameDecoder a;
  FrameDecoder b;
  uint64_t events_done = 0;
  size_t at = 0;
  bool use_scan = false;
  while (at < s.size()) {
    const size_t n = std::min<size_t>(997, s.size() - at);
    const std::span<const uint8_t> piece(s.data() + at, n);
    a.feed(piece, [&](const FrameEvent& ev) {
      if (ev.kind == FrameEventKind::kMessageComplete) ++events_done;
    });
    if (use_scan) {
      b.scan(piece, true);
    } else {
      b.feed(piece, [](const FrameEvent&) {});
    }
    use_scan = !use_scan;
    at += n;
    EXPECT_EQ(a.messages(), b.messages());
    EXPECT_EQ(a.payload_bytes(), b.payload_bytes());
    EXPECT_EQ(a.stream_bytes(), b.stream_bytes());
    EXPECT_EQ(a.in_message(), b.in_message());
  }
  EXPECT_EQ(events_done, sizes.size());
}

// take_frame: whole frames at the front are taken in place, with the counters next() keeps;
// a frame cut anywhere (header or payload) is left whole to next(), which completes it; so
// any mix of the two decodes the stream as next() alone does.
TEST(TakeFrame, WholeFramesInPlaceCutOnesLeftToNext) {
  const std::vector<uint32_t> sizes = mixed_sizes();
  const Bytes s = stream_of(sizes);
  for (size_t piece : {size_t{1}, size_t{5}, size_t{68}, size_t{997}, s.size()}) {
    FrameDecoder a;
    FrameDecoder b;
    uint64_t taken = 0;
    uint64_t completed = 0;
    uint64_t bad = 0;
    for (size_t at = 0; at < s.size(); at += piece) {
      std::span<const uint8_t> in(s.data() + at, std::min(piece, s.size() - at));
      a.feed(in, [](const FrameEvent&) {});
      std::span<const uint8_t> payload;
      while (b.take_frame(in, payload)) {
        const uint64_t seq = b.messages() - 1;
        if (payload.size() != sizes[seq] || check_pattern(seq, 0, payload) != payload.size()) {
          ++bad;
        }
        ++taken;
      }
      b.feed(in, [&](const FrameEvent& ev) {
        if (ev.kind == FrameEventKind::kMessageComplete) ++completed;
      });
      EXPECT_EQ(a.messages(), b.messages()) << piece;
      EXPECT_EQ(a.payload_bytes(), b.payload_bytes()) << piece;
      EXPECT_EQ(a.stream_bytes(), b.stream_bytes()) << piece;
      EXPECT_EQ(a.in_message(), b.in_message()) << piece;
    }
    EXPECT_EQ(bad, 0u) << piece;
    EXPECT_EQ(taken + completed, sizes.size()) << piece;
    if (piece == s.size()) {
      EXPECT_EQ(taken, sizes.size());
    }
    if (piece == 1) {
      EXPECT_EQ(taken, 0u);
    }
  }
}

// Nothing is taken, and nothing consumed, where take_frame does not apply: a length over
// the limit (next() then reports the error once), a decoder in the middle of a message,
// framing none, collect mode.
TEST(TakeFrame, DeclinesWithoutConsuming) {
  std::span<const uint8_t> payload;
  const Bytes big = stream_of({100});
  FrameDecoder small({.framing = Framing::kLength32, .max_message_bytes = 99, .collect = false});
  std::span<const uint8_t> in(big);
  EXPECT_FALSE(small.take_frame(in, payload));
  EXPECT_EQ(in.size(), big.size());
  EXPECT_EQ(small.stream_bytes(), 0u);
  EXPECT_EQ(small.next(in).kind, FrameEventKind::kError);

  const Bytes two = stream_of({8, 8});
  FrameDecoder mid;
  std::span<const uint8_t> head(two.data(), 6);  // header and 2 payload bytes
  mid.feed(head, [](const FrameEvent&) {});
  std::span<const uint8_t> rest(two.data() + 6, two.size() - 6);
  EXPECT_FALSE(mid.take_frame(rest, payload));
  EXPECT_EQ(rest.size(), two.size() - 6);

  for (const FrameDecoderConfig& c :
       {FrameDecoderConfig{.framing = Framing::kNone},
        FrameDecoderConfig{
            .framing = Framing::kLength32, .max_message_bytes = 64, .collect = true}}) {
    FrameDecoder d(c);
    std::span<const uint8_t> all(two);
    EXPECT_FALSE(d.take_frame(all, payload));
    EXPECT_EQ(all.size(), two.size());
  }
}

// Runs of equal frames are counted by comparing headers four at a time (framing.cpp,
// same_header_run): runs of every length around that step, of several frame sizes, cut by
// every piece size, give the event path's counts.
TEST(FrameScan, RunsOfEqualFramesCountLikeTheEventPath) {
  std::vector<uint32_t> sizes;
  for (uint32_t len : {8u, 0u, 64u, 1u, 1000u, 8u}) {
    for (int run = 1; run <= 10; ++run) {
      for (int i = 0; i < run; ++i) sizes.push_back(len);
      sizes.push_back(len + 1);  // a different length ends the run
    }
  }
  const Bytes s = stream_of(sizes);
  for (size_t piece : {size_t{1}, size_t{11}, size_t{12}, size_t{48}, size_t{1448}, s.size()}) {
    FrameDecoder events;
    FrameDecoder scanned;
    uint64_t complete = 0;
    uint64_t scanned_messages = 0;
    for (size_t at = 0; at < s.size(); at += piece) {
      const std::span<const uint8_t> p(s.data() + at, std::min(piece, s.size() - at));
      events.feed(p, [&](const FrameEvent& ev) {
        if (ev.kind == FrameEventKind::kMessageComplete) ++complete;
      });
      const FrameScan r = scanned.scan(p, false);
      EXPECT_FALSE(r.error);
      scanned_messages += r.messages;
      EXPECT_EQ(events.messages(), scanned.messages()) << piece << " at " << at;
      EXPECT_EQ(events.payload_bytes(), scanned.payload_bytes()) << piece << " at " << at;
      EXPECT_EQ(events.stream_bytes(), scanned.stream_bytes()) << piece << " at " << at;
    }
    EXPECT_EQ(complete, sizes.size());
    EXPECT_EQ(scanned_messages, sizes.size());
  }
}

// An oversize header inside a run of equal frames stops the count at that frame.
TEST(FrameScan, OversizeLengthInsideARunIsOneError) {
  Bytes s = stream_of(std::vector<uint32_t>(9, 8));
  ASSERT_TRUE(write_frame_header(std::span<uint8_t>(s).subspan(6 * 12), 5000));
  FrameDecoder dec({.framing = Framing::kLength32, .max_message_bytes = 1000, .collect = false});
  const FrameScan r = dec.scan(s, false);
  EXPECT_EQ(r.messages, 6u);
  EXPECT_TRUE(r.error);
  EXPECT_EQ(dec.messages(), 6u);
}

TEST(FrameScan, FindsEveryWrongByteWholeOrCut) {
  const std::vector<uint32_t> sizes = {8, 1, 64, 0, 37, 8, 200};
  const Bytes good = stream_of(sizes);
  // Flip each payload byte in turn (headers are lengths, not pattern); scan whole and in
  // 5-byte pieces: exactly one mismatch is found, and the counts stay right.
  size_t at = 0;
  size_t flipped = 0;
  for (size_t m = 0; m < sizes.size(); ++m) {
    at += kFrameHeaderBytes;
    for (size_t i = 0; i < sizes[m]; ++i) {
      Bytes bad = good;
      bad[at + i] ^= 0x10;
      for (size_t piece : {size_t{5}, bad.size()}) {
        FrameDecoder dec;
        const FrameScan r = scan_in_pieces(dec, bad, true, [piece] { return piece; });
        EXPECT_EQ(r.mismatches, 1u) << "message " << m << " byte " << i << " piece " << piece;
        EXPECT_EQ(r.messages, sizes.size());
        FrameDecoder quiet;
        EXPECT_EQ(scan_in_pieces(quiet, bad, false, [piece] { return piece; }).mismatches, 0u);
      }
      ++flipped;
    }
    at += sizes[m];
  }
  EXPECT_EQ(flipped, 318u);
}

TEST(FrameScan, MessagesDeliveredInPlaceOfOthersFail) {
  // Message 1's frame where message 0 belongs: right lengths, wrong pattern key.
  Bytes s = stream_of({8, 8});
  std::copy(s.begin() + 12, s.begin() + 24, s.begin());
  FrameDecoder dec;
  EXPECT_EQ(dec.scan(s, true).mismatches, 1u);  // message 1 itself is right
}

TEST(FrameScan, OversizeLengthIsOneError) {
  Bytes s = stream_of({8, 8});
  const Bytes bad = {0x7f, 0xff, 0xff, 0xff, 1, 2, 3};
  s.insert(s.end(), bad.begin(), bad.end());
  FrameDecoder dec({.framing = Framing::kLength32, .max_message_bytes = 1000, .collect = false});
  const FrameScan r = dec.scan(s, true);
  EXPECT_EQ(r.messages, 2u);
  EXPECT_TRUE(r.error);
  EXPECT_TRUE(dec.failed());
  const FrameScan again = dec.scan(s, true);  // swallowed, no second error
  EXPECT_EQ(again.messages, 0u);
  EXPECT_FALSE(again.error);
}

TEST(FrameScan, FramingNoneVerifiesTheStreamPattern) {
  Bytes s(5000);
  fill_pattern(0, 0, s);
  FrameDecoder dec({.framing = Framing::kNone, .max_message_bytes = 0, .collect = false});
  EXPECT_EQ(scan_in_pieces(dec, s, true, [] { return size_t{333}; }).mismatches, 0u);
  s[4321] ^= 1;
  FrameDecoder dec2({.framing = Framing::kNone, .max_message_bytes = 0, .collect = false});
  const FrameScan r = scan_in_pieces(dec2, s, true, [] { return size_t{333}; });
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.messages, 0u);
}

TEST(FrameScan, CollectModeVerifiesWholeMessages) {
  const std::vector<uint32_t> sizes = {8, 3000, 0, 9};
  Bytes s = stream_of(sizes);
  FrameDecoder dec({.framing = Framing::kLength32, .max_message_bytes = 4096, .collect = true});
  FrameScan r = scan_in_pieces(dec, s, true, [] { return size_t{700}; });
  EXPECT_EQ(r.messages, 4u);
  EXPECT_EQ(r.mismatches, 0u);
  s[12 + 4 + 1500] ^= 4;
  FrameDecoder dec2({.framing = Framing::kLength32, .max_message_bytes = 4096, .collect = true});
  r = scan_in_pieces(dec2, s, true, [] { return size_t{700}; });
  EXPECT_EQ(r.mismatches, 1u);
}

TEST(Pattern, WordWideCheckReportsTheFirstWrongByteAtAnyAlignment) {
  Bytes m(300);
  for (uint64_t offset : {0u, 1u, 5u, 8u, 13u}) {
    fill_pattern(9, offset, m);
    EXPECT_EQ(check_pattern(9, offset, m), m.size());
    EXPECT_EQ(check_pattern(10, offset, m), 0u);  // another message's key
    for (size_t i = 0; i < m.size(); i += 7) {
      Bytes bad = m;
      bad[i] ^= 0x80;
      if (i + 3 < bad.size()) bad[i + 3] ^= 1;  // a second one behind: the first is reported
      EXPECT_EQ(check_pattern(9, offset, bad), i) << offset;
    }
  }
}

}  // namespace
}  // namespace ws
