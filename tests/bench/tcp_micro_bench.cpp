// Micro benchmarks of the TCP engine alone (no DPDK, no IP layer): two TcpStacks wired back
// to back through an output that checksums every segment as the IP layer would and hands it
// straight to the other stack. The figures are the CPU cost of both ends together, so
// 1 / (time per item) bounds what one core pair can do stack to stack (issue 7: connections/s
// and round trips/s):
//   - BM_TcpConnectEchoClose: connect, 64-byte request, echo, close (both directions), the
//     `ping` + `reconnect: true` cycle;
//   - BM_TcpKeptAliveRoundTrip: a 64-byte round trip on one established connection.
// Run: build/tests/bench/tcp_micro_bench, or under `valgrind --tool=callgrind` for a
// repeatable instruction profile.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/core/drops.hpp"
#include "stack/iface/l4_output.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace {

using ws::Duration;
using ws::Instant;
using ws::Ipv4Addr;

constexpr Ipv4Addr kA = Ipv4Addr::from_octets(10, 0, 0, 1);
constexpr Ipv4Addr kB = Ipv4Addr::from_octets(10, 0, 0, 2);

struct Segment {
  Ipv4Addr src, dst;
  std::vector<uint8_t> bytes;
};

// Segments in flight, recycled so that the loop does not measure the allocator.
class Wire final : public ws::L4Output {
 public:
  explicit Wire(Ipv4Addr self) : self_(self) {}
  bool begin(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, uint32_t l4_len,
             ws::L4Frame& out) override {
    Segment* s;
    if (!spare_.empty()) {
      s = spare_.back();
      spare_.pop_back();
    } else {
      pool_.push_back(std::make_unique<Segment>());
      s = pool_.back().get();
    }
    s->src = src.is_any() ? self_ : src;
    s->dst = dst;
    s->bytes.resize(l4_len);
    out.buf.handle = s;
    out.l4 = std::span<uint8_t>(s->bytes.data(), s->bytes.size());
    out.src = s->src;
    out.dst = dst;
    out.proto = proto;
    return true;
  }
  void commit(ws::L4Frame& f, Instant) override {
    auto* s = static_cast<Segment*>(f.buf.handle);
    std::span<uint8_t> l4(s->bytes);
    uint32_t sum = ws::ipv4_pseudo_sum(s->src, s->dst, 6, static_cast<uint16_t>(l4.size()));
    ws::store_be16(l4.data() + 16, ws::csum_fold(ws::csum_partial(l4, sum)));
    queue_->push_back(s);
  }
  void abort(ws::L4Frame& f) override { spare_.push_back(static_cast<Segment*>(f.buf.handle)); }
  uint32_t mtu_to(Ipv4Addr) const override { return 1500; }
  Ipv4Addr source_for(Ipv4Addr) const override { return self_; }
  uint32_t free_buffers_to(Ipv4Addr) const override { return 4096; }

  void recycle(Segment* s) { spare_.push_back(s); }
  std::deque<Segment*>* queue_ = nullptr;

 private:
  Ipv4Addr self_;
  std::vector<std::unique_ptr<Segment>> pool_;
  std::vector<Segment*> spare_;
};

ws::tcp::TcpConfig config(uint8_t key) {
  ws::tcp::TcpConfig c;
  for (size_t i = 0; i < c.isn_secret.size(); ++i) c.isn_secret[i] = static_cast<uint8_t>(i + key);
  c.time_wait = Duration::millis(1);
  c.delayed_ack = Duration::millis(40);
  return c;
}

struct Pair {
  Wire wa{kA}, wb{kB};
  ws::DropCounters da, db;
  ws::tcp::TcpStack a{wa, da, config(1)};
  ws::tcp::TcpStack b{wb, db, config(2)};
  std::deque<Segment*> to_b, to_a;
  Instant now = Instant::from_ns(1'000'000'000);

  Pair() {
    wa.queue_ = &to_b;
    wb.queue_ = &to_a;
  }
  // Delivers segments until both directions are quiet.
  void settle() {
    while (!to_a.empty() || !to_b.empty()) {
      while (!to_b.empty()) {
        Segment* s = to_b.front();
        to_b.pop_front();
        b.input(s->src, s->dst, s->bytes, true, now);
        wa.recycle(s);
      }
      while (!to_a.empty()) {
        Segment* s = to_a.front();
        to_a.pop_front();
        a.input(s->src, s->dst, s->bytes, true, now);
        wb.recycle(s);
      }
    }
  }
  void tick(Duration d) {
    now += d;
    a.poll(now);
    b.poll(now);
    settle();
  }
};

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
    if (p.a.connect({kB, 7}, std::move(cb), 0, p.now) == nullptr) {
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
  conn = p.a.connect({kB, 7}, std::move(cb), 0, p.now);
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
