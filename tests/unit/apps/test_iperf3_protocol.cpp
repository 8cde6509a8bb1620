// The iperf3 service's building blocks: JSON in and out (stack/core/json), the
// parameter checks, the UDP header, loss/out-of-order/jitter accounting and pacing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "stack/apps/iperf3_protocol.hpp"
#include "stack/apps/iperf3_udp.hpp"
#include "stack/core/bytes.hpp"

namespace ws::iperf3 {
namespace {

using json::Json;

Json parsed(const std::string& text) { return json::parse(text).value_or(Json()); }

double num(const Json& j, const char* key) {
  return json::number_or(j, key, std::numeric_limits<double>::quiet_NaN());
}

TEST(Iperf3Json, ParsesWhatTheClientSends) {
  // The parameter object of `iperf3 -c ... -u -b 1M -n 100K --bidir` (3.12).
  const Json r =
      parsed(R"({"udp":true,"omit":0,"time":0,"num":102400,"blockcount":0,"parallel":1,)"
             R"("bidirectional":true,"len":1400,"bandwidth":1000000,"pacing_timer":1000,)"
             R"("udp_counters_64bit":1,"client_version":"3.12"})");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r.size(), 12u);
  EXPECT_TRUE(json::truthy(json::member(r, "udp")));
  EXPECT_TRUE(json::truthy(json::member(r, "udp_counters_64bit")));
  EXPECT_EQ(json::member(r, "reverse"), nullptr);
  EXPECT_FALSE(json::truthy(json::member(r, "reverse")));
  EXPECT_EQ(num(r, "num"), 102400);
  EXPECT_EQ(num(r, "bandwidth"), 1e6);
  EXPECT_EQ(json::string_or(json::member(r, "client_version")), "3.12");
  EXPECT_EQ(json::number_or(r, "missing", 7), 7);
  // Wrong types answer with the fallback, never an exception.
  EXPECT_EQ(json::number_or(r, "client_version", 7), 7);
  EXPECT_EQ(json::string_or(json::member(r, "num"), "x"), "x");
  EXPECT_EQ(json::member(Json::array({1, 2}), "num"), nullptr);
}

TEST(Iperf3Json, NestedArraysEscapesAndNumbers) {
  const Json doc =
      parsed(R"( { "streams" : [ {"id":1,"bytes":1.5e3}, {"id":3,"jitter":-0.25} , [] ],)"
             R"( "s":"a\"b\\c\/d\n\u00e9\ud83d\ude00x", "t":false, "n":null,)"
             R"( "big":18446744073709551615, "huge":1e300 } )");
  ASSERT_TRUE(doc.is_object());
  const Json& streams = doc.at("streams");
  ASSERT_TRUE(streams.is_array());
  EXPECT_EQ(streams.size(), 3u);
  EXPECT_EQ(num(streams[0], "id"), 1);
  EXPECT_EQ(num(streams[0], "bytes"), 1500);
  EXPECT_EQ(num(streams[1], "id"), 3);
  EXPECT_EQ(num(streams[1], "jitter"), -0.25);
  EXPECT_TRUE(streams[2].is_array());
  // Escapes decode to UTF-8, a surrogate pair to one code point.
  EXPECT_EQ(json::string_or(json::member(doc, "s")), "a\"b\\c/d\n\xc3\xa9\xf0\x9f\x98\x80x");
  EXPECT_FALSE(json::truthy(json::member(doc, "t")));
  EXPECT_TRUE(json::member(doc, "n")->is_null());
  EXPECT_GT(num(doc, "big"), 1.8e19);
  EXPECT_EQ(num(doc, "huge"), 1e300);
}

TEST(Iperf3Json, RejectsMalformedInput) {
  const char* bad[] = {
      "",        "{",         "{\"a\":}", "{\"a\":1,}", "[1,]",    "[01]",     "{\"a\" 1}",
      "\"open",  "[1] x",     "tru",      "{a:1}",      "[1.]",    "[1e]",     "[-]",
      "\"\\x\"", "\"\\u12\"", "\"a\nb\"", "{\"a\":1}}", "[1e999]", "\"\xff\"", "\"\\ud800x\"",
  };
  for (const char* s : bad) EXPECT_FALSE(json::parse(s).has_value()) << s;
}

TEST(Iperf3Json, LimitsBoundTheWork) {
  json::Limits lim;
  lim.max_depth = 4;
  EXPECT_TRUE(json::parse("[[[[1]]]]", lim).has_value());
  EXPECT_TRUE(json::parse(R"({"a":{"b":{"c":{"d":1}}}})", lim).has_value());
  EXPECT_FALSE(json::parse("[[[[[1]]]]]", lim).has_value());
  EXPECT_FALSE(json::parse(R"({"a":{"b":{"c":{"d":{"e":1}}}}})", lim).has_value());
  // A deeply nested hostile document fails on depth or size, not on the call stack.
  std::string deep = std::string(30000, '[') + std::string(30000, ']');
  EXPECT_FALSE(json::parse(deep).has_value());
  EXPECT_TRUE(json::parse(deep, {.max_bytes = deep.size(), .max_depth = 1 << 20}).has_value());
  EXPECT_FALSE(json::parse(std::string(100000, '[')).has_value());
  lim = json::Limits{};
  lim.max_bytes = 8;
  EXPECT_FALSE(json::parse("[1,2,3,4,5]", lim).has_value());
  EXPECT_TRUE(json::parse("[1,2,3]", lim).has_value());
}

TEST(Iperf3Json, WriterOutputReadsBack) {
  Json w = Json::object();
  w["a"] = -1;
  w["b"] = uint64_t{18446744073709551615ull};
  w["c"] = 0.125;
  w["d"] = true;
  w["e\""] = "x\"y\\z\n\x01";
  w["f"] = Json::array({1, Json::object(), Json::array()});
  w["g"] = std::numeric_limits<double>::quiet_NaN();
  w["h"] = "bad \xff utf-8";
  const std::string out = json::dump(w);
  EXPECT_EQ(out, R"({"a":-1,"b":18446744073709551615,"c":0.125,"d":true,"e\"":"x\"y\\z\n\u0001",)"
                 R"("f":[1,{},[]],"g":null,"h":"bad )"
                 "\xef\xbf\xbd"
                 R"( utf-8"})");
  const Json back = parsed(out);
  EXPECT_EQ(json::string_or(json::member(back, "e\"")), "x\"y\\z\n\x01");
  EXPECT_EQ(back.at("f").size(), 3u);
}

TEST(Iperf3Params, DefaultsAndDirections) {
  Params p;
  ASSERT_FALSE(parse_params(parsed(R"({"tcp":true,"time":2,"parallel":4,"len":131072})"), p));
  EXPECT_EQ(p.proto, Proto::kTcp);
  EXPECT_EQ(p.parallel, 4u);
  EXPECT_EQ(p.time_s, 2);
  EXPECT_EQ(p.rate_bps, 0u);
  EXPECT_EQ(p.server_receivers(), 4u);
  EXPECT_EQ(p.server_senders(), 0u);

  ASSERT_FALSE(parse_params(parsed(R"({"udp":true,"parallel":2,"bidirectional":true})"), p));
  EXPECT_EQ(p.proto, Proto::kUdp);
  EXPECT_EQ(p.len, kDefaultUdpBlock);
  EXPECT_EQ(p.rate_bps, kDefaultUdpRate);
  EXPECT_EQ(p.server_receivers(), 2u);
  EXPECT_EQ(p.server_senders(), 2u);
  EXPECT_EQ(p.total_streams(), 4u);

  ASSERT_FALSE(parse_params(parsed(R"({"tcp":true,"reverse":true,"num":1e6})"), p));
  EXPECT_EQ(p.server_receivers(), 0u);
  EXPECT_EQ(p.server_senders(), 1u);
  EXPECT_EQ(p.bytes, 1000000u);
}

TEST(Iperf3Params, ErrorsCarryIperf3Codes) {
  auto code = [](const char* text) {
    const std::optional<Json> doc = json::parse(text);
    EXPECT_TRUE(doc.has_value()) << text;
    Params p;
    auto e = parse_params(doc.value_or(Json()), p);
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

// Values of the wrong type are read as absent (the default), never as an exception.
TEST(Iperf3Params, WrongTypesFallBackToDefaults) {
  Params p;
  ASSERT_FALSE(parse_params(parsed(R"({"parallel":"4","len":[1],"udp":{},"time":null,)"
                                   R"("client_version":5,"bandwidth":true,"reverse":"yes"})"),
                            p));
  EXPECT_EQ(p.proto, Proto::kTcp);
  EXPECT_EQ(p.parallel, 1u);
  EXPECT_EQ(p.len, kDefaultTcpBlock);
  EXPECT_EQ(p.time_s, 10);
  EXPECT_EQ(p.client_version, "");
  EXPECT_EQ(p.rate_bps, 0u);
  EXPECT_FALSE(p.reverse);
}

TEST(Iperf3Protocol, FramingAndResults) {
  std::string out;
  append_framed(out, "{}");
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(load_be32(reinterpret_cast<const uint8_t*>(out.data())), 2u);
  EXPECT_EQ(out.substr(4), "{}");

  ResultsHeader h;
  h.sender_has_retransmits = -1;
  h.congestion = "cubic";
  h.cpu_user = std::numeric_limits<double>::infinity();
  const std::string text = results_json(h, {StreamResult{1, 1000, -1, 0, 0, 0, 0, 2.0},
                                            StreamResult{3, 2000, 5, 0.001, 2, 10, 0, 2.0}});
  const Json r = parsed(text);
  ASSERT_TRUE(r.is_object()) << text;
  // What the 3.12 client requires (get_results): these keys, with numbers.
  for (const char* k :
       {"cpu_util_total", "cpu_util_user", "cpu_util_system", "sender_has_retransmits"}) {
    EXPECT_FALSE(std::isnan(num(r, k))) << k;
  }
  EXPECT_EQ(num(r, "cpu_util_user"), 0) << "JSON has no infinity: 0 stands for it";
  EXPECT_EQ(json::string_or(json::member(r, "congestion_used")), "cubic");
  EXPECT_EQ(json::member(r, "server_output_text"), nullptr);
  const Json& s = r.at("streams").at(1);
  EXPECT_EQ(num(s, "id"), 3);
  EXPECT_EQ(num(s, "bytes"), 2000);
  EXPECT_EQ(num(s, "retransmits"), 5);
  EXPECT_EQ(num(s, "errors"), 2);
  EXPECT_EQ(num(s, "packets"), 10);
  EXPECT_EQ(num(s, "end_time"), 2.0);
  h.server_output_text = "text \"quoted\"\n";
  EXPECT_EQ(json::string_or(json::member(parsed(results_json(h, {})), "server_output_text")),
            "text \"quoted\"\n");
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
  size_t ok = 0;
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
    const std::optional<Json> doc = json::parse(s);
    if (!doc) continue;
    ++ok;
    // Read everything that parsed the way the service reads it.
    for (const auto& [key, v] : doc->items()) {
      (void)json::number(&v), (void)json::string_or(&v), (void)json::truthy(&v);
      if (!v.is_array()) continue;
      for (const Json& w : v) (void)num(w, "id");
    }
  }
  EXPECT_GT(ok, 0u);     // some mutations stay valid (e.g. digits changed)
  EXPECT_LT(ok, 3000u);  // and most do not
}

}  // namespace
}  // namespace ws::iperf3
