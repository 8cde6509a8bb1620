// The TCP services on the TX batch pipeline (docs/pipeline.md), over two TcpStacks in the
// deterministic simulator: ping -> echo and source -> a verifying receiver, every payload
// byte checked against the pattern, counts checked against the services' reports and the
// pipelines' counters; the echo's byte mode, its backpressure and its memory bound.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stack/apps/tcp_clients.hpp"
#include "stack/apps/tcp_services.hpp"
#include "stack/codec/framing.hpp"
#include "stack/iface/stack.hpp"
#include "tests/sim/apps.hpp"

namespace ws {
namespace {

constexpr uint16_t kEchoPort = 7;
constexpr uint16_t kSinkPort = 9;

// Two stacks, the services' poll() merged into the simulator's deadlines as the data plane's
// loop merges them.
struct Rig {
  // send_buffer: 0 autotunes the sender's (stack A's) send buffer, as the data plane does.
  explicit Rig(uint64_t seed = 5, double loss = 0, uint32_t send_buffer = 0) {
    sim::LinkParams link;
    link.delay = Duration::micros(50);
    link.rate_bytes_per_sec = 1.25e9;  // 10 Gbit/s
    link.loss = loss;
    tcp::TcpConfig ca = sim::default_config(1);
    ca.send_buffer = send_buffer;
    n = std::make_unique<sim::Net>(link, link, seed, ca);
  }
  ~Rig() {
    // As the data plane does: connections end while the services still exist.
    n->a.shutdown_all(n->now);
    n->b.shutdown_all(n->now);
  }
  bool run(const std::function<bool()>& done, Duration max) {
    const Instant end = n->now + max;
    while (!done()) {
      if (n->now >= end) return false;
      Instant next = end;
      for (Service* s : services) next = earliest(next, s->poll(n->now));
      n->step(next);
    }
    return true;
  }
  std::unique_ptr<sim::Net> n;
  Stack dummy;  // the TCP services do not use the IP stack
  std::vector<Service*> services;
};

ClientParams client_params(uint32_t size, uint64_t count, uint16_t port) {
  ClientParams p;
  p.target = {sim::kAddrB, port};
  p.message_size = size;
  p.count = count;
  p.duration = Duration::zero();
  return p;
}

// Final report of a client, driving the rig until it comes.
ClientReport finish(Rig& r, Service& client, Duration max) {
  ClientReport rep;
  bool done = false;
  r.run(
      [&] {
        ClientReport x;
        if (client.report(r.n->now, x) && x.final) {
          rep = x;
          done = true;
        }
        return done;
      },
      max);
  EXPECT_TRUE(done) << "no final report";
  return rep;
}

class PingEcho : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PingEcho, EveryEchoVerified) {
  const uint32_t size = GetParam();
  const uint64_t count = size >= (1u << 20) ? 6 : 40;
  Rig r;
  TcpEchoService echo("echo", kEchoPort, r.n->b);
  ASSERT_TRUE(echo.start(r.dummy, r.n->now));
  TcpPingService ping("ping", client_params(size, count, kEchoPort), r.n->a);
  r.services = {&echo, &ping};
  ASSERT_TRUE(ping.start(r.dummy, r.n->now));
  const ClientReport rep = finish(r, ping, Duration::seconds(30));
  // The ping checks each echo's length and every payload byte against the pattern.
  EXPECT_EQ(rep.messages, count);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.bytes, count * size);
  EXPECT_EQ(echo.counters().rx_messages, count);
  EXPECT_EQ(echo.counters().tx_messages, count);
  EXPECT_EQ(echo.counters().rx_bytes, count * (size + kFrameHeaderBytes));
  EXPECT_EQ(echo.counters().tx_bytes, count * (size + kFrameHeaderBytes));
  EXPECT_EQ(ping.counters().tx_bytes, count * (size + kFrameHeaderBytes));
  // Both directions went through a pipeline, one message per round trip.
  pipeline::PipelineCounters pe, pp;
  echo.add_pipeline_counters(pe);
  ping.add_pipeline_counters(pp);
  EXPECT_EQ(pe.messages, count);
  EXPECT_EQ(pp.messages, count);
  EXPECT_EQ(pp.pulled_bytes, count * (size + kFrameHeaderBytes));
  EXPECT_EQ(pe.refused + pp.refused, 0u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, PingEcho, ::testing::Values(1u, 64u, 1024u, 65536u, 1u << 20));

// A server that echoes each whole frame with a fault: every third one with a payload byte
// flipped, every fifth one a byte shorter (its header says so). The ping takes each echo in
// place (one frame per segment here) and must count every fault: no wrong echo passes.
TEST(PingEcho, EveryWrongEchoIsCounted) {
  constexpr uint64_t kCount = 30;
  constexpr uint32_t kSize = 64;
  Rig r;
  uint64_t frames = 0;
  std::vector<uint8_t> held;
  tcp::ListenCallbacks l;
  l.on_accept = [&](tcp::Connection& c) {
    tcp::ConnCallbacks cb;
    cb.on_data = [&](tcp::Connection& conn, std::span<const uint8_t> d) -> size_t {
      held.insert(held.end(), d.begin(), d.end());
      while (held.size() >= kFrameHeaderBytes + kSize) {
        std::vector<uint8_t> f(held.begin(), held.begin() + kFrameHeaderBytes + kSize);
        held.erase(held.begin(), held.begin() + kFrameHeaderBytes + kSize);
        ++frames;
        if (frames % 3 == 0) f[kFrameHeaderBytes + frames % kSize] ^= 0x40;
        if (frames % 5 == 0) {
          f.pop_back();
          write_frame_header(f, kSize - 1);
        }
        EXPECT_EQ(conn.send(f), f.size());
      }
      return d.size();
    };
    c.set_callbacks(std::move(cb));
    return true;
  };
  ASSERT_TRUE(r.n->b.listen(kEchoPort, std::move(l)));
  TcpPingService ping("ping", client_params(kSize, kCount, kEchoPort), r.n->a);
  r.services = {&ping};
  ASSERT_TRUE(ping.start(r.dummy, r.n->now));
  const ClientReport rep = finish(r, ping, Duration::seconds(30));
  EXPECT_EQ(rep.messages, kCount);
  // 10 flipped, 6 short; the two that are both (15 and 30) count twice.
  EXPECT_EQ(rep.errors, 10u + 6u);
  // This server never closes its side: the connections end here, while the ping and the
  // server's state still exist (the Rig's own shutdown runs after both are gone).
  r.n->a.shutdown_all(r.n->now);
  r.n->b.shutdown_all(r.n->now);
}

// The same through a link that loses 2 % of the segments each way: TCP retransmits under
// both pipelines, and every echo still comes back whole and verified.
TEST(PingEchoLossy, EveryEchoVerifiedUnderLoss) {
  for (const uint32_t size : {100u, 70000u}) {
    const uint64_t count = 60;
    Rig r(17, 0.02);
    TcpEchoService echo("echo", kEchoPort, r.n->b);
    ASSERT_TRUE(echo.start(r.dummy, r.n->now));
    TcpPingService ping("ping", client_params(size, count, kEchoPort), r.n->a);
    r.services = {&echo, &ping};
    ASSERT_TRUE(ping.start(r.dummy, r.n->now));
    const ClientReport rep = finish(r, ping, Duration::seconds(120));
    EXPECT_EQ(rep.messages, count) << size;
    EXPECT_EQ(rep.errors, 0u) << size;
    EXPECT_EQ(echo.counters().tx_messages, count) << size;
    // The link did lose segments that TCP had to send again.
    EXPECT_GT(r.n->a.counters().retransmits + r.n->b.counters().retransmits, 0u) << size;
  }
}

// Receives a length32 stream and checks every byte of message k against pattern(k).
struct Verifier : sim::FrameReceiver {
  Verifier(tcp::TcpStack& tcp, uint32_t size) : sim::FrameReceiver(tcp, kSinkPort, size) {
    EXPECT_TRUE(listening);
  }
};

struct SourceCase {
  uint32_t size;
  uint64_t count;
  bool batching;
  bool mss_multiple;
  double loss;
};

class SourceSink : public ::testing::TestWithParam<SourceCase> {};

TEST_P(SourceSink, EveryMessageWholeAndVerified) {
  const SourceCase c = GetParam();
  Rig r(11, c.loss);
  Verifier v(r.n->b, c.size);
  ClientParams p = client_params(c.size, c.count, kSinkPort);
  p.pipeline.batching = c.batching;
  p.pipeline.mss_multiple = c.mss_multiple;
  if (!c.mss_multiple) p.pipeline.max_batch_bytes = 64512;
  TcpSourceService src("load", p, r.n->a);
  r.services = {&src};
  ASSERT_TRUE(src.start(r.dummy, r.n->now));
  const ClientReport rep = finish(r, src, Duration::seconds(60));
  EXPECT_TRUE(v.fin);
  EXPECT_EQ(rep.messages, c.count);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(v.messages, c.count);
  EXPECT_EQ(v.bad, 0u);
  EXPECT_FALSE(v.dec.in_message());
  pipeline::PipelineCounters pc;
  src.add_pipeline_counters(pc);
  EXPECT_EQ(pc.messages, c.count);
  EXPECT_EQ(pc.pulled_bytes, c.count * (c.size + kFrameHeaderBytes));
  EXPECT_EQ(src.counters().tx_bytes, pc.pulled_bytes);
  if (!c.batching) {
    EXPECT_EQ(pc.batching_entries, 0u);
  }
  // Small messages through a fast link that TCP cannot drain at once: batching mode.
  if (c.batching && c.size <= 64) {
    EXPECT_GT(pc.batching_entries, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SourceSink,
                         ::testing::Values(SourceCase{8, 200000, true, true, 0},
                                           SourceCase{64, 50000, false, true, 0},
                                           SourceCase{1000, 5000, true, false, 0},
                                           SourceCase{1000, 3000, true, true, 0.01},
                                           SourceCase{1u << 20, 8, true, true, 0}));

// Messages larger than TCP's free room are cut where the room ends and their rest written
// in place as the ring frees (docs/pipeline.md, "Writing into the send ring"): with a send
// buffer that frees a batch or more at each on_writable, no batch is ever filled, and every
// message still arrives whole and verified.
TEST(SourceSink, LargeMessagesAreWrittenInPlace) {
  for (const uint32_t size : {65536u, 1u << 20}) {
    Rig r(11, 0, 4u << 20);
    Verifier v(r.n->b, size);
    const uint64_t count = (uint64_t{32} << 20) / size;
    TcpSourceService src("load", client_params(size, count, kSinkPort), r.n->a);
    r.services = {&src};
    ASSERT_TRUE(src.start(r.dummy, r.n->now));
    const ClientReport rep = finish(r, src, Duration::seconds(60));
    EXPECT_EQ(rep.messages, count) << size;
    EXPECT_EQ(v.messages, count) << size;
    EXPECT_EQ(v.bad, 0u) << size;
    EXPECT_TRUE(v.fin) << size;
    pipeline::PipelineCounters pc;
    src.add_pipeline_counters(pc);
    EXPECT_EQ(pc.pulled_bytes, count * (size + kFrameHeaderBytes)) << size;
    EXPECT_EQ(pc.batches_allocated, 0u) << size;
  }
}

// Batching mode must not cost a bulk source throughput (docs/benchmarks.md finding 13: with
// the data plane's 100 us backoff, `batching: false` was 2.4x faster at 8 B). The same
// 8-byte source, batching on and off, over the 10 Gbit/s link: the virtual time to deliver
// every message, on at most 5 % above off. The send buffer is a fixed 128 KiB, so that
// on_writable (at a quarter free) finds about 77 us of data left in TCP, less than the
// backoff: before the fix the TX step left each full batch to the deadline after
// on_writable, and the link ran dry in between.
TEST(SourceSink, BatchingIsNoSlowerThanBatchingOffForABulkSource) {
  Duration took[2];
  pipeline::PipelineCounters pcs[2];
  for (const bool batching : {false, true}) {
    Rig r(11, 0, 128 * 1024);
    Verifier v(r.n->b, 8);
    ClientParams p = client_params(8, 1500000, kSinkPort);
    p.pipeline.batching = batching;
    p.pipeline.backoff = Duration::micros(100);  // longer than the ~77 us left at on_writable
    TcpSourceService src("load", p, r.n->a);
    r.services = {&src};
    const Instant t0 = r.n->now;
    ASSERT_TRUE(src.start(r.dummy, r.n->now));
    ASSERT_TRUE(r.run([&] { return v.messages == p.count; }, Duration::seconds(10)));
    took[batching] = r.n->now - t0;
    EXPECT_EQ(v.bad, 0u);
    src.add_pipeline_counters(pcs[batching]);
    finish(r, src, Duration::seconds(10));
  }
  EXPECT_GT(pcs[true].batching_entries, 0u);
  EXPECT_EQ(pcs[false].batching_entries, 0u);
  EXPECT_LE(took[true].ns(), took[false].ns() * 105 / 100)
      << "batching on " << took[true].ns() << " ns, off " << took[false].ns() << " ns";
}

// A raw client on stack A for the echo: sends bytes, keeps what comes back.
struct RawClient {
  RawClient(tcp::TcpStack& tcp, Instant now, bool read = true) : read_(read) {
    tcp::ConnCallbacks cb;
    cb.on_connected = [this](tcp::Connection&) { connected = true; };
    cb.on_data = [this](tcp::Connection&, std::span<const uint8_t> d) -> size_t {
      if (!read_) return 0;
      rx.insert(rx.end(), d.begin(), d.end());
      return d.size();
    };
    cb.on_peer_closed = [this](tcp::Connection&) { peer_closed = true; };
    cb.on_closed = [this](tcp::Connection&, tcp::CloseReason) { c = nullptr; };
    c = tcp.connect({sim::kAddrB, kEchoPort}, std::move(cb), 0, now);
  }
  tcp::Connection* c = nullptr;
  bool read_;
  bool connected = false, peer_closed = false;
  std::vector<uint8_t> rx;
};

std::vector<uint8_t> frames(const std::vector<uint32_t>& sizes) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t at = out.size();
    out.resize(at + kFrameHeaderBytes + sizes[i]);
    write_frame_header({out.data() + at, kFrameHeaderBytes}, sizes[i]);
    fill_pattern(i, 0, {out.data() + at + kFrameHeaderBytes, sizes[i]});
  }
  return out;
}

// Frames sent in awkward pieces (headers split, many frames per segment, frames spanning
// segments) come back byte for byte, each as one whole message, then the FIN.
TEST(TcpEcho, FramesInPiecesComeBackWhole) {
  Rig r;
  TcpEchoService echo("echo", kEchoPort, r.n->b);
  ASSERT_TRUE(echo.start(r.dummy, r.n->now));
  r.services = {&echo};
  RawClient cl(r.n->a, r.n->now);
  ASSERT_TRUE(r.run([&] { return cl.connected; }, Duration::seconds(2)));
  std::vector<uint32_t> sizes;
  for (uint32_t i = 0; i < 300; ++i) sizes.push_back((i * 7919u) % 5000u);
  sizes.push_back(0);
  sizes.push_back(200000);
  const std::vector<uint8_t> stream = frames(sizes);
  size_t off = 0;
  size_t piece = 1;
  while (off < stream.size()) {
    const size_t n = std::min(piece, stream.size() - off);
    off += cl.c->send({stream.data() + off, n});
    piece = piece * 3 % 9973 + 1;
    r.run([] { return false; }, Duration::micros(200));
  }
  cl.c->shutdown_write();
  ASSERT_TRUE(r.run([&] { return cl.peer_closed; }, Duration::seconds(10)));
  EXPECT_EQ(cl.rx, stream);
  EXPECT_EQ(echo.counters().rx_messages, sizes.size());
  EXPECT_EQ(echo.counters().tx_messages, sizes.size());
  pipeline::PipelineCounters pc;
  echo.add_pipeline_counters(pc);
  EXPECT_EQ(pc.messages, sizes.size());
}

// framing none: a byte echo, as before the pipeline.
TEST(TcpEcho, FramingNoneIsAByteEcho) {
  Rig r;
  TcpEchoService echo("echo", kEchoPort, r.n->b, Framing::kNone);
  ASSERT_TRUE(echo.start(r.dummy, r.n->now));
  r.services = {&echo};
  RawClient cl(r.n->a, r.n->now);
  ASSERT_TRUE(r.run([&] { return cl.connected; }, Duration::seconds(2)));
  const std::string text = "not framed at all";
  cl.c->send({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  ASSERT_TRUE(r.run([&] { return cl.rx.size() == text.size(); }, Duration::seconds(2)));
  EXPECT_EQ(std::string(cl.rx.begin(), cl.rx.end()), text);
  pipeline::PipelineCounters pc;
  echo.add_pipeline_counters(pc);
  EXPECT_EQ(pc.messages, 0u);
}

// A client that sends and never reads: the echo's pipeline stays within a few batches (it
// stops reading; TCP's windows close) instead of growing.
TEST(TcpEcho, PeerThatDoesNotReadBoundsMemory) {
  Rig r;
  TcpEchoService echo("echo", kEchoPort, r.n->b);
  ASSERT_TRUE(echo.start(r.dummy, r.n->now));
  r.services = {&echo};
  RawClient cl(r.n->a, r.n->now, /*read=*/false);
  ASSERT_TRUE(r.run([&] { return cl.connected; }, Duration::seconds(2)));
  const std::vector<uint8_t> chunk = frames(std::vector<uint32_t>(64, 1000));
  uint64_t sent = 0;
  uint64_t sent_half = 0;
  for (int i = 0; i < 2000 && cl.c; ++i) {
    sent += cl.c->send(chunk);
    r.run([] { return false; }, Duration::micros(500));
    if (i == 999) sent_half = sent;
  }
  pipeline::PipelineCounters pc;
  echo.add_pipeline_counters(pc);
  // The buffers on the way filled (the client's window into the echo, the echo's
  // pipeline and send buffer, the client's receive window), then next to nothing moved:
  // only what the retransmission timer's window probes found room for.
  EXPECT_GT(sent, uint64_t{1} << 20);
  EXPECT_LT(sent - sent_half, 4096u);
  EXPECT_LE(pc.batches_peak, 8u);
  EXPECT_LE(pc.batches_live, 8u);
  EXPECT_EQ(pc.refused, 0u);
}

// An echo on stack B and a ping in reconnect mode on stack A (one connection, `count` round
// trips of `size` bytes, each on a connection of its own), both the rig's services; start()
// starts them.
struct ReconnectingPing {
  ReconnectingPing(Rig& r, uint32_t size, uint64_t count)
      : echo("echo", kEchoPort, r.n->b), ping("ping", params(size, count), r.n->a) {
    r.services = {&echo, &ping};
  }
  static ClientParams params(uint32_t size, uint64_t count) {
    ClientParams p = client_params(size, count, kEchoPort);
    p.reconnect = true;
    return p;
  }
  bool start(Rig& r) { return echo.start(r.dummy, r.n->now) && ping.start(r.dummy, r.n->now); }
  TcpEchoService echo;
  TcpPingService ping;
};

// Counters of closed connections stay in the totals (ping in reconnect mode: a new
// connection, and a new pipeline, per round trip).
TEST(TcpPing, ReconnectKeepsPipelineTotals) {
  Rig r;
  ReconnectingPing rp(r, 100, 20);
  TcpEchoService& echo = rp.echo;
  TcpPingService& ping = rp.ping;
  ASSERT_TRUE(rp.start(r));
  uint64_t last = 0;
  bool monotonic = true;
  ClientReport rep;
  r.run(
      [&] {
        pipeline::PipelineCounters pc;
        echo.add_pipeline_counters(pc);
        ping.add_pipeline_counters(pc);
        monotonic = monotonic && pc.messages >= last;
        last = pc.messages;
        ClientReport x;
        if (ping.report(r.n->now, x) && x.final) {
          rep = x;
          return true;
        }
        return false;
      },
      Duration::seconds(30));
  EXPECT_TRUE(monotonic);
  EXPECT_EQ(rep.messages, 20u);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(last, 40u);  // 20 pings + 20 echoes
  pipeline::PipelineCounters pe, pp;
  echo.add_pipeline_counters(pe);
  ping.add_pipeline_counters(pp);
  EXPECT_EQ(pe.messages, 20u);
  EXPECT_EQ(pp.messages, 20u);
  EXPECT_EQ(echo.counters().rx_messages, 20u);
}

// Reconnect mode opens a closed slot again at the next poll, not at the next walk over
// every connection (once a millisecond): one connection of 20 round trips, each about three
// 100 us round trips of the link, takes a few milliseconds, where waiting for the walk
// would take at least 20.
TEST(TcpPing, ReconnectOpensAgainAtTheNextPoll) {
  Rig r;
  ReconnectingPing rp(r, 64, 20);
  const Instant start = r.n->now;
  ASSERT_TRUE(rp.start(r));
  const ClientReport rep = finish(r, rp.ping, Duration::seconds(5));
  EXPECT_EQ(rep.messages, 20u);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.connect_failures, 0u);
  EXPECT_LT(r.n->now - start, Duration::millis(12)) << (r.n->now - start).ns() << " ns";
}

// max_connecting: a client with many connections keeps at most that many of the core's
// connections in SYN-SENT and opens the rest as handshakes complete, until all are open.
// Ping and source both (each against an echo; the source's bytes come back unread).
TEST(TcpClients, OpensArePacedByMaxConnecting) {
  for (const bool source : {false, true}) {
    Rig r;
    TcpEchoService echo("echo", kEchoPort, r.n->b);
    ASSERT_TRUE(echo.start(r.dummy, r.n->now));
    ClientParams p = client_params(1, 0, kEchoPort);
    p.framing = Framing::kNone;
    p.duration = Duration::seconds(20);
    p.rate = 1;
    p.connections = 300;
    p.max_connecting = 16;
    std::unique_ptr<Service> client;
    if (source)
      client = std::make_unique<TcpSourceService>("source", p, r.n->a);
    else
      client = std::make_unique<TcpPingService>("ping", p, r.n->a);
    ASSERT_TRUE(client->start(r.dummy, r.n->now));
    const auto est = [&r] { return r.n->a.count_in(tcp::TcpState::kEstablished); };
    uint64_t most = r.n->a.count_in(tcp::TcpState::kSynSent);
    const Instant t0 = r.n->now;
    const Instant end = t0 + Duration::seconds(5);
    while (est() < p.connections && r.n->now < end) {
      const Instant next = earliest(echo.poll(r.n->now), client->poll(r.n->now));
      // SYNs leave only from poll(): the count is at its highest right after it.
      most = std::max(most, r.n->a.count_in(tcp::TcpState::kSynSent));
      r.n->step(earliest(next, end));
    }
    EXPECT_EQ(est(), p.connections) << source;
    EXPECT_EQ(most, p.max_connecting) << source;
    // No SYN was lost and retried: pacing, not the SYN timeout, spread the opens.
    EXPECT_EQ(r.n->a.counters().retransmits, 0u) << source;
    EXPECT_LT(r.n->now - t0, Duration::millis(100)) << source;
    // The connections end while the services still exist.
    client->stop(r.n->now);
    r.n->b.shutdown_all(r.n->now);
  }
}

}  // namespace
}  // namespace ws
