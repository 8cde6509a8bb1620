// Memory per idle established connection in the TCP engine: two TcpStacks back to back
// (tests/support/tcp_pair.hpp), N connections opened from one to the other and left
// idle, the process's RSS read before and after. Each connection costs a TCB on both
// stacks, so the figure per connection and side is the RSS delta / (2 N). No DPDK: this
// is the stack's own state (TCB, table slots, buffers as allocated for an idle
// connection), not the data plane's mbufs.
//
//   idle_conns_bench [N]          (default 100000; prints a JSON line)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/support/tcp_pair.hpp"

namespace {

long rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ws;
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  // One remote port per 60,000 connections: the 4-tuples stay distinct past 64 K.
  constexpr uint64_t kPerPort = 60000;
  auto cfg = [n](uint8_t key) {
    tcp::TcpConfig c = test::bench_config(key);
    c.max_connections = static_cast<uint32_t>(n + 16);
    c.syn_backlog = 65536;
    return c;
  };
  test::Pair p(cfg(1), cfg(2));
  uint64_t accepted = 0;
  const uint16_t ports = static_cast<uint16_t>((n + kPerPort - 1) / kPerPort);
  for (uint16_t i = 0; i < ports; ++i) {
    p.b.listen(static_cast<uint16_t>(10000 + i), {[&accepted](tcp::Connection&) {
                 ++accepted;
                 return true;
               }});
  }
  p.tick(Duration::millis(1));
  const long before = rss_kb();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t opened = 0;
  for (uint64_t i = 0; i < n; ++i) {
    auto port = static_cast<uint16_t>(10000 + i / kPerPort);
    auto local = static_cast<uint16_t>(1024 + i % kPerPort);
    if (p.a.connect(Endpoint{test::kAddrB, port}, {}, local, p.now) != nullptr) ++opened;
    if (i % 1024 == 1023) p.settle();
  }
  p.tick(Duration::millis(1));
  p.tick(Duration::millis(100));  // delayed ACKs out: idle
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long after = rss_kb();
  const size_t est = p.a.counters().state[static_cast<size_t>(tcp::TcpState::kEstablished)];
  // What one stats publication costs the data plane here: TcpStack::counters() on a
  // stack holding all N connections (the best of a few calls, in microseconds).
  double counters_us = 1e18;
  uint64_t sink = 0;
  for (int k = 0; k < 5; ++k) {
    const auto c0 = std::chrono::steady_clock::now();
    sink += p.b.counters().memory_bytes;
    const auto c1 = std::chrono::steady_clock::now();
    counters_us = std::min(counters_us, std::chrono::duration<double, std::micro>(c1 - c0).count());
  }
  const double per = static_cast<double>(after - before) * 1024.0 / (2.0 * static_cast<double>(n));
  std::printf(
      "{\"connections\": %llu, \"opened\": %llu, \"accepted\": %llu, \"established\": %zu, "
      "\"rss_before_kb\": %ld, \"rss_after_kb\": %ld, \"bytes_per_connection_side\": %.0f, "
      "\"seconds\": %.1f, \"counters_us\": %.2f, \"tcp_memory_bytes\": %llu}\n",
      static_cast<unsigned long long>(n), static_cast<unsigned long long>(opened),
      static_cast<unsigned long long>(accepted), est, before, after, per, secs, counters_us,
      static_cast<unsigned long long>(sink / 5));
  return opened == n && accepted == n && est == n ? 0 : 1;
}
