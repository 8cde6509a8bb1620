// The iperf3 service's building blocks: the bounded JSON reader and writer, the
// parameter checks, the UDP header, loss/out-of-order/jitter accounting and pacing.
#include <gtest/gtest.h>

#include <string>

#include "stack/apps/iperf3_json.hpp"
#include "stack/apps/iperf3_protocol.hpp"
#include "stack/apps/iperf3_udp.hpp"
#include "stack/core/bytes.hpp"

namespace ws::iperf3 {
namespace {

TEST(Iperf3Json, ParsesWhatTheClientSends) {
  // The parameter object of `iperf3 -c ... -u -b 1M -n 100K --bidir` (3.12).
  const std::string text =
      R"({"udp":true,"omit":0,"time":0,"num":102400,"blockcount":0,"parallel":1,)"
      R"("bidirectional":true,"len":1400,"bandwidth":1000000,"pacing_timer":1000,)"
      R"("udp_counters_64bit":1,"client_version":"3.12"})";
  JsonDoc doc;
  ASSERT_TRUE(doc.parse(text)) << doc.error();
  JsonValue r = doc.root();
  EXPECT_TRUE(r.is_object());
  EXPECT_EQ(r.size(), 12u);
  EXPECT_TRUE(r["udp"].truthy());
  EXPECT_TRUE(r["udp_counters_64bit"].truthy());
  EXPECT_FALSE(r["reverse"].valid());
  EXPECT_FALSE(r["reverse"].truthy());
  EXPECT_EQ(r["num"].number(), 102400);
  EXPECT_EQ(r["bandwidth"].number(), 1e6);
  EXPECT_EQ(r["client_version"].string(), "3.12");
  EXPECT_EQ(r["missing"].number(7), 7);
}

TEST(Iperf3Json, NestedArraysEscapesAndNumbers) {
  JsonDoc doc;
  ASSERT_TRUE(doc.parse(
      R"( { "streams" : [ {"id":1,"bytes":1.5e3}, {"id":3,"jitter":-0.25} , [] ],)"
      R"( "s":"a\"b\\c\/d\n\u00e9\ud83d\ude00\ud800x", "t":false, "n":null, "big":18446744073709551615 } )"))
      << doc.error();
  JsonValue streams = doc.root()["streams"];
  ASSERT_TRUE(streams.is_array());
  EXPECT_EQ(streams.size(), 3u);
  JsonValue s1 = streams.first();
  EXPECT_EQ(s1["id"].number(), 1);
  EXPECT_EQ(s1["bytes"].number(), 1500);
  JsonValue s2 = s1.next();
  EXPECT_EQ(s2["id"].number(), 3);
  EXPECT_EQ(s2["jitter"].number(), -0.25);
  EXPECT_TRUE(s2.next().is_array());
  EXPECT_FALSE(s2.next().next().valid());
  // Escapes decode to UTF-8; a lone surrogate becomes U+FFFD.
  EXPECT_EQ(doc.root()["s"].string(), "a\"b\\c/d\n\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx");
  EXPECT_FALSE(doc.root()["t"].truthy());
  EXPECT_EQ(doc.root()["n"].type(), JsonValue::Type::kNull);
  EXPECT_GT(doc.root()["big"].number(), 1.8e19);
}

TEST(Iperf3Json, RejectsMalformedInput) {
  const char* bad[] = {
      "",          "{",      "{\"a\":}", "{\"a\":1,}", "[1,]",     "[01]",
      "{\"a\" 1}", "\"open", "[1] x",    "tru",        "{a:1}",    "[1.]",
      "[1e]",      "[-]",    "\"\\x\"",  "\"\\u12\"",  "\"a\nb\"", "{\"a\":1}}",
  };
  for (const char* s : bad) {
    JsonDoc doc;
    EXPECT_FALSE(doc.parse(s)) << s;
    EXPECT_NE(doc.error(), nullptr) << s;
    EXPECT_FALSE(doc.root().valid()) << s;
  }
}

TEST(Iperf3Json, LimitsBoundTheWork) {
  JsonLimits lim;
  lim.max_depth = 4;
  JsonDoc doc;
  EXPECT_TRUE(doc.parse("[[[[1]]]]", lim));
  EXPECT_FALSE(doc.parse("[[[[[[1]]]]]]", lim));
  EXPECT_STREQ(doc.error(), "nesting too deep");
  // A deeply nested hostile document fails on depth, not on the call stack.
  EXPECT_FALSE(doc.parse(std::string(100000, '['), JsonLimits{}));
  lim = JsonLimits{};
  lim.max_nodes = 10;
  EXPECT_FALSE(doc.parse("[1,2,3,4,5,6,7,8,9,10,11]", lim));
  EXPECT_STREQ(doc.error(), "too many values");
  lim = JsonLimits{};
  lim.max_bytes = 8;
  EXPECT_FALSE(doc.parse("[1,2,3,4,5]", lim));
  EXPECT_STREQ(doc.error(), "document too large");
}

TEST(Iperf3Json, WriterOutputReadsBack) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("a").value(int64_t{-1});
  w.key("b").value(uint64_t{18446744073709551615ull});
  w.key("c").value(0.125);
  w.key("d").value(true);
  w.key("e\"").value("x\"y\\z\n\x01");
  w.key("f").begin_array().value(1).begin_object().end_object().begin_array().end_array();
  w.end_array();
  w.key("g").value(std::numeric_limits<double>::quiet_NaN());
  w.end_object();
  EXPECT_EQ(out, R"({"a":-1,"b":18446744073709551615,"c":0.125,"d":true,"e\"":"x\"y\\z\n\u0001",)"
                 R"("f":[1,{},[]],"g":0})");
  JsonDoc doc;
  ASSERT_TRUE(doc.parse(out)) << doc.error();
  EXPECT_EQ(doc.root()["e\""].string(), "x\"y\\z\n\x01");
  EXPECT_EQ(doc.root()["f"].size(), 3u);
}

TEST(Iperf3Params, DefaultsAndDirections) {
  JsonDoc doc;
  ASSERT_TRUE(doc.parse(R"({"tcp":true,"time":2,"parallel":4,"len":131072})"));
  Params p;
  ASSERT_FALSE(parse_params(doc.root(), p).has_value());
  EXPECT_EQ(p.proto, Proto::kTcp);
  EXPECT_EQ(p.parallel, 4u);
  EXPECT_EQ(p.time_s, 2);
  EXPECT_EQ(p.rate_bps, 0u);
  EXPECT_EQ(p.server_receivers(), 4u);
  EXPECT_EQ(p.server_senders(), 0u);

  ASSERT_TRUE(doc.parse(R"({"udp":true,"parallel":2,"bidirectional":true})"));
  ASSERT_FALSE(parse_params(doc.root(), p).has_value());
  EXPECT_EQ(p.proto, Proto::kUdp);
  EXPECT_EQ(p.len, kDefaultUdpBlock);
  EXPECT_EQ(p.rate_bps, kDefaultUdpRate);
  EXPECT_EQ(p.server_receivers(), 2u);
  EXPECT_EQ(p.server_senders(), 2u);
  EXPECT_EQ(p.total_streams(), 4u);

  ASSERT_TRUE(doc.parse(R"({"tcp":true,"reverse":true,"num":1e6})"));
  ASSERT_FALSE(parse_params(doc.root(), p).has_value());
  EXPECT_EQ(p.server_receivers(), 0u);
  EXPECT_EQ(p.server_senders(), 1u);
  EXPECT_EQ(p.bytes, 1000000u);
}

TEST(Iperf3Params, ErrorsCarryIperf3Codes) {
  auto code = [](const char* text) {
    JsonDoc doc;
    EXPECT_TRUE(doc.parse(text)) << text;
    Params p;
    auto e = parse_params(doc.root(), p);
    return e ? e->code : 0;
  };
  EXPECT_EQ(code(R"({"tcp":true,"parallel":129})"), kErrNumStreams);
  EXPECT_EQ(code(R"({"tcp":true,"parallel":-3})"), kErrNumStreams);
  EXPECT_EQ(code(R"({"tcp":true,"reverse":true,"bidirectional":true})"), kErrReverseBidir);
  EXPECT_EQ(code(R"({"tcp":true,"len":2000000})"), kErrBlockSize);
  EXPECT_EQ(code(R"({"udp":true,"len":8})"), kErrUdpBlockSize);
  EXPECT_EQ(code(R"({"udp":true,"len":70000})"), kErrUdpBlockSize);
  EXPECT_EQ(code(R"({"sctp":true})"), kErrUnimplemented);
  EXPECT_EQ(code(R"([1,2])"), kErrRecvParams);
  EXPECT_EQ(code(R"({"tcp":true,"time":-5,"omit":"x"})"), 0);
}

TEST(Iperf3Protocol, FramingAndResults) {
  std::string out;
  append_framed(out, "{}");
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(load_be32(reinterpret_cast<const uint8_t*>(out.data())), 2u);
  EXPECT_EQ(out.substr(4), "{}");

  std::string json;
  ResultsHeader h;
  h.sender_has_retransmits = -1;
  h.congestion = "cubic";
  ResultsWriter w(json, h);
  w.add(StreamResult{1, 1000, -1, 0, 0, 0, 0, 2.0});
  w.add(StreamResult{3, 2000, 5, 0.001, 2, 10, 0, 2.0});
  w.finish();
  JsonDoc doc;
  ASSERT_TRUE(doc.parse(json)) << json;
  JsonValue r = doc.root();
  // What the 3.12 client requires (get_results): these keys, with numbers.
  for (const char* k :
       {"cpu_util_total", "cpu_util_user", "cpu_util_system", "sender_has_retransmits"}) {
    EXPECT_TRUE(r[k].is_number()) << k;
  }
  EXPECT_EQ(r["congestion_used"].string(), "cubic");
  EXPECT_FALSE(r["server_output_text"].valid());
  JsonValue s = r["streams"].first().next();
  EXPECT_EQ(s["id"].number(), 3);
  EXPECT_EQ(s["bytes"].number(), 2000);
  EXPECT_EQ(s["retransmits"].number(), 5);
  EXPECT_EQ(s["errors"].number(), 2);
  EXPECT_EQ(s["packets"].number(), 10);
  EXPECT_EQ(s["end_time"].number(), 2.0);
}

TEST(Iperf3Protocol, UdpConnectReplyFollowsTheSendersByteOrder) {
  auto reply = [](std::initializer_list<uint8_t> m) {
    std::vector<uint8_t> v(m);
    auto r = udp_connect_reply(v);
    return std::string(r.begin(), r.end());
  };
  EXPECT_EQ(reply({'9', '8', '7', '6'}), "6789");  // 0x36373839 from a little-endian host
  EXPECT_EQ(reply({'6', '7', '8', '9'}), "9876");  // ... from a big-endian host
  // Legacy 123456789 -> 987654321, both orders.
  EXPECT_EQ(reply({0x15, 0xcd, 0x5b, 0x07}), std::string("\xb1\x68\xde\x3a", 4));
  EXPECT_EQ(reply({0x07, 0x5b, 0xcd, 0x15}), std::string("\x3a\xde\x68\xb1", 4));
}

TEST(Iperf3Udp, HeaderRoundTrip) {
  uint8_t buf[32] = {};
  const Instant t = Instant::from_ns(12'345'678'901'234);  // 12345.678901234 s
  write_udp_header(buf, false, t, 0x01020304);
  UdpHeader h;
  ASSERT_TRUE(parse_udp_header(std::span<const uint8_t>(buf, 12), false, h));
  EXPECT_EQ(h.sec, 12345u);
  EXPECT_EQ(h.usec, 678901u);
  EXPECT_EQ(h.seq, 0x01020304u);
  EXPECT_FALSE(parse_udp_header(std::span<const uint8_t>(buf, 11), false, h));
  write_udp_header(buf, true, t, 0x0102030405060708ull);
  ASSERT_TRUE(parse_udp_header(std::span<const uint8_t>(buf, 16), true, h));
  EXPECT_EQ(h.seq, 0x0102030405060708ull);
  EXPECT_EQ(load_be32(buf + 8), 0x01020304u);  // big-endian on the wire
  EXPECT_FALSE(parse_udp_header(std::span<const uint8_t>(buf, 15), true, h));
}

TEST(Iperf3Udp, LossAndReorderingAsIperf3CountsThem) {
  UdpReceiveStats s;
  const Instant t = Instant::from_ns(5'000'000'000);
  for (uint64_t seq : {1, 2, 3, 6, 7, 5, 8, 8, 12}) s.on_datagram({5, 0, seq}, 100, t);
  EXPECT_EQ(s.datagrams, 9u);
  EXPECT_EQ(s.bytes, 900u);
  EXPECT_EQ(s.highest, 12u);
  // Gaps: 4,5 (2), 9,10,11 (3) = 5; late 5 and duplicate 8 each take one back.
  EXPECT_EQ(s.out_of_order, 2u);
  EXPECT_EQ(s.lost, 3u);
}

TEST(Iperf3Udp, JitterIsTheSmoothedTransitVariation) {
  UdpReceiveStats s;
  // The clocks differ by an arbitrary offset; only transit differences count. Transit
  // alternates 1 ms and 3 ms: every difference after the first datagram is 2 ms, and
  // J += (|D| - J) / 16 converges towards 2 ms.
  const uint64_t offset = 777'000'000'000;
  double expect = 0;
  for (uint32_t i = 0; i < 200; ++i) {
    const uint64_t sent_us = 1'000'000 + i * 1000ull;
    const uint64_t transit_us = (i % 2 == 0) ? 1000 : 3000;
    const Instant arrival = Instant::from_ns((offset + (sent_us + transit_us)) * 1000);
    s.on_datagram(
        {static_cast<uint32_t>(sent_us / 1000000), static_cast<uint32_t>(sent_us % 1000000), i + 1},
        64, arrival);
    if (i > 0) expect += (0.002 - expect) / 16.0;
  }
  EXPECT_NEAR(s.jitter_s, expect, 1e-9);
  EXPECT_NEAR(s.jitter_s, 0.002, 1e-5);
  EXPECT_EQ(s.lost, 0u);
}

TEST(Iperf3Udp, PacerHoldsTheRate) {
  Pacer p;
  const Instant t0 = Instant::from_ns(1'000'000'000);
  p.start(t0, 8'000'000);  // 1 MB/s
  EXPECT_EQ(p.allowance(t0, 0), 0u);
  EXPECT_EQ(p.allowance(t0 + Duration::millis(10), 0), 10000u);
  EXPECT_EQ(p.allowance(t0 + Duration::millis(10), 9000), 1000u);
  EXPECT_EQ(p.allowance(t0 + Duration::millis(10), 20000), 0u);
  Pacer unlimited;
  unlimited.start(t0, 0);
  EXPECT_TRUE(unlimited.unlimited());
  EXPECT_EQ(unlimited.allowance(t0, 1u << 30), UINT64_MAX);
}

}  // namespace
}  // namespace ws::iperf3

namespace ws::iperf3 {
namespace {

// Mutations of a real results document: the reader either parses or reports an error,
// never reads out of bounds (this runs under ASan/UBSan in tests/run.sh). Bounded: 3000
// documents of at most a few hundred bytes.
TEST(Iperf3Json, MutatedDocumentsNeverCrash) {
  const std::string base =
      R"({"cpu_util_total":21.13,"cpu_util_user":0,"sender_has_retransmits":1,)"
      R"("congestion_used":"bbr","streams":[{"id":1,"bytes":133693440,"retransmits":0,)"
      R"("jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.007884,"s":"\u00e9\n"}]})";
  uint64_t x = 88172645463325252ull;
  auto rnd = [&x] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  const char alphabet[] = "{}[]\",:\\u0123456789.eE+-truefalsnl \t\n\x01\xff";
  size_t parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = base;
    const int edits = 1 + static_cast<int>(rnd() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t at = rnd() % s.size();
      switch (rnd() % 3) {
        case 0:
          s[at] = alphabet[rnd() % (sizeof alphabet - 1)];
          break;
        case 1:
          s.erase(at, 1 + rnd() % 8);
          break;
        default:
          s.insert(at, 1, alphabet[rnd() % (sizeof alphabet - 1)]);
      }
    }
    JsonDoc doc;
    if (doc.parse(s)) {
      ++parsed;
      // Walk everything that parsed.
      for (JsonValue v = doc.root().first(); v.valid(); v = v.next()) {
        (void)v.key(), (void)v.string(), (void)v.number(), (void)v.size();
        for (JsonValue w = v.first(); w.valid(); w = w.next()) (void)w["id"].number();
      }
    } else {
      EXPECT_NE(doc.error(), nullptr);
    }
  }
  EXPECT_GT(parsed, 0u);     // some mutations stay valid (e.g. digits changed)
  EXPECT_LT(parsed, 3000u);  // and most do not
}

}  // namespace
}  // namespace ws::iperf3
