// Micro benchmarks of the TCP engine alone (no DPDK, no IP layer): two TcpStacks wired back
// to back (tests/support/tcp_pair.hpp). The figures are the CPU cost of both ends together, so
// 1 / (time per item) bounds what one core pair can do stack to stack (connections/s
// and round trips/s):
//   - BM_TcpConnectEchoClose: connect, 64-byte request, echo, close (both directions), the
//     `ping` + `reconnect: true` cycle;
//   - BM_TcpKeptAliveRoundTrip: a 64-byte round trip on one established connection.
// Run: build/tests/bench/tcp_micro_bench, or under `valgrind --tool=callgrind` for a
// repeatable instruction profile.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <span>

#include "tests/support/tcp_pair.hpp"

namespace {

using ws::Duration;
using ws::test::kAddrB;
using ws::test::Pair;

const std::array<uint8_t, 64> kMessage{};

void echo_server(ws::tcp::TcpStack& s) {
  ws::tcp::ListenCallbacks l;
  l.on_accept = [](ws::tcp::Connection& c) {
    ws::tcp::ConnCallbacks cb;
    cb.on_data = [](ws::tcp::Connection& c, std::span<const uint8_t> d) { return c.send(d); };
    cb.on_peer_closed = [](ws::tcp::Connection& c) { c.close(); };
    c.set_callbacks(std::move(cb));
    return true;
  };
  s.listen(7, std::move(l));
}

void BM_TcpConnectEchoClose(benchmark::State& state) {
  Pair p;
  echo_server(p.b);
  uint64_t done = 0, failed = 0;
  for (auto _ : state) {
    bool finished = false;
    size_t got = 0;
    ws::tcp::ConnCallbacks cb;
    cb.on_connected = [](ws::tcp::Connection& c) { c.send(kMessage); };
    cb.on_data = [&](ws::tcp::Connection& c, std::span<const uint8_t> d) {
      got += d.size();
      if (got >= kMessage.size()) c.close();
      return d.size();
    };
    cb.on_closed = [&](ws::tcp::Connection&, ws::tcp::CloseReason) { finished = true; };
    if (p.a.connect({kAddrB, 7}, std::move(cb), 0, p.now) == nullptr) {
      ++failed;
      p.tick(Duration::millis(1));
      continue;
    }
    p.settle();
    // The server's FIN may wait for its delayed ACK timer; the client then sits in
    // TIME_WAIT (1 ms here), which later polls expire.
    p.tick(Duration::micros(20));
    if (!finished) p.tick(Duration::millis(50));
    done += finished;
  }
  state.SetItemsProcessed(static_cast<int64_t>(done));
  state.counters["failed"] = static_cast<double>(failed);
  state.counters["segments"] = benchmark::Counter(
      static_cast<double>(p.a.counters().segments_out + p.b.counters().segments_out),
      benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_TcpConnectEchoClose);

void BM_TcpKeptAliveRoundTrip(benchmark::State& state) {
  Pair p;
  echo_server(p.b);
  size_t got = 0;
  ws::tcp::Connection* conn = nullptr;
  ws::tcp::ConnCallbacks cb;
  cb.on_data = [&](ws::tcp::Connection&, std::span<const uint8_t> d) {
    got += d.size();
    return d.size();
  };
  conn = p.a.connect({kAddrB, 7}, std::move(cb), 0, p.now);
  p.settle();
  uint64_t rounds = 0;
  for (auto _ : state) {
    const size_t want = got + kMessage.size();
    conn->send(kMessage);
    p.settle();
    if (got >= want) ++rounds;
    p.now += Duration::micros(10);
  }
  state.SetItemsProcessed(static_cast<int64_t>(rounds));
  state.counters["segments"] = benchmark::Counter(
      static_cast<double>(p.a.counters().segments_out + p.b.counters().segments_out),
      benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_TcpKeptAliveRoundTrip);

}  // namespace

BENCHMARK_MAIN();
