// Instructions per 64-byte TCP round trip (ping -> echo, kept-alive connections), both
// sides, deterministic under callgrind: the real `ping` client (TcpPingService, length32
// framing, 64-byte messages) on one whole Stack (Ethernet, IPv4, ARP, TCP) and the real
// `echo` (TcpEchoService) on another, back to back in memory (tests/support/stack_wire.hpp),
// with CONNECTIONS connections (64 as the benchmark: tests/bench/bench_pipeline_ab.py
// --ping --size 64 --connections 64). Each side runs the data plane's loop
// (dataplane/pipeline.cpp, Pipeline::run): one receive burst of up to 32 frames
// (Stack::begin_rx_burst, each frame, end_rx_burst), then the timers (Stack::poll and the
// service's poll) when something arrived or a deadline passed, then the transmit step
// (TcpStack::serve_tx_waiters, Stack::flush). The server's steps are server_burst and
// server_timers, the client's client_burst and client_timers:
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*server_*'
//            build/tests/bench/echo_cost ROUND_TRIPS [CONNECTIONS [RECONNECT]]
//
// (one command line). RECONNECT 1 gives the ping `reconnect: true` and both hosts the
// TIME_WAIT settings of bench_pipeline_ab.py --reconnect (time_wait 1 s, taken over after
// 5 ms): each round trip is then a connection of its own (connect, 64-byte round trip,
// close, the client's TIME_WAIT), so the counts are per connection, as in the benchmark's
// connection rate, and each side's cost shows apart.
//
// (--toggle-collect='*client_*' for the client; both options for both). Run it at two
// round-trip counts and divide the difference of the totals by the difference of the counts
// (start-up and the handshakes cancel out). The virtual clock advances 2 us per side's loop
// iteration. The program exits 1 unless every round trip completed with its echo verified.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>

#include "stack/apps/tcp_clients.hpp"
#include "stack/apps/tcp_services.hpp"
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

constexpr uint32_t kMessage = 64;
constexpr uint16_t kPort = 7;

}  // namespace

int main(int argc, char** argv) {
  const uint64_t round_trips = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20000;
  const uint32_t conns = argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 64;
  const bool reconnect = argc > 3 && std::strtoul(argv[3], nullptr, 10) != 0;
  if (round_trips == 0 || conns == 0 || conns > 4096) {
    std::fprintf(stderr, "usage: echo_cost ROUND_TRIPS [CONNECTIONS (1..4096) [RECONNECT]]\n");
    return 2;
  }
  tcp::TcpConfig tcp_cfg;
  if (reconnect) {
    tcp_cfg.time_wait = Duration::seconds(1);
    tcp_cfg.time_wait_reuse = Duration::millis(5);
  }
  ws::test::HostPair hosts(tcp_cfg);
  auto& [a_to_b, b_to_a, a, b] = hosts;
  const Ipv4Addr ip_b = ws::test::HostPair::kIpB;
  TcpEchoService echo("echo", kPort, b.tcp);
  ClientParams p;
  p.target = {ip_b, kPort};
  p.message_size = kMessage;
  p.connections = conns;
  p.duration = Duration::zero();
  p.count = 0;  // the loop below stops at round_trips
  p.reconnect = reconnect;
  TcpPingService ping("ping", p, a.tcp);

  Instant now = Instant::from_ns(1'000'000'000);
  if (!echo.start(b.stack, now) || !ping.start(a.stack, now)) return 1;
  LoopSide server{b, echo, a_to_b, &a.io};
  LoopSide client{a, ping, b_to_a, &b.io};
  const uint64_t limit = 100 * round_trips + 1'000'000;
  for (uint64_t iter = 0; ping.counters().rx_messages < round_trips && iter < limit; ++iter) {
    const size_t s = server_burst(server, now);
    server_timers(server, s != 0, now);
    now += Duration::micros(2);
    const size_t c = client_burst(client, now);
    client_timers(client, c != 0, now);
    now += Duration::micros(2);
  }
  ClientReport r;
  const bool reported = ping.report(now + Duration::seconds(2), r);
  const uint64_t done = ping.counters().rx_messages;
  const auto& st = b.tcp.counters();
  std::printf(
      "%llu round trips on %u connections, %llu done, %llu errors; server segments in %llu, "
      "out %llu; frames per burst: server %.2f, client %.2f\n",
      static_cast<unsigned long long>(round_trips), conns, static_cast<unsigned long long>(done),
      static_cast<unsigned long long>(r.errors), static_cast<unsigned long long>(st.segments_in),
      static_cast<unsigned long long>(st.segments_out),
      server.bursts ? static_cast<double>(server.frames) / static_cast<double>(server.bursts) : 0.0,
      client.bursts ? static_cast<double>(client.frames) / static_cast<double>(client.bursts)
                    : 0.0);
  return reported && done >= round_trips && r.errors == 0 ? 0 : 1;
}
