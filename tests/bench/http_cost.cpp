// Instructions per HTTP request/response at the server, deterministic under callgrind:
// the real `http` service (HttpService) on a whole Stack (Ethernet, IPv4, ARP, TCP),
// answering one keep-alive client connection on a second Stack back to back in memory
// (tests/support/stack_wire.hpp), as wrk with one connection does over af_packet. Only the
// server's side is counted: server_receive (Stack::receive of each frame, the service's
// on_data and the response it queues) and server_timers (what the data plane's loop does
// after a burst: Stack::poll, the service's poll, Stack::flush).
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*server_*'
//            build/tests/bench/http_cost REQUESTS   (one command line)
//
// Run it at two request counts and divide the difference of the totals by the difference
// of the counts (start-up and the handshake cancel out). The response is the benchmark's
// (tests/bench/bench_services.py): 438 generated body bytes on "/". The program exits 1
// unless every response arrived whole with status 200.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stack/apps/http_service.hpp"
#include "stack/iface/stack.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "tests/support/stack_wire.hpp"

namespace {

using namespace ws;
using ws::test::Frame;
using ws::test::Host;

constexpr uint64_t kBody = 438;
constexpr std::string_view kRequest =
    "GET / HTTP/1.1\r\nHost: 10.0.0.2\r\nUser-Agent: http_cost\r\nAccept: */*\r\n\r\n";

// One keep-alive client: a request, then the next once the whole response is in.
struct Client {
  std::string head;        // the response's header block so far
  uint64_t body_left = 0;  // body bytes still to come once the head is complete
  bool in_head = true;
  uint64_t done = 0;
  uint64_t bad = 0;

  // Consumes a response piece; true when a response completed.
  bool feed(std::span<const uint8_t> d, size_t& used) {
    used = 0;
    while (used < d.size()) {
      if (in_head) {
        head.push_back(static_cast<char>(d[used++]));
        if (head.size() >= 4 && head.compare(head.size() - 4, 4, "\r\n\r\n") == 0) {
          in_head = false;
          const size_t at = head.find("Content-Length: ");
          body_left =
              at == std::string::npos ? 0 : std::strtoull(head.c_str() + at + 16, nullptr, 10);
          if (head.compare(0, 12, "HTTP/1.1 200") != 0 || body_left != kBody) ++bad;
        }
        continue;
      }
      const uint64_t n = std::min<uint64_t>(body_left, d.size() - used);
      used += n;
      body_left -= n;
      if (body_left == 0) break;
    }
    if (in_head || body_left != 0) return false;
    head.clear();
    in_head = true;
    ++done;
    return true;
  }
};

__attribute__((noinline)) void server_receive(Stack& s, const Frame& f, Instant now) {
  s.receive(std::span<const uint8_t>(f.bytes.data(), f.len), RxMeta{}, now);
}

__attribute__((noinline)) void server_timers(Stack& s, HttpService& svc, Instant now) {
  s.poll(now);
  svc.poll(now);
  s.flush(now);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t requests = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000;
  ws::test::HostPair hosts;
  auto& [a_to_b, b_to_a, a, b] = hosts;
  const Ipv4Addr ip_b = ws::test::HostPair::kIpB;
  HttpRoute route;
  route.path = "/";
  route.body_bytes = kBody;
  HttpService svc("web", 80, b.tcp, {route});

  Instant now = Instant::from_ns(1'000'000'000);
  if (!svc.start(b.stack, now)) return 1;
  Client client;
  uint64_t sent = 0;
  auto ask = [&](tcp::Connection& c) {
    if (sent >= requests) return;
    const auto* p = reinterpret_cast<const uint8_t*>(kRequest.data());
    if (c.send(std::span<const uint8_t>(p, kRequest.size())) == kRequest.size()) ++sent;
  };
  tcp::ConnCallbacks cb;
  cb.on_connected = ask;
  cb.on_data = [&](tcp::Connection& c, std::span<const uint8_t> d) {
    size_t used = 0, total = 0;
    while (total < d.size()) {
      const bool complete = client.feed(d.subspan(total), used);
      total += used;
      if (complete) ask(c);
    }
    return d.size();
  };
  a.stack.poll(now);
  b.stack.poll(now);
  if (a.tcp.connect({ip_b, 80}, std::move(cb), 0, now) == nullptr) return 1;
  // About 25 us per loop on the virtual clock (a round trip of wrk over a veth).
  for (uint64_t iter = 0; client.done < requests && iter < 100'000'000; ++iter) {
    bool got = false;
    while (!a_to_b.empty()) {
      Frame* f = a_to_b.front();
      a_to_b.pop_front();
      server_receive(b.stack, *f, now);
      a.io.recycle(f);
      got = true;
    }
    if (got) server_timers(b.stack, svc, now);
    while (!b_to_a.empty()) {
      Frame* f = b_to_a.front();
      b_to_a.pop_front();
      a.stack.receive(std::span<const uint8_t>(f->bytes.data(), f->len), RxMeta{}, now);
      b.io.recycle(f);
    }
    a.stack.poll(now);
    a.stack.flush(now);
    now += Duration::micros(25);
  }
  std::printf("%llu requests, %llu answered, %llu bad; server segments in %llu, out %llu\n",
              static_cast<unsigned long long>(requests),
              static_cast<unsigned long long>(client.done),
              static_cast<unsigned long long>(client.bad),
              static_cast<unsigned long long>(b.tcp.counters().segments_in),
              static_cast<unsigned long long>(b.tcp.counters().segments_out));
  return client.done == requests && client.bad == 0 ? 0 : 1;
}
