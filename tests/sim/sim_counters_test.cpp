// The TCP engine's gauges (connections by state and address family, buffer and memory
// sums) are running values kept at every change (stack/tcp/buffer_tally.hpp), so that
// TcpStack::counters() costs O(1). After every step of a random workload over a lossy,
// reordering, duplicating link (opens over IPv4 and IPv6, bulk data both ways,
// applications that stop and resume reading, data held by reference, closes, aborts,
// TIME_WAIT and its expiry) a walk over every connection must find the same figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/sim/sim.hpp"

namespace ws::sim {
namespace {

using tcp::Connection;
using tcp::TcpCounters;
using tcp::TcpState;

::testing::AssertionResult same_as_walk(const tcp::TcpStack& s) {
  const TcpCounters run = s.counters();
  const TcpCounters walk = s.counters_walked();
  std::string bad;
  auto cmp = [&bad](const std::string& what, uint64_t a, uint64_t b) {
    if (a != b) bad += " " + what + " " + std::to_string(a) + " (walk " + std::to_string(b) + ")";
  };
  for (size_t i = 0; i < tcp::kTcpStateCount; ++i) {
    const std::string st = tcp::tcp_state_name(static_cast<TcpState>(i));
    cmp(st, run.state[i], walk.state[i]);
    for (size_t f = 0; f < run.family.state[i].size(); ++f)
      cmp(st + "/family" + std::to_string(f), run.family.state[i][f], walk.family.state[i][f]);
  }
  cmp("rcv_buffer_sum", run.rcv_buffer_sum, walk.rcv_buffer_sum);
  cmp("snd_buffer_sum", run.snd_buffer_sum, walk.snd_buffer_sum);
  cmp("bytes_buffered", run.bytes_buffered, walk.bytes_buffered);
  cmp("memory_bytes", run.memory_bytes, walk.memory_bytes);
  if (bad.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad;
}

// One side's application: the connections it holds, each reading or paused
// (Connection::user non-null), consuming a random share of what it is offered.
struct App {
  std::vector<Connection*> conns;
  Rng* rng = nullptr;
  tcp::ConnCallbacks callbacks() {
    tcp::ConnCallbacks cb;
    cb.on_data = [this](Connection& c, std::span<const uint8_t> d) -> size_t {
      if (c.user != nullptr) return 0;
      return rng->chance(0.7) ? d.size() : rng->next() % (d.size() + 1);
    };
    cb.on_closed = [this](Connection& c, tcp::CloseReason) { std::erase(conns, &c); };
    return cb;
  }
  Connection* pick() { return conns.empty() ? nullptr : conns[rng->next() % conns.size()]; }
};

struct Seen {
  bool time_wait = false, v6 = false, buffered = false, held = false, grown = false;
};

void note(const tcp::TcpStack& s, Seen& seen) {
  const TcpCounters c = s.counters();
  seen.time_wait |= c.state[static_cast<size_t>(TcpState::kTimeWait)] > 0;
  seen.v6 |= c.family.state[static_cast<size_t>(TcpState::kEstablished)][1] > 0;
  seen.buffered |= c.bytes_buffered > 0;
  seen.held |= c.rx_bytes_held > 0;
  seen.grown |= c.rcv_buffer_sum > 64 * 1024 * s.connection_count();
}

TEST(CountersAgainstWalk, RandomOpensDataReorderCloseAbortTimeWait) {
  LinkParams lp;
  lp.loss = 0.02;
  lp.dup = 0.01;
  lp.reorder = 0.15;
  lp.rate_bytes_per_sec = 50e6;
  auto cfg = [](uint8_t key) {
    tcp::TcpConfig c = default_config(key);
    c.time_wait = Duration::millis(300);
    c.buffer_max = 1 << 20;
    return c;
  };
  Net n(lp, lp, 16, cfg(1), cfg(2));
  n.hold = 0.3;      // some data kept by reference (rx_held.hpp)
  n.chain = 0.2;     // some frames in several pieces
  n.squeeze = 0.05;  // ... and given back now and then
  Rng rng(1616);
  App client, server;
  client.rng = server.rng = &rng;
  n.b.listen(80, {[&server](Connection& c) {
               c.set_callbacks(server.callbacks());
               server.conns.push_back(&c);
               return true;
             }});
  const IpAddr v6_b(*Ipv6Addr::parse("2001:db8::2"));
  std::vector<uint8_t> data(256 * 1024);
  for (size_t i = 0; i < data.size(); ++i) data[i] = payload_byte(16, i);
  Seen seen;
  for (int step = 0; step < 1500; ++step) {
    App& app = rng.chance(0.5) ? client : server;
    Connection* c = app.pick();
    switch (rng.next() % 12) {
      case 0:
      case 1:
        if (client.conns.size() < 40) {
          const IpAddr dst = rng.chance(0.4) ? v6_b : IpAddr(kAddrB);
          if (Connection* k = n.a.connect({dst, 80}, client.callbacks(), 0, n.now))
            client.conns.push_back(k);
        }
        break;
      case 2:
      case 3:
      case 4:
        if (c) c->send(std::span(data).first(1 + rng.next() % data.size()));
        break;
      case 5:
        if (c) {
          c->user = c->user ? nullptr : c;  // pause or resume reading
          if (!c->user) c->resume_read();
        }
        break;
      case 6:
        if (c) c->close();
        break;
      case 7:
        if (c) c->shutdown_write();
        break;
      case 8:
        if (c && rng.chance(0.5)) c->abort();
        break;
      case 9:
        n.run_for(Duration::millis(400));  // TIME_WAIT expires, timers fire
        break;
      default:
        break;
    }
    n.run_for(Duration::millis(rng.next() % 30));
    // A connection the application aborted or closed outside a stack call is freed at the
    // end of the next one (its buffers count until then); the walk sees only the table.
    n.a.poll(n.now);
    n.b.poll(n.now);
    ASSERT_TRUE(same_as_walk(n.a)) << "client, step " << step;
    ASSERT_TRUE(same_as_walk(n.b)) << "server, step " << step;
    note(n.a, seen);
    note(n.b, seen);
  }
  // Everything closed and gone: the running values are back to the empty table's.
  for (App* app : {&client, &server}) {
    while (!app->conns.empty()) app->conns.back()->abort();
  }
  n.run_for(Duration::seconds(2));
  for (const tcp::TcpStack* s : {&n.a, &n.b}) {
    ASSERT_TRUE(same_as_walk(*s));
    const TcpCounters c = s->counters();
    EXPECT_EQ(s->connection_count(), 0u);
    for (size_t i = 0; i < tcp::kTcpStateCount; ++i) EXPECT_EQ(c.state[i], 0u) << i;
    EXPECT_EQ(c.bytes_buffered, 0u);
    EXPECT_EQ(c.rcv_buffer_sum + c.snd_buffer_sum, 0u);
  }
  // The workload reached what it is meant to cover.
  EXPECT_TRUE(seen.time_wait);
  EXPECT_TRUE(seen.v6);
  EXPECT_TRUE(seen.buffered);
  EXPECT_TRUE(seen.held);
  EXPECT_TRUE(seen.grown);
}

}  // namespace
}  // namespace ws::sim
