#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "stack/codec/framing.hpp"

namespace ws {
namespace {

using Bytes = std::vector<uint8_t>;

// A stream of length32 messages with the given payload sizes and pattern payloads.
Bytes make_stream(const std::vector<uint32_t>& sizes, uint64_t first_seq = 0) {
  Bytes out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t at = out.size();
    out.resize(at + kFrameHeaderBytes + sizes[i]);
    EXPECT_TRUE(write_frame_header(std::span<uint8_t>(out).subspan(at), sizes[i]));
    fill_pattern(first_seq + i, 0,
                 std::span<uint8_t>(out).subspan(at + kFrameHeaderBytes, sizes[i]));
  }
  return out;
}

// What a receiver saw: per message its length and whether every payload byte
// arrived in order at the right offset with the right pattern.
struct Observed {
  std::vector<uint64_t> lengths;
  uint64_t payload_bytes = 0;
  uint64_t bad_bytes = 0;
  uint64_t out_of_order = 0;
  uint64_t errors = 0;
  uint64_t error_length = 0;
  uint64_t expect_offset = 0;
  Bytes collected;  // collect mode: concatenated whole messages

  void on(const FrameEvent& ev) {
    switch (ev.kind) {
      case FrameEventKind::kPayload:
        if (ev.message != lengths.size() || ev.offset != expect_offset) ++out_of_order;
        if (check_pattern(ev.message, ev.offset, ev.data) != ev.data.size()) ++bad_bytes;
        expect_offset += ev.data.size();
        payload_bytes += ev.data.size();
        break;
      case FrameEventKind::kMessageComplete:
        if (ev.message != lengths.size()) ++out_of_order;
        if (!ev.data.empty()) {
          if (ev.data.size() != ev.length) ++out_of_order;
          if (check_pattern(ev.message, 0, ev.data) != ev.data.size()) ++bad_bytes;
          collected.insert(collected.end(), ev.data.begin(), ev.data.end());
        } else if (expect_offset != ev.length) {
          ++out_of_order;
        }
        lengths.push_back(ev.length);
        expect_offset = 0;
        break;
      case FrameEventKind::kError:
        ++errors;
        error_length = ev.length;
        break;
      case FrameEventKind::kNeedMore:
        ADD_FAILURE() << "feed() must not pass kNeedMore";
        break;
    }
  }
};

// Feeds `stream` in pieces whose sizes come from `next_piece`.
template <class NextPiece>
Observed decode(const Bytes& stream, FrameDecoder& dec, NextPiece next_piece) {
  Observed obs;
  size_t at = 0;
  while (at < stream.size()) {
    const size_t n = std::min(next_piece(), stream.size() - at);
    const size_t used = dec.feed(std::span<const uint8_t>(stream).subspan(at, n),
                                 [&](const FrameEvent& ev) { obs.on(ev); });
    EXPECT_EQ(used, n);  // without backpressure every byte is consumed
    at += n;
  }
  return obs;
}

void expect_clean(const Observed& obs, const std::vector<uint32_t>& sizes) {
  EXPECT_EQ(obs.errors, 0u);
  EXPECT_EQ(obs.bad_bytes, 0u);
  EXPECT_EQ(obs.out_of_order, 0u);
  ASSERT_EQ(obs.lengths.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(obs.lengths[i], sizes[i]) << i;
}

TEST(FrameHeader, BigEndianLength) {
  uint8_t h[4] = {};
  ASSERT_TRUE(write_frame_header(h, 0x01020304));
  EXPECT_EQ(h[0], 0x01);
  EXPECT_EQ(h[1], 0x02);
  EXPECT_EQ(h[2], 0x03);
  EXPECT_EQ(h[3], 0x04);
  uint8_t small[3] = {};
  EXPECT_FALSE(write_frame_header(small, 1));
  EXPECT_FALSE(write_frame_header(h, uint64_t{1} << 32));
}

TEST(Pattern, KnownValuesMatchTheDocumentedFormula) {
  // docs/framing.md gives these bytes for seq 0 and seq 1; a change here breaks
  // every peer that implemented the documented formula.
  const uint64_t k0 = pattern_key(0);
  EXPECT_EQ(k0, 0xE220A8397B1DCDAFull);
  for (uint64_t off = 0; off < 8; ++off) {
    EXPECT_EQ(pattern_byte(0, off), static_cast<uint8_t>(k0 >> (8 * off)));
  }
  // Word 1 adds ((1 * 0x9E3779B1) mod 2^32) >> 24 = 0x9E to every key byte.
  EXPECT_EQ(pattern_byte(0, 8), static_cast<uint8_t>(0xAF + 0x9E));
}

TEST(Pattern, FillMatchesBytewiseAtAnyAlignment) {
  for (uint64_t seq : {0ull, 1ull, 77ull, 1ull << 40}) {
    for (uint64_t off = 0; off < 20; ++off) {
      for (size_t len = 0; len < 40; ++len) {
        Bytes b(len);
        fill_pattern(seq, off, b);
        for (size_t i = 0; i < len; ++i) ASSERT_EQ(b[i], pattern_byte(seq, off + i));
      }
    }
  }
}

TEST(Pattern, CheckFindsFirstWrongByte) {
  Bytes b(5000);
  fill_pattern(9, 123, b);
  EXPECT_EQ(check_pattern(9, 123, b), b.size());
  EXPECT_NE(check_pattern(8, 123, b), b.size());   // another message
  EXPECT_NE(check_pattern(9, 124, b), b.size());   // shifted by one
  EXPECT_NE(check_pattern(9, 2171, b), b.size());  // shifted by 2048
  b[4097] ^= 1;
  EXPECT_EQ(check_pattern(9, 123, b), 4097u);
}

TEST(Pattern, SelfCheckNeedsNoSequenceNumber) {
  Bytes b(1500);
  fill_pattern(31337, 0, b);
  EXPECT_TRUE(check_pattern_self(b));
  b[900] ^= 0x40;
  EXPECT_FALSE(check_pattern_self(b));
  EXPECT_TRUE(check_pattern_self(std::span<const uint8_t>(b).first(8)));
}

TEST(FrameDecoder, ByteByByte) {
  const std::vector<uint32_t> sizes = {1, 0, 5, 300, 0, 0, 4, 17};
  const Bytes stream = make_stream(sizes);
  FrameDecoder dec;
  const Observed obs = decode(stream, dec, [] { return size_t{1}; });
  expect_clean(obs, sizes);
  EXPECT_EQ(dec.messages(), sizes.size());
  EXPECT_EQ(dec.stream_bytes(), stream.size());
  EXPECT_FALSE(dec.in_message());
}

TEST(FrameDecoder, EverySplitPointOfTwoPieces) {
  const std::vector<uint32_t> sizes = {3, 0, 9, 1, 12};
  const Bytes stream = make_stream(sizes);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    for (size_t cut2 = cut; cut2 <= stream.size(); ++cut2) {
      FrameDecoder dec;
      Observed obs;
      auto on = [&](const FrameEvent& ev) { obs.on(ev); };
      const std::span<const uint8_t> s(stream);
      dec.feed(s.subspan(0, cut), on);
      dec.feed(s.subspan(cut, cut2 - cut), on);
      dec.feed(s.subspan(cut2), on);
      expect_clean(obs, sizes);
    }
  }
}

TEST(FrameDecoder, HeaderStraddlingPiecesReportsInMessage) {
  const Bytes stream = make_stream({10});
  FrameDecoder dec;
  Observed obs;
  auto on = [&](const FrameEvent& ev) { obs.on(ev); };
  dec.feed(std::span<const uint8_t>(stream).first(2), on);
  EXPECT_TRUE(dec.in_message());
  EXPECT_TRUE(obs.lengths.empty());
  dec.feed(std::span<const uint8_t>(stream).subspan(2, 3), on);  // rest of header + 1 byte
  EXPECT_TRUE(dec.in_message());
  EXPECT_EQ(obs.payload_bytes, 1u);
  dec.feed(std::span<const uint8_t>(stream).subspan(5), on);
  EXPECT_FALSE(dec.in_message());
  expect_clean(obs, {10});
}

TEST(FrameDecoder, ZeroLengthMessagesAloneAndInRuns) {
  const std::vector<uint32_t> sizes(1000, 0);
  const Bytes stream = make_stream(sizes);
  FrameDecoder dec;
  const Observed obs = decode(stream, dec, [] { return size_t{4096}; });
  expect_clean(obs, sizes);
  EXPECT_EQ(dec.payload_bytes(), 0u);
}

TEST(FrameDecoder, OneMebibyteMessagesInOddPieces) {
  const std::vector<uint32_t> sizes = {1u << 20, 7, 1u << 20, (1u << 20) + 1};
  const Bytes stream = make_stream(sizes);
  for (size_t piece : {1448u, 65535u, 9000u, 1u << 21}) {
    FrameDecoder dec;
    const Observed obs = decode(stream, dec, [&] { return size_t{piece}; });
    expect_clean(obs, sizes);
    EXPECT_EQ(obs.payload_bytes, (3u << 20) + 8);
  }
}

TEST(FrameDecoder, RandomPieceSizesSeeded) {
  std::mt19937_64 rng(20240611);
  std::vector<uint32_t> sizes;
  for (int i = 0; i < 400; ++i) {
    const int kind = static_cast<int>(rng() % 4);
    sizes.push_back(kind == 0   ? 0
                    : kind == 1 ? rng() % 16
                    : kind == 2 ? rng() % 2000
                                : rng() % 70000);
  }
  const Bytes stream = make_stream(sizes, 0);
  for (int round = 0; round < 20; ++round) {
    FrameDecoder dec;
    const Observed obs =
        decode(stream, dec, [&] { return size_t{1} + rng() % (round % 2 ? 20 : 20000); });
    expect_clean(obs, sizes);
  }
}

TEST(FrameDecoder, StopsBetweenEventsForBackpressure) {
  const Bytes stream = make_stream({3, 4, 5});
  FrameDecoder dec;
  std::span<const uint8_t> in(stream);
  // One event per call: the caller can stop after any of them.
  FrameEvent ev = dec.next(in);
  EXPECT_EQ(ev.kind, FrameEventKind::kPayload);
  EXPECT_EQ(ev.data.size(), 3u);
  ev = dec.next(in);
  EXPECT_EQ(ev.kind, FrameEventKind::kMessageComplete);
  EXPECT_EQ(ev.length, 3u);
  EXPECT_EQ(in.size(), stream.size() - 7);
  // feed() stops when the handler says so and reports what it consumed.
  int seen = 0;
  const size_t used = dec.feed(in, [&](const FrameEvent& e) {
    return !(e.kind == FrameEventKind::kMessageComplete && ++seen == 1);
  });
  EXPECT_EQ(used, 8u);  // message 1's header and payload
  EXPECT_EQ(dec.messages(), 2u);
}

// An empty input consumes nothing and brings out only an event already due: the end of a
// message whose payload came before, never a second one, and a header cut in two stays cut.
TEST(FrameDecoder, EmptyInputGivesOnlyAnEventAlreadyDue) {
  const Bytes stream = make_stream({3, 2});
  FrameDecoder dec;
  std::span<const uint8_t> in = std::span<const uint8_t>(stream).first(7);
  EXPECT_EQ(dec.next(in).kind, FrameEventKind::kPayload);
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(dec.next(in).kind, FrameEventKind::kMessageComplete);
  EXPECT_EQ(dec.next(in).kind, FrameEventKind::kNeedMore);
  EXPECT_EQ(dec.messages(), 1u);
  EXPECT_EQ(dec.stream_bytes(), 7u);
  in = std::span<const uint8_t>(stream).subspan(7, 2);  // half of the next header
  EXPECT_EQ(dec.next(in).kind, FrameEventKind::kNeedMore);
  EXPECT_TRUE(dec.in_message());
  EXPECT_EQ(dec.next(in).kind, FrameEventKind::kNeedMore);
  EXPECT_TRUE(dec.in_message());
  in = std::span<const uint8_t>(stream).subspan(9);
  const FrameEvent ev = dec.next(in);
  EXPECT_EQ(ev.kind, FrameEventKind::kPayload);
  EXPECT_EQ(ev.length, 2u);
  EXPECT_EQ(dec.stream_bytes(), stream.size());
}

TEST(FrameDecoder, OversizeLengthIsOneErrorThenSilence) {
  FrameDecoderConfig cfg;
  cfg.max_message_bytes = 1000;
  FrameDecoder dec(cfg);
  Bytes stream = make_stream({1000, 2, 1001, 5});
  Observed obs;
  const size_t used = dec.feed(stream, [&](const FrameEvent& ev) { obs.on(ev); });
  EXPECT_EQ(used, stream.size());  // the rest is swallowed, not left to spin on
  EXPECT_EQ(obs.errors, 1u);
  EXPECT_EQ(obs.error_length, 1001u);
  EXPECT_EQ(obs.lengths.size(), 2u);
  EXPECT_TRUE(dec.failed());
  dec.feed(stream, [&](const FrameEvent& ev) { obs.on(ev); });
  EXPECT_EQ(obs.errors, 1u);
  dec.reset();
  EXPECT_FALSE(dec.failed());
}

TEST(FrameDecoder, DefaultCapRejectsHugeLengths) {
  const uint8_t header[4] = {0x40, 0x00, 0x00, 0x01};  // 1 GiB + 1
  FrameDecoder dec;
  std::span<const uint8_t> in(header);
  EXPECT_EQ(dec.next(in).kind, FrameEventKind::kError);
  const uint8_t ok[4] = {0x40, 0x00, 0x00, 0x00};  // exactly 1 GiB is allowed
  FrameDecoder dec2;
  std::span<const uint8_t> in2(ok);
  EXPECT_EQ(dec2.next(in2).kind, FrameEventKind::kNeedMore);
  EXPECT_TRUE(dec2.in_message());
}

TEST(FrameDecoder, CollectModeDeliversWholeMessages) {
  const std::vector<uint32_t> sizes = {0, 1, 4096, 70000, 3, 70000};
  const Bytes stream = make_stream(sizes);
  for (size_t piece : {1u, 7u, 1448u, 200000u}) {
    FrameDecoderConfig cfg;
    cfg.collect = true;
    cfg.max_message_bytes = 70000;
    FrameDecoder dec(cfg);
    Observed obs;
    size_t at = 0;
    int payload_events = 0;
    while (at < stream.size()) {
      const size_t n = std::min(piece, stream.size() - at);
      dec.feed(std::span<const uint8_t>(stream).subspan(at, n), [&](const FrameEvent& ev) {
        if (ev.kind == FrameEventKind::kPayload) ++payload_events;
        if (ev.kind == FrameEventKind::kMessageComplete) {
          EXPECT_EQ(ev.data.size(), ev.length);
        }
        obs.on(ev);
      });
      at += n;
    }
    EXPECT_EQ(payload_events, 0);
    EXPECT_EQ(obs.bad_bytes, 0u);
    ASSERT_EQ(obs.lengths.size(), sizes.size());
    EXPECT_EQ(obs.collected.size(), 0u + 1 + 4096 + 70000 + 3 + 70000);
  }
}

TEST(FrameDecoder, CollectModeCapIsTheLimit) {
  FrameDecoderConfig cfg;
  cfg.collect = true;
  cfg.max_message_bytes = 100;
  FrameDecoder dec(cfg);
  const Bytes stream = make_stream({100, 101});
  Observed obs;
  dec.feed(stream, [&](const FrameEvent& ev) { obs.on(ev); });
  EXPECT_EQ(obs.lengths.size(), 1u);
  EXPECT_EQ(obs.errors, 1u);
}

TEST(FrameDecoder, NoneModeIsAllPayload) {
  FrameDecoderConfig cfg;
  cfg.framing = Framing::kNone;
  FrameDecoder dec(cfg);
  Bytes stream(10000);
  fill_pattern(0, 0, stream);
  uint64_t expect = 0;
  int completes = 0;
  std::mt19937 rng(5);
  size_t at = 0;
  while (at < stream.size()) {
    const size_t n = std::min<size_t>(1 + rng() % 700, stream.size() - at);
    dec.feed(std::span<const uint8_t>(stream).subspan(at, n), [&](const FrameEvent& ev) {
      if (ev.kind == FrameEventKind::kMessageComplete) ++completes;
      ASSERT_EQ(ev.kind, FrameEventKind::kPayload);
      EXPECT_EQ(ev.offset, expect);
      EXPECT_EQ(check_pattern(0, ev.offset, ev.data), ev.data.size());
      expect += ev.data.size();
    });
    at += n;
  }
  EXPECT_EQ(completes, 0);
  EXPECT_EQ(dec.messages(), 0u);
  EXPECT_EQ(dec.payload_bytes(), stream.size());
  EXPECT_FALSE(dec.in_message());
}

TEST(FrameEncoder, ProducesWhatTheDecoderExpectsInAnyPieces) {
  for (uint32_t size : {0u, 1u, 8u, 13u, 1500u, 1u << 20}) {
    FrameEncoder enc(Framing::kLength32, size);
    const uint64_t count = size >= (1u << 20) ? 3 : 50;
    Bytes stream;
    std::mt19937 rng(size);
    uint8_t buf[9000];
    for (;;) {
      const size_t want = 1 + rng() % sizeof buf;
      const size_t n = enc.produce(std::span<uint8_t>(buf, want), count);
      if (n == 0) break;
      stream.insert(stream.end(), buf, buf + n);
    }
    EXPECT_EQ(enc.messages(), count);
    EXPECT_TRUE(enc.at_boundary());
    EXPECT_EQ(stream.size(), count * enc.frame_bytes());
    EXPECT_EQ(stream, make_stream(std::vector<uint32_t>(count, size)));
  }
}

TEST(FrameEncoder, NoneModeIsTheStreamPattern) {
  FrameEncoder enc(Framing::kNone, 100);
  Bytes buf(250);
  EXPECT_EQ(enc.produce(buf, 2), 200u);  // stops at the boundary of message 2
  EXPECT_EQ(enc.messages(), 2u);
  EXPECT_EQ(check_pattern(0, 0, std::span<const uint8_t>(buf).first(200)), 200u);
  EXPECT_EQ(enc.produce(std::span<uint8_t>(buf).first(50)), 50u);
  EXPECT_EQ(check_pattern(0, 200, std::span<const uint8_t>(buf).first(50)), 50u);
  EXPECT_FALSE(enc.at_boundary());
  FrameEncoder empty(Framing::kNone, 0);
  EXPECT_EQ(empty.produce(buf), 0u);
}

TEST(FrameEncoder, FirstSeqOffsetsThePattern) {
  FrameEncoder enc(Framing::kLength32, 16, 42);
  Bytes buf(20);
  ASSERT_EQ(enc.produce(buf, 1), 20u);
  EXPECT_EQ(check_pattern(42, 0, std::span<const uint8_t>(buf).subspan(4)), 16u);
  EXPECT_EQ(enc.next_seq(), 43u);
}

}  // namespace
}  // namespace ws
