// The http service (stack/apps/http_service) driven over two TcpStacks in the
// deterministic simulator: a scripted client on stack A, the service on stack B.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stack/apps/http_service.hpp"
#include "tests/sim/sim.hpp"

namespace ws {
namespace {

constexpr uint16_t kPort = 80;
constexpr char kLine[] = "wirespeed generated body 0123456789 abcdefghijklmnopqrstuvwxyz.\n";

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// Splits `s` into responses; head[i] says whether the i-th answered a HEAD.
// Returns false when `s` does not hold exactly those complete responses.
bool parse_responses(const std::string& s, const std::vector<bool>& head,
                     std::vector<Response>& out) {
  size_t pos = 0;
  for (bool is_head : head) {
    const size_t end = s.find("\r\n\r\n", pos);
    if (end == std::string::npos) return false;
    Response r;
    std::string block = s.substr(pos, end - pos);
    size_t eol = block.find("\r\n");
    std::string line = block.substr(0, eol);
    if (line.rfind("HTTP/1.1 ", 0) != 0) return false;
    r.status = std::stoi(line.substr(9, 3));
    size_t p = eol == std::string::npos ? block.size() : eol + 2;
    while (p < block.size()) {
      size_t e = block.find("\r\n", p);
      if (e == std::string::npos) e = block.size();
      std::string f = block.substr(p, e - p);
      p = e + 2;
      const size_t colon = f.find(':');
      if (colon == std::string::npos) return false;
      std::string name = f.substr(0, colon);
      for (auto& ch : name) ch = static_cast<char>(std::tolower(ch));
      r.headers[name] = f.substr(colon + 2);
    }
    pos = end + 4;
    const size_t len = std::stoull(r.headers["content-length"]);
    if (!is_head) {
      if (s.size() - pos < len) return false;
      r.body = s.substr(pos, len);
      pos += len;
    }
    out.push_back(std::move(r));
  }
  return pos == s.size();
}

struct Harness {
  explicit Harness(HttpLimits limits = {}, uint32_t server_send_buffer = 0) {
    sim::LinkParams link;
    link.delay = Duration::micros(100);
    tcp::TcpConfig cb = sim::default_config(2);
    cb.send_buffer = server_send_buffer;
    n = std::make_unique<sim::Net>(link, link, 3, sim::default_config(1), cb);
    std::vector<HttpRoute> routes;
    routes.push_back({"/", 200, "text/html", std::nullopt, 438});
    routes.push_back({"/1m.bin", 200, "application/octet-stream", std::nullopt, 1 << 20});
    routes.push_back({"/hello", 200, "text/plain", std::string("hello\n"), 6});
    routes.push_back({"/teapot", 418, "text/plain", std::string("short and stout\n"), 16});
    svc = std::make_unique<HttpService>("web", kPort, n->b, std::move(routes), limits);
    EXPECT_TRUE(svc->listen());
  }
  // As the data plane does: the server's connections end (on_closed) while the service
  // still exists.
  ~Harness() { n->b.shutdown_all(n->now); }

  // A client connection; received bytes accumulate in `rx`.
  struct Client {
    tcp::Connection* c = nullptr;
    std::string rx;
    bool connected = false, peer_closed = false, closed = false;
    tcp::CloseReason reason = tcp::CloseReason::kNormal;
  };

  std::unique_ptr<Client> connect() {
    auto cl = std::make_unique<Client>();
    Client* p = cl.get();
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
    p->c = n->a.connect({sim::kAddrB, kPort}, std::move(cb), 0, n->now);
    EXPECT_NE(p->c, nullptr);
    EXPECT_TRUE(n->run_until([p] { return p->connected; }, Duration::seconds(5)));
    return cl;
  }

  void send(Client& cl, const std::string& s) {
    size_t off = 0;
    while (off < s.size() && cl.c) {
      off += cl.c->send({reinterpret_cast<const uint8_t*>(s.data()) + off, s.size() - off});
      if (off < s.size()) n->run_for(Duration::millis(1));
    }
  }

  // Runs until `count` responses are complete in cl.rx (or a timeout).
  bool await(Client& cl, const std::vector<bool>& head, std::vector<Response>& out) {
    bool ok = n->run_until(
        [&] {
          std::vector<Response> tmp;
          return parse_responses(cl.rx, head, tmp);
        },
        Duration::seconds(30));
    if (!ok) return false;
    return parse_responses(cl.rx, head, out);
  }

  std::unique_ptr<sim::Net> n;
  std::unique_ptr<HttpService> svc;
};

const char* kGetRoot = "GET / HTTP/1.1\r\nHost: t\r\nUser-Agent: test\r\n\r\n";

TEST(Http, GetRootWithGeneratedBody) {
  Harness h;
  auto cl = h.connect();
  h.send(*cl, kGetRoot);
  std::vector<Response> r;
  ASSERT_TRUE(h.await(*cl, {false}, r)) << cl->rx;
  EXPECT_EQ(r[0].status, 200);
  EXPECT_EQ(r[0].headers["content-type"], "text/html");
  EXPECT_EQ(r[0].headers["content-length"], "438");
  EXPECT_EQ(r[0].headers["connection"], "keep-alive");
  EXPECT_EQ(r[0].headers["server"], "wirespeed");
  ASSERT_EQ(r[0].body.size(), 438u);
  for (size_t i = 0; i < r[0].body.size(); ++i) ASSERT_EQ(r[0].body[i], kLine[i % 64]) << i;
  h.n->run_for(Duration::millis(100));
  EXPECT_FALSE(cl->peer_closed);
  EXPECT_EQ(h.svc->counters().rx_messages, 1u);
  EXPECT_EQ(h.svc->counters().tx_messages, 1u);
  EXPECT_EQ(h.svc->counters().rx_bytes, std::string(kGetRoot).size());
  EXPECT_EQ(h.svc->counters().tx_bytes, cl->rx.size());
}

TEST(Http, RequestSplitByteByByte) {
  Harness h;
  auto cl = h.connect();
  const std::string req = "GET /hello HTTP/1.1\r\nHost: t\r\nAccept: */*\r\n\r\n";
  for (char ch : req) {
    h.send(*cl, std::string(1, ch));
    h.n->run_for(Duration::millis(1));
  }
  std::vector<Response> r;
  ASSERT_TRUE(h.await(*cl, {false}, r)) << cl->rx;
  EXPECT_EQ(r[0].status, 200);
  EXPECT_EQ(r[0].body, "hello\n");
  // And again on the same connection, with LF-only line ends.
  cl->rx.clear();
  const std::string req2 = "GET /teapot HTTP/1.1\nHost: t\n\n";
  for (char ch : req2) {
    h.send(*cl, std::string(1, ch));
    h.n->run_for(Duration::millis(1));
  }
  r.clear();
  ASSERT_TRUE(h.await(*cl, {false}, r)) << cl->rx;
  EXPECT_EQ(r[0].status, 418);
  EXPECT_EQ(r[0].body, "short and stout\n");
}

TEST(Http, PipelinedRequestsAnsweredInOrder) {
  Harness h;
  auto cl = h.connect();
  std::string burst;
  burst += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "HEAD / HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET /nope?x=1 HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "POST /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello=world";
  burst += "GET /?q=1 HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET http://t/hello HTTP/1.1\r\nHost: t\r\n\r\n";
  h.send(*cl, burst);
  std::vector<Response> r;
  ASSERT_TRUE(h.await(*cl, {false, true, false, false, false, false}, r)) << cl->rx;
  EXPECT_EQ(r[0].status, 200);
  EXPECT_EQ(r[0].body, "hello\n");
  EXPECT_EQ(r[1].status, 200);
  EXPECT_EQ(r[1].headers["content-length"], "438");  // HEAD: headers only
  EXPECT_EQ(r[2].status, 404);
  EXPECT_EQ(r[3].status, 405);
  EXPECT_EQ(r[3].headers["allow"], "GET, HEAD");
  EXPECT_EQ(r[4].status, 200);
  EXPECT_EQ(r[4].body.size(), 438u);
  EXPECT_EQ(r[5].body, "hello\n");
  for (auto& x : r) EXPECT_EQ(x.headers["connection"], "keep-alive");
  EXPECT_EQ(h.svc->counters().rx_messages, 6u);
  EXPECT_EQ(h.svc->counters().tx_messages, 6u);
}

TEST(Http, MalformedGets400AndClose) {
  const char* bad[] = {
      "GARBAGE\r\n\r\n",
      "GET /\r\n\r\n",
      "GET / HTTP/2.0\r\nHost: t\r\n\r\n",
      "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 12x\r\n\r\n",
      "GET / HTTP/1.1\r\n\r\n",  // no Host
      "GET nopath HTTP/1.1\r\nHost: t\r\n\r\n",
      "G(T / HTTP/1.1\r\nHost: t\r\n\r\n",
  };
  for (const char* req : bad) {
    SCOPED_TRACE(req);
    Harness h;
    auto cl = h.connect();
    h.send(*cl, std::string(req) + kGetRoot);  // what follows the error is not answered
    ASSERT_TRUE(h.n->run_until([&] { return cl->peer_closed; }, Duration::seconds(5)));
    std::vector<Response> r;
    ASSERT_TRUE(parse_responses(cl->rx, {false}, r)) << cl->rx;
    EXPECT_EQ(r[0].status, 400);
    EXPECT_EQ(r[0].headers["connection"], "close");
    cl->c->close();
    EXPECT_TRUE(h.n->run_until([&] { return cl->closed; }, Duration::seconds(5)));
    EXPECT_EQ(cl->reason, tcp::CloseReason::kNormal);
  }
}

TEST(Http, OversizedHeaderGets431AndClose) {
  for (bool trickle : {false, true}) {
    SCOPED_TRACE(trickle ? "trickled" : "one piece");
    Harness h;
    auto cl = h.connect();
    std::string req = "GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n";
    if (trickle) {
      for (size_t i = 0; i < req.size() && !cl->peer_closed; i += 100) {
        h.send(*cl, req.substr(i, 100));
        h.n->run_for(Duration::millis(1));
      }
    } else {
      h.send(*cl, req);
    }
    ASSERT_TRUE(h.n->run_until([&] { return cl->peer_closed; }, Duration::seconds(5)));
    std::vector<Response> r;
    ASSERT_TRUE(parse_responses(cl->rx, {false}, r)) << cl->rx;
    EXPECT_EQ(r[0].status, 431);
    EXPECT_EQ(r[0].headers["connection"], "close");
  }
  // Just under the limit is fine.
  Harness h;
  auto cl = h.connect();
  std::string req = "GET / HTTP/1.1\r\nHost: t\r\nX-Big: ";
  req += std::string(8192 - req.size() - 4, 'a') + "\r\n\r\n";
  ASSERT_EQ(req.size(), 8192u);
  h.send(*cl, req);
  std::vector<Response> r;
  ASSERT_TRUE(h.await(*cl, {false}, r)) << cl->rx;
  EXPECT_EQ(r[0].status, 200);
}

TEST(Http, ConnectionCloseAndHttp10) {
  const char* reqs[] = {
      "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
      "GET /hello HTTP/1.0\r\n\r\n",
  };
  for (const char* req : reqs) {
    SCOPED_TRACE(req);
    Harness h;
    auto cl = h.connect();
    h.send(*cl, req);
    ASSERT_TRUE(h.n->run_until([&] { return cl->peer_closed; }, Duration::seconds(5)));
    std::vector<Response> r;
    ASSERT_TRUE(parse_responses(cl->rx, {false}, r)) << cl->rx;
    EXPECT_EQ(r[0].status, 200);
    EXPECT_EQ(r[0].body, "hello\n");
    EXPECT_EQ(r[0].headers["connection"], "close");
  }
  // HTTP/1.0 with keep-alive stays open.
  Harness h;
  auto cl = h.connect();
  h.send(*cl, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  std::vector<Response> r;
  ASSERT_TRUE(h.await(*cl, {false}, r)) << cl->rx;
  EXPECT_EQ(r[0].headers["connection"], "keep-alive");
  h.n->run_for(Duration::millis(100));
  EXPECT_FALSE(cl->peer_closed);
}

TEST(Http, HalfClosedClientGetsItsAnswersThenClose) {
  Harness h;
  auto cl = h.connect();
  h.send(*cl, std::string(kGetRoot) + kGetRoot);
  cl->c->shutdown_write();
  ASSERT_TRUE(h.n->run_until([&] { return cl->closed; }, Duration::seconds(5)));
  std::vector<Response> r;
  ASSERT_TRUE(parse_responses(cl->rx, {false, false}, r)) << cl->rx;
  EXPECT_EQ(r[1].body.size(), 438u);
}

TEST(Http, RequestsPerConnectionBound) {
  Harness h(HttpLimits{8192, 3});
  auto cl = h.connect();
  std::string burst;
  for (int i = 0; i < 5; ++i) burst += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  h.send(*cl, burst);
  ASSERT_TRUE(h.n->run_until([&] { return cl->peer_closed; }, Duration::seconds(5)));
  std::vector<Response> r;
  ASSERT_TRUE(parse_responses(cl->rx, {false, false, false}, r)) << cl->rx;
  EXPECT_EQ(r[0].headers["connection"], "keep-alive");
  EXPECT_EQ(r[1].headers["connection"], "keep-alive");
  EXPECT_EQ(r[2].headers["connection"], "close");
}

// The service remembers the last well-formed request it parsed: a request that only
// starts like it, or differs from it in one byte, is parsed and answered on its own.
TEST(Http, RepeatedAndNearlyRepeatedRequests) {
  Harness h;
  auto cl = h.connect();
  std::string burst;
  burst += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET /hellp HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc";
  burst += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET /hello HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n";
  h.send(*cl, burst);
  ASSERT_TRUE(h.n->run_until([&] { return cl->peer_closed; }, Duration::seconds(5)));
  std::vector<Response> r;
  ASSERT_TRUE(parse_responses(cl->rx, {false, false, false, true, false, false, false, false}, r))
      << cl->rx;
  const int status[] = {200, 200, 404, 200, 200, 200, 200, 400};
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i].status, status[i]) << i;
  EXPECT_EQ(r[3].body, "");
  EXPECT_EQ(r[6].body, "hello\n");  // the body of the one before was skipped
  EXPECT_EQ(r[7].headers["connection"], "close");
  EXPECT_EQ(h.svc->counters().rx_messages, 8u);
}

TEST(Http, OneMebibyteBodiesStreamWithBackpressure) {
  // A small fixed send buffer on the server: the body goes out through on_writable.
  Harness h(HttpLimits{}, 32 * 1024);
  auto cl = h.connect();
  std::string burst;
  burst += "GET /1m.bin HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "HEAD /1m.bin HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET /1m.bin HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  h.send(*cl, burst);
  std::vector<Response> r;
  ASSERT_TRUE(h.await(*cl, {false, true, false, false}, r)) << cl->rx.size();
  for (int i : {0, 2}) {
    EXPECT_EQ(r[i].status, 200);
    EXPECT_EQ(r[i].headers["content-type"], "application/octet-stream");
    EXPECT_EQ(r[i].headers["content-length"], "1048576");
    ASSERT_EQ(r[i].body.size(), 1u << 20);
    for (size_t k = 0; k < r[i].body.size(); ++k) ASSERT_EQ(r[i].body[k], kLine[k % 64]) << k;
  }
  EXPECT_EQ(r[1].headers["content-length"], "1048576");
  EXPECT_EQ(r[3].body, "hello\n");
  EXPECT_EQ(h.svc->counters().tx_messages, 4u);
}

TEST(Http, ManyConnections) {
  Harness h;
  std::vector<std::unique_ptr<Harness::Client>> cls;
  for (int i = 0; i < 50; ++i) cls.push_back(h.connect());
  for (auto& cl : cls) h.send(*cl, kGetRoot);
  for (auto& cl : cls) {
    std::vector<Response> r;
    ASSERT_TRUE(h.await(*cl, {false}, r));
    EXPECT_EQ(r[0].status, 200);
  }
  EXPECT_EQ(h.svc->counters().connections, 50u);
}

// A closed connection's state serves the next one, clean: a request cut off mid-header by
// an abort leaves nothing behind for the connection that reuses its state.
TEST(Http, ConnectionStateIsReusedClean) {
  Harness h;
  auto cut = h.connect();
  h.send(*cut, "GET /hel");
  h.n->run_for(Duration::millis(10));
  cut->c->abort();
  h.n->run_for(Duration::millis(10));
  EXPECT_EQ(h.svc->open_connections(), 0u);
  for (int i = 0; i < 20; ++i) {
    auto cl = h.connect();
    h.send(*cl, "GET /teapot HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    std::vector<Response> r;
    ASSERT_TRUE(h.await(*cl, {false}, r)) << i << ": " << cl->rx;
    EXPECT_EQ(r[0].status, 418) << i;
    EXPECT_EQ(r[0].body, "short and stout\n") << i;
    ASSERT_TRUE(h.n->run_until([&] { return cl->peer_closed; }, Duration::seconds(5)));
    cl->c->close();
    h.n->run_for(Duration::millis(10));
  }
  EXPECT_EQ(h.svc->counters().connections, 21u);
  EXPECT_EQ(h.svc->open_connections(), 0u);
  EXPECT_LE(h.svc->connection_states(), 2u);  // one at a time, and the aborted one's
}

}  // namespace
}  // namespace ws

namespace ws {
namespace {

TEST(Http, IdleConnectionsAreReset) {
  HttpLimits limits;
  limits.idle_timeout = Duration::seconds(5);
  Harness h(limits);
  auto trickler = h.connect();
  auto idle = h.connect();
  auto busy = h.connect();
  h.n->run_for(Duration::millis(10));  // the server accepts on the handshake's last ACK
  EXPECT_EQ(h.svc->open_connections(), 3u);
  h.send(*trickler, "GET / HT");
  // `busy` keeps making requests; the other two are reset after 5 s without progress.
  for (int i = 0; i < 8; ++i) {
    busy->rx.clear();
    h.send(*busy, kGetRoot);
    std::vector<Response> r;
    ASSERT_TRUE(h.await(*busy, {false}, r));
    h.n->run_for(Duration::seconds(1));
    h.svc->poll(h.n->now);
  }
  h.n->run_for(Duration::millis(10));
  EXPECT_TRUE(trickler->closed);
  EXPECT_EQ(trickler->reason, tcp::CloseReason::kReset);
  EXPECT_TRUE(idle->closed);
  EXPECT_FALSE(busy->closed);
  EXPECT_EQ(h.svc->open_connections(), 1u);
  EXPECT_FALSE(h.svc->poll(h.n->now).is_never());
}

}  // namespace
}  // namespace ws
