// Connection churn (the connection rate must not degrade over time): many
// short connections through two TcpStacks back to back must leave the stack's tables,
// timer queue and Tcb storage where they were. Sizes are asserted, never timings.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "stack/apps/tcp_clients.hpp"
#include "stack/apps/tcp_services.hpp"
#include "stack/iface/stack.hpp"
#include "tests/support/tcp_pair.hpp"

namespace ws::test {
namespace {

constexpr uint16_t kPort = 7;
constexpr std::array<uint8_t, 64> kMessage{};

// As the stability benchmark configures both ends: TIME_WAIT 1 s, taken over after 5 ms.
tcp::TcpConfig churn_config(uint8_t key) {
  tcp::TcpConfig c = bench_config(key);
  c.time_wait = Duration::millis(1000);
  c.time_wait_reuse = Duration::millis(5);
  // The overload test measures a SYN queue that overflows: no cookies to absorb it.
  c.syncookies = tcp::SynCookieMode::kNever;
  return c;
}

void echo_server(tcp::TcpStack& s) {
  tcp::ListenCallbacks l;
  l.on_accept = [](tcp::Connection& c) {
    tcp::ConnCallbacks cb;
    cb.on_data = [](tcp::Connection& c, std::span<const uint8_t> d) { return c.send(d); };
    cb.on_peer_closed = [](tcp::Connection& c) { c.close(); };
    c.set_callbacks(std::move(cb));
    return true;
  };
  ASSERT_TRUE(s.listen(kPort, std::move(l)));
}

// `in_flight` clients, each doing connect, 64-byte echo, close, then again.
struct Churn {
  explicit Churn(uint32_t in_flight) : busy(in_flight, false) {}
  void open(Pair& p, size_t i) {
    tcp::ConnCallbacks cb;
    cb.on_connected = [](tcp::Connection& c) { c.send(kMessage); };
    cb.on_data = [this](tcp::Connection& c, std::span<const uint8_t> d) {
      c.close();
      ++echoed;
      return d.size();
    };
    cb.on_closed = [this, i](tcp::Connection&, tcp::CloseReason r) {
      busy[i] = false;
      if (r != tcp::CloseReason::kNormal) ++failed;
    };
    if (p.a.connect({kAddrB, kPort}, std::move(cb), 0, p.now) == nullptr) {
      ++failed;
      return;
    }
    busy[i] = true;
  }
  // One round: reopen every idle client, deliver everything, run timers; the clock moves
  // 4 us per completed connection (250 k/s, as in the stability benchmark).
  void round(Pair& p) {
    uint64_t before = echoed;
    for (size_t i = 0; i < busy.size(); ++i)
      if (!busy[i]) open(p, i);
    p.settle();
    p.tick(Duration::nanos(std::max<int64_t>(1000, static_cast<int64_t>(echoed - before) * 4000)));
  }
  std::vector<bool> busy;
  uint64_t echoed = 0;
  uint64_t failed = 0;
};

// Timer entries of connections that are gone are removed once they outnumber the live
// ones: the queue is bounded by the connection table, not by the rate times the longest
// timer (an initial RTO of 1 s left ~300 k stale entries per side at 250 k/s).
TEST(TcpChurn, TimerQueueAndStorageStayBounded) {
  Pair p(churn_config(1), churn_config(2));
  echo_server(p.b);
  Churn c(64);
  size_t max_timers_a = 0, max_timers_b = 0, slots_at_half = 0;
  const uint64_t kTotal = 100'000;
  for (uint64_t r = 0; c.echoed < kTotal && r < 10 * kTotal; ++r) {
    c.round(p);
    tcp::TcpTableSizes a = p.a.table_sizes(), b = p.b.table_sizes();
    // Slots are the high-water mark of the table. A connection holds at most two live
    // entries here (in TIME_WAIT: its SYN's RTO and its TIME_WAIT deadline), and the queue
    // is compacted when it doubles: at most 4 per slot, plus the 1024 of slack.
    ASSERT_LE(a.timer_entries, 4 * a.slots + 1025) << "after " << c.echoed;
    ASSERT_LE(b.timer_entries, 4 * b.slots + 1025) << "after " << c.echoed;
    max_timers_a = std::max(max_timers_a, a.timer_entries);
    max_timers_b = std::max(max_timers_b, b.timer_entries);
    // Storage is reused: one slot per connection in the table, no more.
    ASSERT_EQ(a.slots, a.connections + a.free_slots);
    ASSERT_EQ(b.slots, b.connections + b.free_slots);
    if (slots_at_half == 0 && c.echoed >= kTotal / 2) slots_at_half = a.slots + b.slots;
  }
  ASSERT_GE(c.echoed, kTotal);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(p.a.counters().connect_failed, 0u);
  // The second half of the run needed no new slots, and either side holds slots for about
  // the 64 in flight: the client's TIME_WAIT population (bounded by ports and the 5 ms
  // takeover) is kept as records, each Tcb freed once its last ACK was out.
  tcp::TcpTableSizes a = p.a.table_sizes(), b = p.b.table_sizes();
  EXPECT_EQ(a.slots + b.slots, slots_at_half);
  EXPECT_LE(a.slots, 2u * 64);
  EXPECT_LE(b.slots, 2u * 64);
  // Every ephemeral port was used, each holding one connection (a TIME_WAIT record, or in
  // use): the port cursor cycles the whole range (it once re-seeded on wrapping to 0 and
  // skipped the ports below its seed).
  const tcp::TcpConfig cfg = churn_config(1);
  EXPECT_EQ(a.connections + a.time_wait, size_t{cfg.ephemeral_high} - cfg.ephemeral_low + 1);
  EXPECT_GT(max_timers_a, 0u);
  EXPECT_GT(max_timers_b, 0u);

  // Quiet: after TIME_WAIT every connection is gone and all storage is free again.
  for (int i = 0; i < 30; ++i) p.tick(Duration::millis(100));
  a = p.a.table_sizes();
  b = p.b.table_sizes();
  EXPECT_EQ(a.connections, 0u);
  EXPECT_EQ(b.connections, 0u);
  EXPECT_EQ(a.time_wait, 0u);
  EXPECT_EQ(a.free_slots, a.slots);
  EXPECT_EQ(b.free_slots, b.slots);
  EXPECT_LE(a.timer_entries, 1024u);
  EXPECT_LE(b.timer_entries, 1024u);
  EXPECT_EQ(p.a.counters().state[static_cast<size_t>(tcp::TcpState::kTimeWait)], 0u);
}

// Runs `c` until `n` connections were echoed and the server holds none.
void churn_to(Pair& p, Churn& c, uint64_t n) {
  for (uint64_t r = 0; c.echoed < n && r < 100 * n; ++r) c.round(p);
  ASSERT_GE(c.echoed, n);
  ASSERT_EQ(p.b.connection_count(), 0u);
}

// The one segment on its way to the server (a new connection's SYN), delivered.
void deliver_syn(Pair& p) {
  ASSERT_EQ(p.to_b.size(), 1u);
  WireSegment* syn = p.to_b.front();
  p.to_b.pop_front();
  p.b.input(syn->src, syn->dst, syn->bytes, true, p.now);
  p.wa.recycle(syn);
}

// A connection in a slot that thousands of connections went through before (their timer
// entries still queued, stale) has its own timer fire on time: the server's SYN,ACK is
// lost, and it is resent by the server's RTO, 1 s later (the client's SYN would be resent
// only after 3 s).
TEST(TcpChurn, ReusedSlotTimerFiresOnTime) {
  tcp::TcpConfig ca = churn_config(7);
  ca.rto_initial = Duration::seconds(3);
  Pair p(ca, churn_config(8));
  echo_server(p.b);
  Churn c(4);
  ASSERT_NO_FATAL_FAILURE(churn_to(p, c, 4000));
  const uint64_t resent_before = p.b.counters().retransmits;
  bool connected = false;
  tcp::ConnCallbacks cb;
  cb.on_connected = [&connected](tcp::Connection&) { connected = true; };
  ASSERT_NE(p.a.connect({kAddrB, kPort}, std::move(cb), 0, p.now), nullptr);
  // The SYN reaches the server; its SYN,ACK is lost.
  ASSERT_NO_FATAL_FAILURE(deliver_syn(p));
  ASSERT_EQ(p.to_a.size(), 1u);
  p.wb.recycle(p.to_a.front());
  p.to_a.pop_front();
  const Instant sent = p.now;
  while (!connected && p.now - sent < Duration::seconds(2)) p.tick(Duration::millis(5));
  EXPECT_TRUE(connected);
  EXPECT_GE(p.now - sent, Duration::seconds(1));
  EXPECT_LE(p.now - sent, Duration::millis(1005));
  EXPECT_EQ(p.b.counters().retransmits - resent_before, 1u);
}

// Timer entries belong to the slot: a connection in a slot whose entry is queued no later
// than its own deadline queues none. The server's slot is reused by each connection in
// turn; the new one's SYN,ACK timeout (1 s) comes after the entry its predecessors left.
TEST(TcpChurn, ReusedSlotQueuesNoLaterEntry) {
  Pair p(churn_config(9), churn_config(10));
  echo_server(p.b);
  Churn c(1);
  ASSERT_NO_FATAL_FAILURE(churn_to(p, c, 100));
  const size_t queued = p.b.table_sizes().timer_entries;
  ASSERT_GT(queued, 0u);
  ASSERT_NE(p.a.connect({kAddrB, kPort}, {}, 0, p.now), nullptr);
  ASSERT_NO_FATAL_FAILURE(deliver_syn(p));
  ASSERT_EQ(p.b.connection_count(), 1u);  // in SYN_RECEIVED, its SYN,ACK sent
  ASSERT_EQ(p.to_a.size(), 1u);
  EXPECT_EQ(p.b.table_sizes().timer_entries, queued);
}

// Receive and send rings come back to the stack when a connection ends (or enters
// TIME_WAIT) and go to the next one: the memory the stack holds does not grow with the
// number of connections it has served.
TEST(TcpChurn, MemoryReturnsToTheSameLevel) {
  Pair p(churn_config(3), churn_config(4));
  echo_server(p.b);
  Churn c(16);
  auto quiesce_memory = [&](uint64_t until) {
    while (c.echoed < until) c.round(p);
    for (int i = 0; i < 30; ++i) p.tick(Duration::millis(100));
    return p.a.counters().memory_bytes + p.b.counters().memory_bytes;
  };
  uint64_t first = quiesce_memory(50'000);
  EXPECT_GT(first, 0u);
  uint64_t second = quiesce_memory(150'000);
  EXPECT_EQ(second, first);
  EXPECT_LE(p.a.table_sizes().spare_rings + p.b.table_sizes().spare_rings, 4u * 256);
  EXPECT_EQ(p.a.counters().connect_failed, 0u);
  EXPECT_EQ(c.failed, 0u);
}

// What the server holds, for the overload test: everything that an overload could leave
// grown (an overload recovers by itself when the load drops).
struct ServerState {
  size_t table_capacity = 0;
  size_t slots = 0;
  size_t spare_rings = 0;
  size_t timer_capacity = 0;
  size_t echo_states = 0;
  uint64_t memory = 0;
  void at_least(const ServerState& o) {
    table_capacity = std::max(table_capacity, o.table_capacity);
    slots = std::max(slots, o.slots);
    spare_rings = std::max(spare_rings, o.spare_rings);
    timer_capacity = std::max(timer_capacity, o.timer_capacity);
    echo_states = std::max(echo_states, o.echo_states);
    memory = std::max(memory, o.memory);
  }
};

// The real services, as the stability benchmark runs them: `ping` (reconnect, 64 in flight)
// against the length32 `echo`, then a flood of 4096 more connections that the server's SYN
// queue (256) cannot take at once, then the 64 alone again. Once the load has dropped,
// everything the server holds must come back to what it held before the overload: table
// capacity, Tcb slots, spare rings, timer queue capacity, the echo's per-connection
// states, TCP memory. (Before the fix, the connection table kept the buckets of the burst
// and the slots, rings and echo states of 1024/256/4096 connections stayed allocated.)
TEST(TcpChurn, OverloadReturnsToBaseline) {
  Pair p(churn_config(5), churn_config(6));
  Stack dummy;
  TcpEchoService echo("echo", kPort, p.b);
  ClientParams cp;
  cp.target = {kAddrB, kPort};
  cp.message_size = 64;
  cp.connections = 64;
  cp.duration = Duration::zero();
  cp.reconnect = true;
  TcpPingService ping("cr", cp, p.a);
  ASSERT_TRUE(echo.start(dummy, p.now));
  ASSERT_TRUE(ping.start(dummy, p.now));
  std::unique_ptr<TcpPingService> flood;
  auto completed = [&] {
    return ping.counters().rx_messages + (flood ? flood->counters().rx_messages : 0);
  };
  auto state = [&] {
    ServerState s;
    tcp::TcpTableSizes z = p.b.table_sizes();
    s.table_capacity = z.table_buckets;
    s.slots = z.slots;
    s.spare_rings = z.spare_rings;
    s.timer_capacity = z.timer_capacity;
    s.echo_states = echo.conn_states();
    s.memory = p.b.counters().memory_bytes;
    return s;
  };
  // Runs until `n` more connections completed (bounded in rounds); the clock moves 4 us
  // per completed connection. Returns the largest state seen over the second half.
  auto run = [&](uint64_t n, bool with_flood) {
    ServerState high;
    const uint64_t from = completed();
    for (uint64_t r = 0; completed() - from < n && r < 100 * n; ++r) {
      const uint64_t before = completed();
      ping.poll(p.now);
      if (with_flood) flood->poll(p.now);
      echo.poll(p.now);
      p.settle();
      p.a.poll(p.now);
      p.b.poll(p.now);
      p.settle();
      p.now += Duration::nanos(
          std::max<int64_t>(1000, static_cast<int64_t>(completed() - before) * 4000));
      if (completed() - from >= n / 2) high.at_least(state());
    }
    EXPECT_GE(completed() - from, n);
    return high;
  };
  const ServerState baseline = run(100'000, false);
  ASSERT_GT(baseline.slots, 0u);

  ClientParams fp = cp;
  fp.connections = 4096;
  fp.max_connecting = 4096;  // all at once: an overload of the server's SYN queue
  flood = std::make_unique<TcpPingService>("flood", fp, p.a);
  ASSERT_TRUE(flood->start(dummy, p.now));
  const uint64_t refused_before = p.db.get(DropReason::kTcpSynQueueFull);
  const ServerState loaded = run(150'000, true);
  // It was an overload: SYNs turned away, and more of everything held than before.
  EXPECT_GT(p.db.get(DropReason::kTcpSynQueueFull), refused_before);
  EXPECT_GT(loaded.slots, 2 * baseline.slots);
  EXPECT_GT(loaded.echo_states, 2 * baseline.echo_states);
  flood->stop(p.now);  // aborts its connections, as a client process that exits
  p.settle();

  run(30'000, false);  // the aborts, the last retransmitted SYNs, trimming
  const ServerState after = run(100'000, false);
  // Equal up to the turnover of a connection or two (1/8 of slack: before the fix the
  // overload left 4x the slots and rings, and every echo state of the burst).
  auto near = [](uint64_t base) { return base + base / 8; };
  // The table's array: the trim keeps up to 8 entries per connection of the recent peak
  // (ConnTable::shrink_for), which the 64 connections' baseline never grew into.
  EXPECT_LE(after.table_capacity, std::max<size_t>(baseline.table_capacity, 8 * 64));
  EXPECT_LE(after.slots, near(baseline.slots));
  EXPECT_LE(after.spare_rings, near(baseline.spare_rings));
  // The queue's array: back to the baseline's, or to what compaction sizes it for (the
  // next 1024 pushes and more, 2 x 1025 entries at most) when the baseline's queue never
  // grew that far (its connections' entries mostly queued by their slots' predecessors).
  EXPECT_LE(after.timer_capacity, std::max<size_t>(baseline.timer_capacity, 2 * 1025));
  EXPECT_LE(after.echo_states, near(baseline.echo_states));
  EXPECT_LE(after.memory, near(baseline.memory));
  EXPECT_EQ(p.a.counters().connect_failed, 0u);
  ping.stop(p.now);
  echo.stop(p.now);
  p.settle();
}

}  // namespace
}  // namespace ws::test

namespace ws::test {
namespace {

// Receive bursts full for 8 ms over 9 bursts of a 64-frame ring: the core is behind.
void behind(Pair& p) {
  for (uint32_t i = 0; i < 9; ++i) p.b.rx_burst(32, 32, 64, p.now + Duration::millis(i));
}

// A server that admits 8 SYNs per burst once behind, more while fewer than `half_open` of
// its connections are half-open.
tcp::TcpConfig shedding_server(uint32_t half_open) {
  tcp::TcpConfig c = bench_config(2);
  c.syn_burst_budget = 8;
  c.syn_shed_half_open = half_open;
  return c;
}

// Every segment on its way to the server, within the last (full) burst.
void deliver_syns(Pair& p) {
  while (!p.to_b.empty()) {
    WireSegment* s = p.to_b.front();
    p.to_b.pop_front();
    p.b.input(s->src, s->dst, s->bytes, true, p.now);
    p.wa.recycle(s);
  }
}

// Overload shedding at the SYN: once receive bursts keep coming back full, only
// syn_burst_budget new SYNs are admitted, the rest dropped as tcp_syn_shed before any state
// is kept; segments of open connections are not budgeted; the shed peers get in on their
// SYN retransmission once bursts are no longer full.
TEST(SynShedding, FullBurstAdmitsTheBudget) {
  Pair p(bench_config(1), shedding_server(0));  // the budget alone
  echo_server(p.b);
  Churn c(20);
  for (size_t i = 0; i < 20; ++i) c.open(p, i);
  ASSERT_EQ(p.to_b.size(), 20u);  // 20 SYNs on the wire
  // Full bursts for a moment are a pause, not overload: nothing is budgeted yet.
  constexpr uint32_t kBurst = 32, kRing = 64;
  p.b.rx_burst(kBurst, kBurst, kRing, p.now);
  p.b.rx_burst(kBurst, kBurst, kRing, p.now + Duration::millis(1));
  p.b.rx_burst(kBurst - 1, kBurst, kRing, p.now + Duration::millis(1));
  for (uint32_t i = 0; i < 8; ++i) p.b.rx_burst(kBurst, kBurst, kRing, p.now + Duration::millis(2));
  p.b.rx_burst(kBurst, kBurst, kRing, p.now + Duration::millis(4) - Duration::nanos(1));
  // Full for OverloadGate::kMinTime and over kRings rings of frames: budgeted.
  p.b.rx_burst(kBurst, kBurst, kRing, p.now + Duration::millis(4));
  deliver_syns(p);
  EXPECT_EQ(p.db.get(DropReason::kTcpSynShed), 12u);
  EXPECT_EQ(p.to_a.size(), 8u);  // a SYN,ACK for each admitted SYN, nothing for the shed
  // Still a full burst: the admitted handshakes, their data and FINs are not budgeted.
  p.settle();
  EXPECT_EQ(c.echoed, 8u);
  EXPECT_EQ(p.db.get(DropReason::kTcpSynShed), 12u);
  // Bursts no longer full: the retransmitted SYNs (after rto_initial) are all admitted.
  p.b.rx_burst(0, kBurst, kRing, p.now);
  for (int i = 0; i < 30 && c.echoed < 20; ++i) p.tick(Duration::millis(100));
  EXPECT_EQ(c.echoed, 20u);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(p.db.get(DropReason::kTcpSynShed), 12u);
}

// The gate itself: time alone (a descheduled thread comes back to a full ring and sees
// milliseconds gone) or frames alone (a fast drain of a deep ring) is not overload.
TEST(SynShedding, GateWantsTimeAndRings) {
  constexpr uint32_t kBurst = 32, kRing = 1024;
  constexpr uint32_t kFull = kRing * tcp::OverloadGate::kRings / kBurst;  // full bursts needed
  const Instant t0 = Instant::from_ns(1'000'000'000);
  const Duration min = tcp::OverloadGate::kMinTime;
  tcp::OverloadGate paused;  // 2 full bursts, 50 ms apart: a pause
  paused.burst(kBurst, kBurst, kRing, t0);
  paused.burst(kBurst, kBurst, kRing, t0 + Duration::millis(50));
  EXPECT_FALSE(paused.behind(t0 + Duration::millis(50)));
  tcp::OverloadGate fast;  // every frame of kRings rings, all within kMinTime
  for (uint32_t i = 0; i < kFull; ++i) fast.burst(kBurst, kBurst, kRing, t0);
  EXPECT_FALSE(fast.behind(t0 + min - Duration::nanos(1)));
  EXPECT_TRUE(fast.behind(t0 + min));
  tcp::OverloadGate one_short;  // kMinTime passed, one burst short of kRings rings
  one_short.burst(kBurst, kBurst, kRing, t0);
  for (uint32_t i = 0; i + 2 < kFull; ++i) one_short.burst(kBurst, kBurst, kRing, t0 + min * 2);
  EXPECT_FALSE(one_short.behind(t0 + min * 2));
  one_short.burst(kBurst, kBurst, kRing, t0 + min * 2);
  EXPECT_TRUE(one_short.behind(t0 + min * 2));
  // One burst not full: the run starts again.
  one_short.burst(kBurst - 1, kBurst, kRing, t0 + min * 2);
  EXPECT_FALSE(one_short.behind(t0 + min * 2));
  one_short.burst(kBurst, kBurst, kRing, t0 + min * 3);
  EXPECT_FALSE(one_short.behind(t0 + min * 4));
}

// Behind, a SYN beyond the burst's budget is still admitted while the listener holds fewer
// than syn_shed_half_open half-open connections: handshakes complete as fast as they start.
TEST(SynShedding, FewHalfOpenAdmitsBeyondTheBudget) {
  Pair p(bench_config(1), shedding_server(10));
  echo_server(p.b);
  Churn c(40);
  for (size_t i = 0; i < 20; ++i) c.open(p, i);
  behind(p);
  deliver_syns(p);
  // 8 by the budget, 2 more while fewer than 10 are half-open, 10 shed.
  EXPECT_EQ(p.to_a.size(), 10u);
  EXPECT_EQ(p.db.get(DropReason::kTcpSynShed), 10u);
  p.settle();  // the 10 handshakes complete: nothing half-open any more
  EXPECT_EQ(c.echoed, 10u);
  for (size_t i = 20; i < 30; ++i) c.open(p, i);
  behind(p);  // 10 new SYNs: 8 by the budget, 2 by the bound, none shed
  deliver_syns(p);
  EXPECT_EQ(p.db.get(DropReason::kTcpSynShed), 10u);
  p.settle();
  EXPECT_EQ(c.echoed, 20u);
}

// The handshakes a listener completed count for the current window and the one before; after
// a window without any, nothing.
TEST(SynShedding, HandshakeRateCountsTheLastWindows) {
  const Instant t0 = Instant::from_ns(1'000'000'000);
  const Duration w = tcp::HandshakeRate::kWindow;
  tcp::HandshakeRate r;
  EXPECT_EQ(r.recent(t0), 0u);
  for (int i = 0; i < 30; ++i) r.completed(t0);
  EXPECT_EQ(r.recent(t0 + w - Duration::nanos(1)), 30u);
  EXPECT_EQ(r.recent(t0 + w), 30u);  // the window before
  for (int i = 0; i < 5; ++i) r.completed(t0 + w);
  EXPECT_EQ(r.recent(t0 + w * 2 - Duration::nanos(1)), 30u);
  EXPECT_EQ(r.recent(t0 + w * 2), 5u);  // 30 are two windows old
  EXPECT_EQ(r.recent(t0 + w * 4), 0u);  // a window without any
}

// Behind, with more half-open connections than syn_shed_half_open but fewer than the
// listener completed lately, the handshakes keep pace (HandshakeRate): none is shed. Once
// none has completed for two windows, the same pile is shed beyond the budget and the bound.
TEST(SynShedding, HandshakesKeepingPaceAreNotShed) {
  Pair p(bench_config(1), shedding_server(10));
  echo_server(p.b);
  Churn c(100);
  for (size_t i = 0; i < 40; ++i) c.open(p, i);
  p.settle();  // not behind: 40 handshakes complete
  ASSERT_EQ(c.echoed, 40u);
  for (size_t i = 40; i < 70; ++i) c.open(p, i);
  behind(p);
  deliver_syns(p);
  EXPECT_EQ(p.to_a.size(), 30u);  // a SYN,ACK each: 30 half-open, fewer than 40 completed
  EXPECT_EQ(p.db.get(DropReason::kTcpSynShed), 0u);
  p.settle();
  EXPECT_EQ(c.echoed, 70u);
  p.tick(tcp::HandshakeRate::kWindow * 2);
  for (size_t i = 70; i < 100; ++i) c.open(p, i);
  behind(p);
  deliver_syns(p);
  EXPECT_EQ(p.to_a.size(), 10u);  // 8 by the budget, 2 by the bound
  EXPECT_EQ(p.db.get(DropReason::kTcpSynShed), 20u);
}

TEST(SynShedding, ZeroBudgetNeverSheds) {
  tcp::TcpConfig server = bench_config(2);
  server.syn_burst_budget = 0;
  Pair p(bench_config(1), server);
  echo_server(p.b);
  Churn c(20);
  for (size_t i = 0; i < 20; ++i) c.open(p, i);
  for (uint32_t i = 0; i < 64; ++i) p.b.rx_burst(32, 32, 64, p.now + Duration::millis(i));
  p.settle();
  EXPECT_EQ(c.echoed, 20u);
  EXPECT_EQ(p.db.get(DropReason::kTcpSynShed), 0u);
}

}  // namespace
}  // namespace ws::test

namespace ws::test {
namespace {

// Header prediction (tcp_input.cpp): a bulk receiver with nothing to send takes its
// in-order segments on the predicted path, and every byte still arrives in order.
TEST(HeaderPrediction, BulkReceiverTakesThePredictedPath) {
  Pair p;
  uint64_t received = 0, bad = 0;
  tcp::ListenCallbacks l;
  l.on_accept = [&](tcp::Connection& c) {
    tcp::ConnCallbacks cb;
    cb.on_data = [&](tcp::Connection&, std::span<const uint8_t> d) {
      for (uint8_t b : d) bad += b != static_cast<uint8_t>(received++ % 251);
      return d.size();
    };
    c.set_callbacks(std::move(cb));
    return true;
  };
  ASSERT_TRUE(p.b.listen(kPort, std::move(l)));
  constexpr uint64_t kTotal = uint64_t{4} << 20;
  uint64_t sent = 0;
  std::vector<uint8_t> chunk(65536);
  tcp::Connection* c = nullptr;
  tcp::ConnCallbacks cb;
  auto pump = [&] {
    while (c != nullptr && sent < kTotal) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), kTotal - sent));
      for (size_t i = 0; i < n; ++i) chunk[i] = static_cast<uint8_t>((sent + i) % 251);
      const size_t k = c->send({chunk.data(), n});
      sent += k;
      if (k < n) return;
    }
  };
  cb.on_connected = [&](tcp::Connection&) { pump(); };
  cb.on_writable = [&](tcp::Connection&) { pump(); };
  c = p.a.connect({kAddrB, kPort}, std::move(cb), 0, p.now);
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 20000 && received < kTotal; ++i) {
    p.settle();
    pump();
    p.tick(Duration::micros(20));
  }
  EXPECT_EQ(received, kTotal);
  EXPECT_EQ(bad, 0u);
  // Most segments, not all: the handshake's, and those after a window change, take the
  // full path.
  EXPECT_GT(p.b.ctr().rx_predicted, p.b.counters().segments_in / 2);
}

}  // namespace
}  // namespace ws::test
