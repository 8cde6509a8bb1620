// The pipeline as a TCP sender would use it (the integration plan in docs/pipeline.md):
// two TcpStacks back to back in the deterministic simulator (tests/sim/sim.hpp), a producer
// that pushes messages of 8 B to 1 MiB with backpressure, the TX step draining into
// Connection::send at the pipeline's deadlines and on on_writable, in flight reported from
// the send buffer, and a receiver that reassembles every message with FrameDecoder and
// checks every byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "stack/codec/framing.hpp"
#include "stack/pipeline/tx_pipeline.hpp"
#include "tests/sim/sim.hpp"

namespace ws::pipeline {
namespace {

struct Sent {
  uint64_t seq;
  size_t len;
  Priority prio;
};

struct Receiver {
  FrameDecoder dec{{.framing = Framing::kLength32, .max_message_bytes = 2 << 20, .collect = true}};
  const std::map<uint64_t, Sent>* by_key = nullptr;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t bad = 0;
  int64_t last_seq[kPriorityCount] = {-1, -1};

  size_t on_data(std::span<const uint8_t> d) {
    return dec.feed(d, [&](const FrameEvent& ev) {
      if (ev.kind != FrameEventKind::kMessageComplete || ev.data.size() < 8) {
        ++bad;
        return;
      }
      uint64_t key = 0;
      for (int i = 7; i >= 0; --i) key = key << 8 | ev.data[i];
      const auto it = by_key->find(key);
      if (it == by_key->end() || it->second.len != ev.data.size() ||
          check_pattern(it->second.seq, 0, ev.data) != ev.data.size()) {
        ++bad;
        return;
      }
      const size_t p = static_cast<size_t>(it->second.prio);
      if (static_cast<int64_t>(it->second.seq) <= last_seq[p]) ++bad;  // order per priority
      last_seq[p] = static_cast<int64_t>(it->second.seq);
      ++messages;
      bytes += ev.data.size();
    });
  }
};

struct Result {
  uint64_t pushed = 0;
  Receiver rx;
  PipelineCounters counters;
  uint32_t mss = 0;
  uint32_t limit = 0;
  bool done = false;
  uint64_t iterations = 0;
  double seconds = 0;
};

void run(const sim::LinkParams& link, uint64_t seed, bool batching, uint32_t mtu, Result& r) {
  // A fixed send buffer: with autotuning, Connection::send reallocates (and zero-fills)
  // the whole send ring at every small step of the autotuned limit, about a thousand
  // times up to 6 MiB here, which makes this test take 20 s instead of 0.3 s.
  tcp::TcpConfig ca = sim::default_config(1);
  ca.send_buffer = 4 << 20;
  sim::Net n(link, link, seed, ca);
  n.out_a.mtu = n.out_b.mtu = mtu;
  std::map<uint64_t, Sent> by_key;
  r.rx.by_key = &by_key;

  tcp::ListenCallbacks lcb;
  lcb.on_accept = [&](tcp::Connection& c) {
    tcp::ConnCallbacks cb;
    cb.on_data = [&](tcp::Connection&, std::span<const uint8_t> d) { return r.rx.on_data(d); };
    cb.on_peer_closed = [](tcp::Connection& c2) { c2.close(); };
    c.set_callbacks(std::move(cb));
    return true;
  };
  ASSERT_TRUE(n.b.listen(5000, std::move(lcb)));

  PipelineParams prm;
  prm.batching = batching;
  prm.max_batches = 64;
  TxPipeline pipe(prm);
  tcp::Connection* conn = nullptr;
  bool connected = false;
  bool closed = false;
  auto tx_step = [&](Instant now) {
    if (!conn) return;
    pipe.set_in_flight(conn->info().snd_buf - conn->send_space());
    if (pipe.poll(now) <= now) {
      pipe.drain(now, [&](std::span<const uint8_t> s) { return conn->send(s); });
    }
  };
  tcp::ConnCallbacks cb;
  cb.on_connected = [&](tcp::Connection& c) {
    connected = true;
    pipe.set_mss(c.info().send_mss);
  };
  cb.on_writable = [&](tcp::Connection&) { tx_step(n.now); };
  cb.on_data = [](tcp::Connection&, std::span<const uint8_t> d) { return d.size(); };
  cb.on_closed = [&](tcp::Connection&, tcp::CloseReason) {
    closed = true;
    conn = nullptr;
  };
  conn = n.a.connect({sim::kAddrB, 5000}, std::move(cb), 0, n.now);
  ASSERT_NE(conn, nullptr);

  // Sizes cycle through the benchmark's message sizes; every 7th message is control, every
  // 11th express.
  const size_t sizes[] = {8, 64, 1024, 8192, 65536, 1 << 20, 8, 8, 64, 300};
  constexpr uint64_t kMessages = 400;
  std::vector<uint8_t> m;
  uint64_t seq = 0;
  uint64_t filled = UINT64_MAX;
  bool shut = false;
  const Instant end = n.now + Duration::seconds(120);
  uint64_t iterations = 0;
  while (n.now < end && !closed && r.rx.messages + r.rx.bad < kMessages) {
    ++iterations;
    const Instant now = n.now;
    if (connected && conn) {
      // The producer: push until refused (backpressure), a few per step.
      for (int k = 0; k < 8 && seq < kMessages; ++k) {
        const size_t len = sizes[seq % std::size(sizes)];
        const Priority prio = seq % 7 == 3 ? Priority::kControl : Priority::kData;
        if (filled != seq) {  // a refused message is retried as is, not refilled
          m.resize(len);
          fill_pattern(seq, 0, m);
          filled = seq;
        }
        if (pipe.push(m, prio, now, seq % 11 == 5).status != PushStatus::kOk) break;
        by_key[pattern_key(seq)] = {seq, len, prio};
        ++seq;
      }
      tx_step(now);
      if (seq == kMessages && pipe.queued_bytes() == 0 && !shut) {
        conn->shutdown_write();
        shut = true;
      }
    }
    Instant next = pipe.poll(now);
    // Due but not drained: TCP is full, and on_writable (inside the next network event)
    // resumes the TX step.
    if (next <= now) next = end;
    n.step(earliest(next, end));
  }
  r.pushed = seq;
  r.counters = pipe.counters();
  r.mss = pipe.mss();
  r.limit = pipe.batch_limit();
  r.done = r.rx.messages + r.rx.bad == kMessages;
  r.iterations = iterations;
  r.seconds = (n.now - Instant::from_ns(1'000'000'000)).secs();
}

TEST(PipelineOverTcp, EveryMessageOnACleanLink) {
  sim::LinkParams link;
  link.delay = Duration::micros(200);
  Result r;
  run(link, 1, true, 1500, r);
  std::printf("clean: %.3f s virtual, %llu steps, %llu batching entries, %llu refused\n", r.seconds,
              static_cast<unsigned long long>(r.iterations),
              static_cast<unsigned long long>(r.counters.batching_entries),
              static_cast<unsigned long long>(r.counters.refused));
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.pushed, 400u);
  EXPECT_EQ(r.rx.messages, 400u);
  EXPECT_EQ(r.rx.bad, 0u);
  EXPECT_FALSE(r.rx.dec.in_message());
  EXPECT_EQ(r.mss, 1448u);  // timestamps on: 1460 - 12
  EXPECT_EQ(r.limit, 65160u);
  EXPECT_GT(r.counters.batching_entries, 0u);  // 1 MiB messages outrun the link
  EXPECT_GT(r.counters.refused, 0u);           // and meet backpressure
  EXPECT_LE(r.counters.batches_peak, 64u);
}

TEST(PipelineOverTcp, EveryMessageWithLossJumboAndBatchingOff) {
  sim::LinkParams link;
  link.loss = 0.01;
  link.reorder = 0.05;
  link.delay = Duration::millis(1);
  for (const bool batching : {true, false}) {
    for (const uint32_t mtu : {1500u, 9000u}) {
      SCOPED_TRACE(std::string("batching ") + (batching ? "on" : "off") + " mtu " +
                   std::to_string(mtu));
      Result r;
      run(link, 7, batching, mtu, r);
      EXPECT_TRUE(r.done);
      EXPECT_EQ(r.rx.messages, 400u);
      EXPECT_EQ(r.rx.bad, 0u);
      if (mtu == 9000) {
        EXPECT_EQ(r.mss, 8948u);
        EXPECT_EQ(r.limit, 62636u);
      }
      if (!batching) {
        EXPECT_EQ(r.counters.batching_entries, 0u);
      }
    }
  }
}

}  // namespace
}  // namespace ws::pipeline
