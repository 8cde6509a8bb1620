// The iperf3 service on a real Stack + TcpStack (node B, 10.0.0.2), driven on a
// virtual clock by a scripted iperf3 client on a second real stack (node A, 10.0.0.1):
// frames go between the two FakePacketIos, ARP included. The client speaks the
// exchange byte for byte as iperf3 3.12 does (see iperf3_protocol.hpp).
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "stack/apps/iperf3_protocol.hpp"
#include "stack/apps/iperf3_service.hpp"
#include "stack/apps/iperf3_udp.hpp"
#include "stack/core/bytes.hpp"
#include "stack/iface/stack.hpp"
#include "stack/iface/tcp_transport.hpp"
#include "tests/support/fake_io.hpp"

namespace ws {
namespace {

using namespace iperf3;  // NOLINT(google-build-using-namespace)

constexpr uint16_t kPort = 5201;
const Ipv4Addr kIpA = Ipv4Addr::from_octets(10, 0, 0, 1);
const Ipv4Addr kIpB = Ipv4Addr::from_octets(10, 0, 0, 2);
const std::string kCookie = "abcdefghijklmnopqrstuvwxyz0123456789";  // + NUL = 37

tcp::TcpConfig tcp_config(uint8_t key) {
  tcp::TcpConfig c;
  for (size_t i = 0; i < c.isn_secret.size(); ++i)
    c.isn_secret[i] = static_cast<uint8_t>(i * 3 + key);
  return c;
}

test::FakePacketIo::Options io_options() {
  test::FakePacketIo::Options o;
  o.pool_size = 2048;
  o.fill_garbage = false;
  return o;
}

// One host: a FakePacketIo, a Stack with one interface and a TcpStack beneath it.
struct Node {
  Node(Ipv4Addr ip, uint8_t mac_last)
      : io(io_options()), tcp(stack, stack.drops(), tcp_config(mac_last)), transport(tcp) {
    InterfaceConfig c;
    c.name = "n" + std::to_string(mac_last);
    c.mac = MacAddr{{0x02, 0, 0, 0, 0, mac_last}};
    c.address = Ipv4Cidr{ip, 24};
    c.mtu = 1500;
    port = stack.add_interface(c, io);
    stack.set_tcp(&transport);
  }
  test::FakePacketIo io;  // first: it must outlive the stacks
  Stack stack;
  tcp::TcpStack tcp;
  tcp::TcpTransport transport;
  uint16_t port = 0;
};

// Bytes a TCP connection of the client received, and its fate.
struct Sock {
  tcp::Connection* c = nullptr;
  std::string rx;
  bool connected = false, peer_closed = false, closed = false;
  tcp::CloseReason reason = tcp::CloseReason::kNormal;
};

struct Net {
  Net() : a(kIpA, 1), b(kIpB, 2), svc("perf", kPort, b.tcp) {
    EXPECT_TRUE(svc.start(b.stack, now));
    udp = bind_client(40000);
  }
  // A client UDP socket: connect replies are kept, data datagrams counted.
  UdpSocket* bind_client(uint16_t port) {
    return a.stack.udp_bind(port, [this](UdpSocket&, const UdpDatagram& d, Instant t) {
      UdpHeader h;
      if (d.payload.size() == 4) {
        udp_replies.emplace_back(d.payload.begin(), d.payload.end());
      } else if (parse_udp_header(d.payload, udp64, h)) {
        rx_stats.on_datagram(h, d.payload.size(), t);
        seqs.push_back(h.seq);
      }
    });
  }
  ~Net() {
    svc.stop(now);
    a.tcp.shutdown_all(now);
    b.tcp.shutdown_all(now);
    run_for(Duration::millis(1));
  }

  // Moves every frame across (each arrival may cause more) and runs the timers.
  void step(Duration d = Duration::micros(100)) {
    for (int round = 0; round < 1000; ++round) {
      auto fa = a.io.take_sent();
      auto fb = b.io.take_sent();
      if (fa.empty() && fb.empty()) break;
      for (auto& f : fa) {
        if (!cut) b.stack.receive(f.bytes, RxMeta{.port = b.port}, now);
      }
      for (auto& f : fb) {
        if (!cut) a.stack.receive(f.bytes, RxMeta{.port = a.port}, now);
      }
      svc.poll(now);
    }
    now += d;
    a.stack.poll(now);
    b.stack.poll(now);
    svc.poll(now);
  }
  void run_for(Duration d) {
    const Instant end = now + d;
    while (now < end) step();
  }
  template <class Pred>
  bool run_until(Pred p, Duration max = Duration::seconds(5)) {
    const Instant end = now + max;
    while (!p()) {
      if (now >= end) return false;
      step();
    }
    return true;
  }

  // The socket belongs to the Net: its callbacks may run until the stacks are gone.
  Sock* connect() {
    socks.push_back(std::make_unique<Sock>());
    Sock* p = socks.back().get();
    tcp::ConnCallbacks cb;
    cb.on_connected = [p](tcp::Connection&) { p->connected = true; };
    cb.on_data = [p](tcp::Connection&, std::span<const uint8_t> d) {
      p->rx.append(reinterpret_cast<const char*>(d.data()), d.size());
      return d.size();
    };
    cb.on_peer_closed = [p](tcp::Connection&) { p->peer_closed = true; };
    cb.on_closed = [p](tcp::Connection&, tcp::CloseReason r) {
      p->closed = true;
      p->reason = r;
      p->c = nullptr;
    };
    p->c = a.tcp.connect({kIpB, kPort}, std::move(cb), 0, now);
    EXPECT_NE(p->c, nullptr);
    EXPECT_TRUE(run_until([p] { return p->connected; }));
    return p;
  }
  void send(Sock& s, std::string_view bytes) {
    size_t off = 0;
    const Instant end = now + Duration::seconds(5);
    while (off < bytes.size() && s.c != nullptr && now < end) {
      off += s.c->send({reinterpret_cast<const uint8_t*>(bytes.data()) + off, bytes.size() - off});
      if (off < bytes.size()) step();
    }
    EXPECT_EQ(off, bytes.size());
  }
  void send_cookie(Sock& s, const std::string& cookie = kCookie) {
    send(s, std::string_view(cookie.c_str(), kCookieSize));
  }
  void send_json(Sock& s, const std::string& json) {
    std::string framed;
    append_framed(framed, json);
    send(s, framed);
  }
  // Waits for `n` more bytes on `s` from `pos`; returns them and advances pos.
  std::string read(Sock& s, size_t& pos, size_t n) {
    EXPECT_TRUE(run_until([&] { return s.rx.size() >= pos + n; })) << "waiting for " << n;
    if (s.rx.size() < pos + n) return {};
    std::string r = s.rx.substr(pos, n);
    pos += n;
    return r;
  }
  int8_t read_state(Sock& s, size_t& pos) {
    std::string b = read(s, pos, 1);
    return b.empty() ? 0 : static_cast<int8_t>(b[0]);
  }
  std::string read_json(Sock& s, size_t& pos) {
    std::string len = read(s, pos, 4);
    if (len.size() != 4) return {};
    return read(s, pos, load_be32(reinterpret_cast<const uint8_t*>(len.data())));
  }
  void udp_send(std::span<const uint8_t> d) { ASSERT_TRUE(udp->send_to({kIpB, kPort}, d, now)); }

  std::vector<std::unique_ptr<Sock>> socks;  // first: destroyed after the stacks
  Node a, b;
  Iperf3Service svc;
  Instant now = Instant::from_ns(1'000'000'000);
  bool cut = false;  // the link is down: frames vanish
  UdpSocket* udp = nullptr;
  bool udp64 = false;
  std::vector<std::vector<uint8_t>> udp_replies;
  UdpReceiveStats rx_stats;
  std::vector<uint64_t> seqs;
};

// The client's side of one test up to TEST_RUNNING: control connection, parameters,
// TCP data streams. Returns the control socket; `streams` gets the data sockets.
struct ClientRun {
  Sock* ctrl = nullptr;
  size_t pos = 0;
  std::vector<Sock*> streams;
};

ClientRun start_test(Net& n, const std::string& params, uint32_t tcp_streams) {
  ClientRun t;
  t.ctrl = n.connect();
  n.send_cookie(*t.ctrl);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kParamExchange);
  n.send_json(*t.ctrl, params);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kCreateStreams);
  for (uint32_t i = 0; i < tcp_streams; ++i) {
    t.streams.push_back(n.connect());
    n.send_cookie(*t.streams.back());
  }
  return t;
}

// TEST_END, results both ways, IPERF_DONE; returns the server's results.
std::string end_test(Net& n, ClientRun& t) {
  // Skip TEST_START / TEST_RUNNING if the test did not read them.
  while (t.pos < t.ctrl->rx.size() &&
         (t.ctrl->rx[t.pos] == kTestStart || t.ctrl->rx[t.pos] == kTestRunning)) {
    ++t.pos;
  }
  n.send(*t.ctrl, std::string(1, static_cast<char>(kTestEnd)));
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kExchangeResults);
  n.send_json(*t.ctrl, R"({"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,)"
                       R"("sender_has_retransmits":1,"streams":[]})");
  std::string results = n.read_json(*t.ctrl, t.pos);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kDisplayResults);
  n.send(*t.ctrl, std::string(1, static_cast<char>(kIperfDone)));
  // As iperf3 does when it exits: every socket is closed.
  t.ctrl->c->close();
  for (auto& s : t.streams) {
    if (s->c != nullptr) s->c->close();
  }
  n.run_for(Duration::millis(50));
  return results;
}

using json::Json;

// The results document, or null when the text is not JSON.
Json parsed(const std::string& text) { return json::parse(text).value_or(Json()); }

// A number member, NaN when missing (so that every comparison with it fails).
double num(const Json& j, const char* key) {
  return json::number_or(j, key, std::numeric_limits<double>::quiet_NaN());
}

Json stream_by_id(const Json& doc, uint32_t id) {
  const Json* streams = json::member(doc, "streams");
  if (streams == nullptr) return {};
  for (const Json& s : *streams) {
    if (num(s, "id") == id) return s;
  }
  return {};
}

TEST(Iperf3Service, TcpTwoStreamsClientSends) {
  Net n;
  ClientRun t =
      start_test(n, R"({"tcp":true,"omit":0,"time":1,"num":0,"parallel":2,"len":1000})", 2);
  size_t pos = t.pos;
  EXPECT_EQ(n.read_state(*t.ctrl, pos), kTestStart);
  EXPECT_EQ(n.read_state(*t.ctrl, pos), kTestRunning);
  t.pos = pos;
  EXPECT_TRUE(n.svc.busy());
  // Stream 1 sends 300000 bytes, stream 2 ("id 3") 123457.
  n.send(*t.streams[0], std::string(300000, 'x'));
  n.send(*t.streams[1], std::string(123457, 'y'));
  n.run_for(Duration::millis(200));  // everything delivered before TEST_END
  const std::string results = end_test(n, t);
  const Json doc = parsed(results);
  ASSERT_TRUE(doc.is_object()) << results;
  EXPECT_EQ(num(doc, "sender_has_retransmits"), -1);  // the server only received
  EXPECT_EQ(doc.at("streams").size(), 2u);
  EXPECT_EQ(num(stream_by_id(doc, 1), "bytes"), 300000);
  EXPECT_EQ(num(stream_by_id(doc, 3), "bytes"), 123457);
  EXPECT_EQ(num(stream_by_id(doc, 3), "retransmits"), -1);
  EXPECT_GT(num(stream_by_id(doc, 1), "end_time"), 0.2);
  EXPECT_EQ(n.svc.counters().rx_bytes, 423457u);
  EXPECT_EQ(n.svc.counters().connections, 3u);
  EXPECT_EQ(n.svc.stats().tests_completed, 1u);
  EXPECT_FALSE(n.svc.busy());
  // The data connections were closed by the server at TEST_END.
  EXPECT_TRUE(t.streams[0]->peer_closed);
  EXPECT_TRUE(n.run_until([&] { return n.svc.open_connections() == 0; }));
}

TEST(Iperf3Service, ReverseWithByteLimitStopsAtTheLimit) {
  Net n;
  ClientRun t =
      start_test(n, R"({"tcp":true,"time":0,"num":1000000,"parallel":2,"reverse":true})", 2);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestRunning);
  // The server sends exactly -n bytes over both streams, then waits for TEST_END.
  EXPECT_TRUE(
      n.run_until([&] { return t.streams[0]->rx.size() + t.streams[1]->rx.size() >= 1000000; },
                  Duration::seconds(10)));
  n.run_for(Duration::millis(300));
  EXPECT_EQ(t.streams[0]->rx.size() + t.streams[1]->rx.size(), 1000000u);
  const std::string results = end_test(n, t);
  const Json doc = parsed(results);
  ASSERT_TRUE(doc.is_object()) << results;
  EXPECT_EQ(num(doc, "sender_has_retransmits"), 1);
  EXPECT_EQ(num(stream_by_id(doc, 1), "bytes"), static_cast<double>(t.streams[0]->rx.size()));
  EXPECT_EQ(num(stream_by_id(doc, 3), "bytes"), static_cast<double>(t.streams[1]->rx.size()));
  EXPECT_EQ(num(stream_by_id(doc, 1), "retransmits"), 0);  // a clean link
  EXPECT_EQ(n.svc.counters().tx_bytes, 1000000u);
}

TEST(Iperf3Service, BidirectionalStreamsAreMatchedInOrder) {
  Net n;
  ClientRun t = start_test(n,
                           R"({"tcp":true,"time":1,"parallel":1,"bidirectional":true,)"
                           R"("bandwidth":8000000})",
                           2);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestRunning);
  // The first stream the client opened carries its data to us; we send on the second,
  // rate-limited to 8 Mbit/s = 1 MB/s.
  n.send(*t.streams[0], std::string(5000, 'u'));
  n.run_for(Duration::millis(500));
  const size_t got = t.streams[1]->rx.size();
  EXPECT_EQ(t.streams[0]->rx.size(), 0u);
  EXPECT_NEAR(static_cast<double>(got), 500000.0, 20000.0);
  const std::string results = end_test(n, t);
  const Json doc = parsed(results);
  ASSERT_TRUE(doc.is_object()) << results;
  EXPECT_EQ(num(stream_by_id(doc, 1), "bytes"), 5000);
  EXPECT_GE(num(stream_by_id(doc, 3), "bytes"), static_cast<double>(got));
}

TEST(Iperf3Service, UdpClientSendsLossAndJitterReported) {
  Net n;
  ClientRun t =
      start_test(n, R"({"udp":true,"time":1,"parallel":1,"len":200,"bandwidth":1000000})", 0);
  EXPECT_TRUE(n.svc.udp_bound());
  const uint8_t hello[4] = {'9', '8', '7', '6'};
  n.udp_send(hello);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestRunning);
  ASSERT_EQ(n.udp_replies.size(), 1u);
  EXPECT_EQ(std::string(n.udp_replies[0].begin(), n.udp_replies[0].end()), "6789");
  // Datagrams 1..100 except 10 and 20; 20 arrives late, after 30.
  std::vector<uint8_t> d(200, 0);
  for (uint64_t seq = 1; seq <= 100; ++seq) {
    if (seq == 10 || seq == 20) continue;
    write_udp_header(d, false, n.now, seq);
    n.udp_send(d);
    if (seq == 30) {
      write_udp_header(d, false, n.now, 20);
      n.udp_send(d);
    }
    n.step(Duration::micros(500));
  }
  n.run_for(Duration::millis(10));
  const std::string results = end_test(n, t);
  const Json doc = parsed(results);
  ASSERT_TRUE(doc.is_object()) << results;
  const Json s = stream_by_id(doc, 1);
  EXPECT_EQ(num(s, "packets"), 100);
  EXPECT_EQ(num(s, "errors"), 1);  // 10 lost; 20 came late
  EXPECT_EQ(num(s, "bytes"), 99 * 200);
  EXPECT_GE(num(s, "jitter"), 0);
  EXPECT_LT(num(s, "jitter"), 0.001);
  EXPECT_EQ(n.svc.counters().rx_messages, 99u);
  EXPECT_FALSE(n.svc.udp_bound());  // unbound with the test
}

TEST(Iperf3Service, UdpReverseServerSendsAtTheRate) {
  Net n;
  n.udp64 = true;
  ClientRun t = start_test(n,
                           R"({"udp":true,"time":1,"parallel":1,"reverse":true,"len":1000,)"
                           R"("bandwidth":8000000,"udp_counters_64bit":1})",
                           0);
  const uint8_t hello[4] = {'9', '8', '7', '6'};
  n.udp_send(hello);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestRunning);
  n.run_for(Duration::seconds(1));
  // 8 Mbit/s of 1000-byte datagrams: 1000 per second, numbered from 1 without gaps.
  EXPECT_NEAR(static_cast<double>(n.seqs.size()), 1000.0, 5.0);
  for (size_t i = 0; i < n.seqs.size(); ++i) ASSERT_EQ(n.seqs[i], i + 1);
  EXPECT_EQ(n.rx_stats.lost, 0u);
  const std::string results = end_test(n, t);
  const Json doc = parsed(results);
  ASSERT_TRUE(doc.is_object()) << results;
  // What the server reports sending is what arrived (the link lost nothing).
  const size_t got = n.seqs.size();
  EXPECT_EQ(num(stream_by_id(doc, 1), "packets"), static_cast<double>(got));
  EXPECT_EQ(n.svc.counters().tx_messages, got);
  EXPECT_EQ(n.svc.counters().tx_bytes, got * 1000);
  // No more datagrams once the test is over.
  n.run_for(Duration::millis(100));
  EXPECT_EQ(n.seqs.size(), got);
}

TEST(Iperf3Service, SecondClientIsToldTheServerIsBusy) {
  Net n;
  ClientRun t = start_test(n, R"({"tcp":true,"time":1,"parallel":1})", 1);
  auto other = n.connect();
  n.send_cookie(*other, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz");
  size_t pos = 0;
  EXPECT_EQ(n.read_state(*other, pos), kAccessDenied);
  EXPECT_TRUE(n.run_until([&] { return other->peer_closed; }));
  EXPECT_EQ(n.svc.stats().access_denied, 1u);
  EXPECT_TRUE(n.svc.busy());
  end_test(n, t);
  EXPECT_EQ(n.svc.stats().tests_completed, 1u);
}

TEST(Iperf3Service, WrongCookieOnADataStreamIsDenied) {
  Net n;
  ClientRun t = start_test(n, R"({"tcp":true,"time":1,"parallel":2})", 1);
  auto stranger = n.connect();
  n.send_cookie(*stranger, "0000000000000000000000000000000000ab");
  size_t pos = 0;
  EXPECT_EQ(n.read_state(*stranger, pos), kAccessDenied);
  // The real second stream still completes the set.
  t.streams.push_back(n.connect());
  n.send_cookie(*t.streams.back());
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestRunning);
  end_test(n, t);
}

TEST(Iperf3Service, BadParametersGetServerError) {
  struct Case {
    const char* params;
    int32_t code;
  };
  for (const Case& c :
       {Case{R"({"tcp":true,"parallel":500})", kErrNumStreams},
        Case{R"({"tcp":true,"reverse":true,"bidirectional":true})", kErrReverseBidir},
        Case{R"({"tcp":true,)", kErrRecvParams}}) {
    Net n;
    auto ctrl = n.connect();
    n.send_cookie(*ctrl);
    size_t pos = 0;
    EXPECT_EQ(n.read_state(*ctrl, pos), kParamExchange);
    n.send_json(*ctrl, c.params);
    EXPECT_EQ(n.read_state(*ctrl, pos), kServerError) << c.params;
    std::string codes = n.read(*ctrl, pos, 8);
    ASSERT_EQ(codes.size(), 8u);
    EXPECT_EQ(static_cast<int32_t>(load_be32(reinterpret_cast<const uint8_t*>(codes.data()))),
              c.code);
    EXPECT_TRUE(n.run_until([&] { return ctrl->peer_closed; }));
    EXPECT_FALSE(n.svc.busy());
    EXPECT_EQ(n.svc.stats().server_errors, 1u);
  }
}

TEST(Iperf3Service, OversizedParameterLengthIsRefused) {
  Net n;
  auto ctrl = n.connect();
  n.send_cookie(*ctrl);
  size_t pos = 0;
  EXPECT_EQ(n.read_state(*ctrl, pos), kParamExchange);
  n.send(*ctrl, std::string("\x7f\xff\xff\xff", 4));
  EXPECT_EQ(n.read_state(*ctrl, pos), kServerError);
  EXPECT_FALSE(n.svc.busy());
}

TEST(Iperf3Service, ClientResetMidTestFreesEverything) {
  Net n;
  ClientRun t = start_test(n,
                           R"({"udp":true,"time":10,"parallel":2,"bidirectional":true,)"
                           R"("len":500,"bandwidth":4000000})",
                           0);
  const uint8_t hello[4] = {'9', '8', '7', '6'};
  for (int i = 0; i < 4; ++i) {
    // Four UDP streams, four client ports (as four client sockets).
    UdpSocket* s = i == 0 ? n.udp : n.bind_client(static_cast<uint16_t>(40000 + i));
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->send_to({kIpB, kPort}, hello, n.now));
    n.step();
  }
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
  n.run_for(Duration::millis(200));
  EXPECT_GT(n.seqs.size(), 50u);  // the server sends on its two streams
  EXPECT_TRUE(n.svc.udp_bound());
  t.ctrl->c->abort();  // the client process dies: its kernel resets the connection
  n.run_for(Duration::millis(10));
  EXPECT_FALSE(n.svc.busy());
  EXPECT_FALSE(n.svc.udp_bound());
  EXPECT_EQ(n.svc.open_connections(), 0u);
  EXPECT_EQ(n.svc.stats().tests_aborted, 1u);
  const size_t seen = n.seqs.size();
  n.run_for(Duration::millis(200));
  EXPECT_EQ(n.seqs.size(), seen);  // nothing more is sent
  // And the next test runs.
  ClientRun t2 = start_test(n, R"({"tcp":true,"time":1,"parallel":1})", 1);
  EXPECT_EQ(n.read_state(*t2.ctrl, t2.pos), kTestStart);
  end_test(n, t2);
  EXPECT_EQ(n.svc.stats().tests_completed, 1u);
}

TEST(Iperf3Service, SilentClientTimesOut) {
  Net n;
  ClientRun t = start_test(n, R"({"tcp":true,"time":0,"num":100000000,"parallel":1})", 1);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
  n.cut = true;  // the client's host vanishes without a FIN or RST
  n.run_for(Duration::seconds(29));
  EXPECT_TRUE(n.svc.busy());
  n.run_for(Duration::seconds(2));
  EXPECT_FALSE(n.svc.busy());
  EXPECT_EQ(n.svc.stats().timeouts, 1u);
  EXPECT_EQ(n.svc.open_connections(), 0u);
  n.cut = false;
}

TEST(Iperf3Service, ConnectionWithoutCookieTimesOut) {
  Net n;
  auto s = n.connect();
  n.send(*s, "abc");
  n.run_for(Duration::seconds(9));
  EXPECT_EQ(n.svc.open_connections(), 1u);
  EXPECT_TRUE(n.run_until([&] { return s->closed; }, Duration::seconds(2)));
  EXPECT_EQ(s->reason, tcp::CloseReason::kReset);
  EXPECT_EQ(n.svc.open_connections(), 0u);
  EXPECT_EQ(n.svc.stats().timeouts, 1u);
  EXPECT_FALSE(n.svc.busy());
}

TEST(Iperf3Service, TestsBackToBack) {
  Net n;
  for (int i = 0; i < 3; ++i) {
    ClientRun t = start_test(n, R"({"tcp":true,"time":1,"parallel":1})", 1);
    EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
    EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestRunning);
    n.send(*t.streams[0], std::string(1000 * (i + 1), 'z'));
    n.run_for(Duration::millis(50));
    const Json doc = parsed(end_test(n, t));
    ASSERT_TRUE(doc.is_object());
    EXPECT_EQ(num(stream_by_id(doc, 1), "bytes"), 1000 * (i + 1));
  }
  EXPECT_EQ(n.svc.stats().tests_completed, 3u);
  EXPECT_EQ(n.svc.counters().rx_bytes, 6000u);
}

TEST(Iperf3Service, StrayUdpIsCountedNotAnswered) {
  Net n;
  ClientRun t = start_test(n, R"({"udp":true,"time":1,"parallel":1})", 0);
  const uint8_t hello[4] = {'9', '8', '7', '6'};
  n.udp_send(hello);
  EXPECT_EQ(n.read_state(*t.ctrl, t.pos), kTestStart);
  // A datagram from another port during the test, and a short one on the stream.
  UdpSocket* other = n.a.stack.udp_bind(41000, [](UdpSocket&, const UdpDatagram&, Instant) {});
  ASSERT_TRUE(other->send_to({kIpB, kPort}, hello, n.now));
  const uint8_t tiny[6] = {};
  n.udp_send(tiny);
  n.run_for(Duration::millis(5));
  EXPECT_EQ(n.svc.stats().udp_stray, 1u);
  EXPECT_EQ(n.svc.stats().udp_short, 1u);
  EXPECT_EQ(n.udp_replies.size(), 1u);
  end_test(n, t);
}

// Garbage after the cookie, in the parameter phase and during a test: the service ends
// the test (SERVER_ERROR or a reset) and is free again; it never crashes or hangs.
// Bounded: 20 rounds of at most 200 random bytes.
TEST(Iperf3Service, GarbageOnTheControlConnection) {
  uint64_t x = 0x2545f4914f6cdd1dull;
  auto rnd = [&x] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  Net n;
  for (int round = 0; round < 20; ++round) {
    std::string junk(1 + rnd() % 200, '\0');
    for (auto& c : junk) c = static_cast<char>(rnd());
    Sock* ctrl = nullptr;
    if (round % 2 == 0) {
      ctrl = n.connect();
      n.send_cookie(*ctrl);
    } else {
      ClientRun t = start_test(n, R"({"tcp":true,"time":1,"parallel":1})", 1);
      ctrl = t.ctrl;
    }
    n.send(*ctrl, junk);
    // Whatever the bytes said, within the handshake timeout the server is free again.
    EXPECT_TRUE(n.run_until([&] { return !n.svc.busy(); }, Duration::seconds(12))) << round;
    if (ctrl->c != nullptr) ctrl->c->abort();
    n.run_for(Duration::millis(5));
  }
  EXPECT_FALSE(n.svc.busy());
  EXPECT_EQ(n.svc.stats().tests_started, 20u);
  EXPECT_EQ(n.svc.stats().tests_completed, 0u);
}

// cpu_util_* report the core's CPU time over the test's wall time, in percent; with a
// clock that charges a quarter of the elapsed time as user and a twentieth as system
// time, the server reports about 25 % and 5 %.
TEST(Iperf3Service, CpuUtilisationFromTheCoreClock) {
  Net n;
  const Instant t0 = n.now;
  n.svc.set_cpu_clock([&n, t0] {
    const int64_t ns = (n.now - t0).ns();
    return CpuTimes{Duration::nanos(ns / 4), Duration::nanos(ns / 20)};
  });
  ClientRun t =
      start_test(n, R"({"tcp":true,"omit":0,"time":1,"num":0,"parallel":1,"len":1000})", 1);
  n.send(*t.streams[0], std::string(100000, 'x'));
  n.run_for(Duration::millis(500));
  const std::string results = end_test(n, t);
  const Json doc = parsed(results);
  ASSERT_TRUE(doc.is_object()) << results;
  EXPECT_NEAR(num(doc, "cpu_util_user"), 25.0, 2.0) << results;
  EXPECT_NEAR(num(doc, "cpu_util_system"), 5.0, 0.5) << results;
  EXPECT_NEAR(num(doc, "cpu_util_total"), num(doc, "cpu_util_user") + num(doc, "cpu_util_system"),
              1e-9);
}

}  // namespace
}  // namespace ws
