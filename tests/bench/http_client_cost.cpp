// Instructions per HTTP keep-alive request/response, both sides, deterministic under
// callgrind: the real HTTP client (`kind: http` with a target, HttpClientService) on one
// whole Stack (Ethernet, IPv4, ARP, TCP) driving the real `http` service (HttpService) on
// another, back to back in memory (tests/support/stack_wire.hpp), with CONNECTIONS
// keep-alive connections (64 as the benchmark: tests/bench/bench_http_client.py) and its
// response (438 generated body bytes on "/", Content-Length and body checked). Each side
// runs the data plane's loop as tests/bench/echo_cost.cpp does (a receive burst of up to
// 32 frames, the timers, the transmit step); the server's steps are server_burst and
// server_timers, the client's client_burst and client_timers:
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*client_*'
//            build/tests/bench/http_client_cost REQUESTS [CONNECTIONS [PER_CONNECTION]]
//
// (one command line). PER_CONNECTION is the client's requests_per_connection (0, the
// default: keep-alive; 1: one request per connection, so the counts are per connection:
// handshake, request, response and close on both sides, TIME_WAIT included).
// (--toggle-collect='*server_*' for the server). Run it at two request counts and divide
// the difference of the totals by the difference of the counts (start-up and the
// handshakes cancel out). The virtual clock advances 2 us per side's loop iteration. The
// program exits 1 unless every request was answered and checked without an error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>

#include "stack/apps/http_client.hpp"
#include "stack/apps/http_service.hpp"
#include "stack/iface/stack.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "tests/support/stack_wire.hpp"

namespace {

using namespace ws;
using ws::test::client_burst;
using ws::test::client_timers;
using ws::test::Frame;
using ws::test::Host;
using ws::test::LoopSide;
using ws::test::server_burst;
using ws::test::server_timers;

constexpr uint64_t kBody = 438;
constexpr uint16_t kPort = 80;

}  // namespace

int main(int argc, char** argv) {
  const uint64_t requests = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20000;
  const uint32_t conns = argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 64;
  const uint32_t per_conn =
      argc > 3 ? static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)) : 0;
  if (requests == 0 || conns == 0 || conns > 4096) {
    std::fprintf(stderr,
                 "usage: http_client_cost REQUESTS [CONNECTIONS (1..4096) [PER_CONNECTION]]\n");
    return 2;
  }
  ws::test::HostPair hosts;
  auto& [a_to_b, b_to_a, a, b] = hosts;
  const Ipv4Addr ip_b = ws::test::HostPair::kIpB;
  HttpRoute route;
  route.path = "/";
  route.body_bytes = kBody;
  HttpService web("web", kPort, b.tcp, {route});
  ClientParams p;
  p.target = {ip_b, kPort};
  p.connections = conns;
  p.duration = Duration::zero();
  p.count = requests;  // exactly: no request beyond it is sent
  HttpClientParams h;
  h.expect_body_bytes = kBody;
  h.check_body = true;
  h.requests_per_connection = per_conn;
  HttpClientService client("http", p, h, a.tcp);

  Instant now = Instant::from_ns(1'000'000'000);
  if (!web.start(b.stack, now) || !client.start(a.stack, now)) return 1;
  LoopSide server{b, web, a_to_b, &a.io};
  LoopSide cside{a, client, b_to_a, &b.io};
  const uint64_t limit = 100 * requests + 1'000'000;
  for (uint64_t iter = 0; client.counters().rx_messages < requests && iter < limit; ++iter) {
    const size_t s = server_burst(server, now);
    server_timers(server, s != 0, now);
    now += Duration::micros(2);
    const size_t c = client_burst(cside, now);
    client_timers(cside, c != 0, now);
    now += Duration::micros(2);
  }
  ClientReport r;
  const bool reported = client.report(now + Duration::seconds(2), r);
  const uint64_t done = client.counters().rx_messages;
  const auto& st = b.tcp.counters();
  std::printf(
      "%llu requests on %u connections, %llu answered, %llu errors; server segments in %llu, "
      "out %llu\n",
      static_cast<unsigned long long>(requests), conns, static_cast<unsigned long long>(done),
      static_cast<unsigned long long>(r.errors), static_cast<unsigned long long>(st.segments_in),
      static_cast<unsigned long long>(st.segments_out));
  return reported && done >= requests && r.errors == 0 ? 0 : 1;
}
