// The HTTP load generator (stack/apps/http_client) against the http service, two TcpStacks
// in the deterministic simulator: keep-alive and one-request-per-connection runs counted
// exactly, every response checked; wrong statuses, lengths and bodies, and a peer that does
// not speak HTTP, are counted as errors.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stack/apps/http_client.hpp"
#include "stack/apps/http_service.hpp"
#include "stack/apps/http_text.hpp"
#include "stack/apps/tcp_services.hpp"
#include "stack/iface/stack.hpp"
#include "tests/sim/sim.hpp"

namespace ws {
namespace {

constexpr uint16_t kPort = 80;
constexpr uint16_t kEchoPort = 7;

struct Rig {
  Rig() {
    sim::LinkParams link;
    link.delay = Duration::micros(50);
    n = std::make_unique<sim::Net>(link, link, 9, sim::default_config(1), sim::default_config(2));
    std::vector<HttpRoute> routes;
    routes.push_back({"/", 200, "text/html", std::nullopt, 438});
    routes.push_back({"/1m.bin", 200, "application/octet-stream", std::nullopt, 1 << 20});
    routes.push_back({"/hello", 200, "text/plain", std::string("hello\n"), 6});
    routes.push_back({"/teapot", 418, "text/plain", std::string("short and stout\n"), 16});
    web = std::make_unique<HttpService>("web", kPort, n->b, std::move(routes));
    EXPECT_TRUE(web->listen());
  }
  ~Rig() {
    n->a.shutdown_all(n->now);
    n->b.shutdown_all(n->now);
  }
  // The client's final report, driving both stacks and the services' deadlines; `each`
  // looks at the stacks after every poll.
  ClientReport run(Service& client, Duration max = Duration::seconds(60),
                   const std::function<void()>& each = {}) {
    EXPECT_TRUE(client.start(dummy, n->now));
    const Instant end = n->now + max;
    ClientReport rep;
    while (n->now < end) {
      if (client.report(n->now, rep) && rep.final) return rep;
      Instant next = earliest(end, client.poll(n->now));
      next = earliest(next, web->poll(n->now));
      if (each) each();
      n->step(std::max(next, n->now + Duration::micros(1)));
    }
    ADD_FAILURE() << "no final report";
    return rep;
  }
  std::unique_ptr<sim::Net> n;
  std::unique_ptr<HttpService> web;
  Stack dummy;
};

ClientParams params(uint32_t connections, uint64_t count, uint16_t port = kPort) {
  ClientParams p;
  p.target = {sim::kAddrB, port};
  p.connections = connections;
  p.count = count;
  p.duration = Duration::zero();
  return p;
}

HttpClientParams checked(std::string path, uint64_t bytes, uint32_t per_conn) {
  HttpClientParams h;
  h.path = std::move(path);
  h.requests_per_connection = per_conn;
  h.expect_body_bytes = bytes;
  h.check_body = true;
  return h;
}

TEST(HttpClient, KeepAliveEveryResponseChecked) {
  Rig r;
  HttpClientService c("load", params(4, 400), checked("/", 438, 0), r.n->a);
  const ClientReport rep = r.run(c);
  EXPECT_EQ(rep.messages, 400u);
  EXPECT_EQ(rep.bytes, 400u * 438);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.connect_failures, 0u);
  EXPECT_EQ(rep.connections, 4u);
  ASSERT_TRUE(rep.has_rtt);
  EXPECT_GE(rep.rtt_ns[0], 100'000u);  // at least one round trip of the link
  EXPECT_LE(rep.rtt_ns[0], rep.rtt_ns[4]);
  EXPECT_EQ(r.web->counters().tx_messages, 400u);
}

TEST(HttpClient, OneRequestPerConnection) {
  Rig r;
  HttpClientService c("cps", params(8, 120), checked("/", 438, 1), r.n->a);
  const ClientReport rep = r.run(c);
  EXPECT_EQ(rep.messages, 120u);
  EXPECT_EQ(rep.connections, 120u);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(r.web->counters().connections, 120u);
  // Measured from the SYN: the handshake's round trip and the request's.
  EXPECT_GE(rep.rtt_ns[0], 200'000u);
}

TEST(HttpClient, RequestsPerConnectionThenNewConnection) {
  Rig r;
  HttpClientService c("three", params(2, 30), checked("/", 438, 3), r.n->a);
  const ClientReport rep = r.run(c);
  EXPECT_EQ(rep.messages, 30u);
  EXPECT_EQ(rep.connections, 10u);
  EXPECT_EQ(rep.errors, 0u);
}

TEST(HttpClient, LargeBodiesInPieces) {
  Rig r;
  HttpClientService c("big", params(2, 6), checked("/1m.bin", 1 << 20, 0), r.n->a);
  const ClientReport rep = r.run(c);
  EXPECT_EQ(rep.messages, 6u);
  EXPECT_EQ(rep.bytes, 6u << 20);
  EXPECT_EQ(rep.errors, 0u);
}

// max_connecting: at most that many of the core's connections in SYN-SENT, the first
// alone; every connection still opens, and requests run on them.
TEST(HttpClient, OpensArePacedByMaxConnecting) {
  Rig r;
  ClientParams p = params(200, 0);
  p.duration = Duration::seconds(1);
  p.max_connecting = 8;
  HttpClientService c("opens", p, checked("/", 438, 0), r.n->a);
  uint64_t most = 0;
  const ClientReport rep = r.run(c, Duration::seconds(30), [&] {
    const uint64_t syn_sent = r.n->a.count_in(tcp::TcpState::kSynSent);
    most = std::max(most, syn_sent);
    if (r.n->a.established_total() == 0) {
      EXPECT_LE(syn_sent, 1u);
    }
  });
  EXPECT_EQ(most, 8u);
  EXPECT_EQ(rep.connections, 200u);
  EXPECT_GT(rep.messages, 200u);
  EXPECT_EQ(rep.errors + rep.connect_failures, 0u);
}

// One second of `conns` connections at `rate` requests a second, `per_conn` requests per
// connection (0: keep-alive), every response checked.
ClientReport paced_run(uint32_t conns, uint64_t rate, uint32_t per_conn) {
  Rig r;
  ClientParams p = params(conns, 0);
  p.duration = Duration::seconds(1);
  p.rate = rate;
  HttpClientService c("paced", p, checked("/", 438, per_conn), r.n->a);
  return r.run(c);
}

TEST(HttpClient, RatePacesRequests) {
  const ClientReport rep = paced_run(4, 2000, 1);
  EXPECT_NEAR(static_cast<double>(rep.messages), 2000, 20);
  EXPECT_EQ(rep.errors, 0u);
}

// Keep-alive connections whose next request waits on the rate: sent on the schedule, oldest
// waiting first, on the same four connections for the whole run.
TEST(HttpClient, RatePacesKeepAliveRequests) {
  const ClientReport rep = paced_run(4, 2000, 0);
  EXPECT_NEAR(static_cast<double>(rep.messages), 2000, 20);
  EXPECT_EQ(rep.connections, 4u);
  EXPECT_EQ(rep.errors + rep.connect_failures, 0u);
}

// Connections that close after three requests while others wait on the rate: a slot
// reopened while it is still listed as waiting keeps one place in that list.
TEST(HttpClient, RatePacesRequestsAcrossReconnects) {
  const ClientReport rep = paced_run(8, 3000, 3);
  EXPECT_NEAR(static_cast<double>(rep.messages), 3000, 30);
  EXPECT_GE(rep.connections, 3000u / 3 - 8);
  EXPECT_EQ(rep.errors + rep.connect_failures, 0u);
}

// A count reached while keep-alive connections wait for their next request: the run ends
// with exactly the count, and does not spin on the waiting connections.
TEST(HttpClient, CountReachedWithConnectionsWaiting) {
  Rig r;
  HttpClientService c("count", params(64, 1000), checked("/", 438, 0), r.n->a);
  const ClientReport rep = r.run(c, Duration::seconds(10));
  EXPECT_EQ(rep.messages, 1000u);
  EXPECT_EQ(rep.errors + rep.connect_failures, 0u);
}

// The run's end cuts the handshakes still in flight: the client's own doing, not a failure
// to connect (an overloaded generator would otherwise report its stop as server failures).
TEST(HttpClient, HandshakesCutAtTheEndAreNotConnectFailures) {
  Rig r;
  ClientParams p = params(64, 0);
  p.duration = Duration::millis(200);
  HttpClientService c("cut", p, checked("/", 438, 1), r.n->a);
  uint64_t syn_sent_at_end = 0;
  const Instant t0 = r.n->now;
  const ClientReport rep = r.run(c, Duration::seconds(30), [&] {
    if (r.n->now - t0 < p.duration) syn_sent_at_end = r.n->a.count_in(tcp::TcpState::kSynSent);
  });
  EXPECT_GT(syn_sent_at_end, 0u);  // handshakes were in flight when the run ended
  EXPECT_GT(rep.messages, 100u);
  EXPECT_EQ(rep.connect_failures, 0u);
  EXPECT_EQ(rep.errors, 0u);
}

TEST(HttpClient, WrongStatusLengthOrBodyAreErrors) {
  Rig r;
  HttpClientService status("status", params(1, 5), checked("/teapot", 16, 0), r.n->a);
  ClientReport rep = r.run(status);
  EXPECT_EQ(rep.errors, 5u);
  EXPECT_EQ(rep.messages, 0u);

  HttpClientService length("length", params(1, 5), checked("/", 437, 0), r.n->a);
  rep = r.run(length);
  EXPECT_EQ(rep.errors, 5u);

  // The literal body is not the generated one.
  HttpClientService body("body", params(1, 5), checked("/hello", 6, 0), r.n->a);
  rep = r.run(body);
  EXPECT_EQ(rep.errors, 5u);
  EXPECT_EQ(rep.messages, 0u);

  // Without check_body only the length is compared.
  HttpClientParams h = checked("/hello", 6, 0);
  h.check_body = false;
  HttpClientService len_only("len_only", params(1, 5), h, r.n->a);
  rep = r.run(len_only);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.messages, 5u);
}

// A server whose responses differ from one another in a byte of their header blocks (the
// client remembers the last one it parsed): each is checked on its own; a field name that
// is not a token (RFC 9110 5.1) makes a response unusable.
TEST(HttpClient, EachResponseHeadIsCheckedOnItsOwn) {
  Rig r;
  std::string body;
  for (size_t i = 0; i < 438; ++i) body += http::body_byte(i);
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 438\r\n\r\n" + body;
  const std::vector<std::string> script = {
      ok,
      "HTTP/1.1 200 OK\r\nContent-Length: 437\r\n\r\n" + body.substr(0, 437),
      ok,
      "HTTP/1.1 200 OK\r\nContent-Length: 438\r\nBad Name: x\r\n\r\n" + body,
  };
  size_t next = 0;
  tcp::ListenCallbacks l;
  l.on_accept = [&](tcp::Connection& c) {
    tcp::ConnCallbacks cb;
    cb.on_data = [&](tcp::Connection& conn, std::span<const uint8_t> d) {
      const std::string& s = script[next++ % script.size()];
      EXPECT_EQ(conn.send({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), s.size());
      return d.size();
    };
    c.set_callbacks(std::move(cb));
    return true;
  };
  ASSERT_TRUE(r.n->b.listen(8080, std::move(l)));
  HttpClientService c("scripted", params(1, 4, 8080), checked("/", 438, 0), r.n->a);
  const ClientReport rep = r.run(c);
  EXPECT_EQ(next, 4u);
  EXPECT_EQ(rep.messages, 2u);
  EXPECT_EQ(rep.errors, 2u);  // the wrong length, then the bad field name
}

TEST(HttpClient, NotHttpIsAnErrorNotAHang) {
  Rig r;
  TcpEchoService echo("echo", kEchoPort, r.n->b, Framing::kNone, pipeline::PipelineParams{});
  ASSERT_TRUE(echo.start(r.dummy, r.n->now));
  ClientParams p = params(2, 0, kEchoPort);
  p.duration = Duration::millis(200);
  HttpClientService c("echoed", p, checked("/", 438, 0), r.n->a);
  const ClientReport rep = r.run(c);
  EXPECT_EQ(rep.messages, 0u);
  EXPECT_GT(rep.errors, 0u);  // the echoed request is no status line
  echo.stop(r.n->now);
}

}  // namespace
}  // namespace ws
