// Receive-path cost of a bulk TCP transfer through the whole stack (Ethernet
// frame in, on_data out), for a repeatable instruction count under callgrind:
//
//   valgrind --tool=callgrind --toggle-collect='*receive_at_sink*'
//            build/tests/bench/rx_path_bench 9000 chained   (one command line)
//
// Two Stacks with a TcpStack each are wired back to back in memory; one sends
// `bytes` to the other's sink, which consumes everything. Frames reach the
// sink in one buffer, or ("chained") cut into 2 KiB pieces as memif and RX
// scatter deliver them. Only receive_at_sink (the sink's Stack::receive of each
// frame, and the copy the data plane made of a chain before in-place parsing)
// is counted by the command above. The sender's cost per segment sent (the ACKs it
// receives, the data segments they release, and Connection::send) is counted with
// --toggle-collect='*receive_at_source*' --toggle-collect='*Connection::send*'. A fourth
// argument "v6" carries the same transfer over IPv6 (fd00::1 to fd00::2, both hosts then
// holding both families), for the cost of IPv6 against IPv4 on the same path. Compiled against a
// stack without PacketView (stack/core/packet_view.hpp), a chain is first copied whole, as
// dataplane/rx_frame.hpp did, so the same file measures before and after.
//
// The sink takes the frames queued for it in receive bursts of up to kBurst, as the data
// plane does (Pipeline::receive_all: Stack::begin_rx_burst, each frame, end_rx_burst), and
// receive_at_sink counts the whole burst, its end included (where TCP sends the ACKs it
// held for the burst). A fifth argument sets the burst size: 1 gives each frame a burst of
// its own.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "stack/iface/stack.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "tests/support/stack_wire.hpp"

#if __has_include("stack/core/packet_view.hpp")
#include "stack/core/packet_view.hpp"
#define WS_HAVE_PACKET_VIEW 1
#endif

namespace {

using namespace ws;
using ws::test::Frame;
using ws::test::Host;

constexpr uint32_t kPiece = 2048;  // RTE_MBUF_DEFAULT_DATAROOM
constexpr size_t kBurst = 32;      // Pipeline's rx burst

std::vector<uint8_t> g_scratch(65535 + 14);

// One received frame at the sink.
void receive_frame(Stack& s, const Frame& f, bool chained, Instant now) {
  if (!chained || f.len <= kPiece) {
    s.receive(std::span<const uint8_t>(f.bytes.data(), f.len), RxMeta{}, now);
    return;
  }
#ifdef WS_HAVE_PACKET_VIEW
  std::array<PacketView::Segment, PacketView::kMaxSegments> segs;
  size_t n = 0;
  for (uint32_t off = 0; off < f.len; off += kPiece)
    segs[n++] = {f.bytes.data() + off, std::min(kPiece, f.len - off)};
  s.receive(PacketView(std::span(segs.data(), n), f.len), RxMeta{}, now);
#else
  // The pieces are contiguous here; the copy stands for rte_pktmbuf_read.
  std::memcpy(g_scratch.data(), f.bytes.data(), f.len);
  s.receive(std::span<const uint8_t>(g_scratch.data(), f.len), RxMeta{}, now);
#endif
}

// What the data plane does with one receive burst at the sink. Not inlined, so that
// callgrind can count it alone.
__attribute__((noinline)) void receive_at_sink(Stack& s, std::span<Frame* const> burst,
                                               bool chained, Instant now) {
  s.begin_rx_burst();
  for (const Frame* f : burst) receive_frame(s, *f, chained, now);
  s.end_rx_burst(now);
}

// The sender's side of the same transfer: the ACKs it receives and the data segments
// they release (Connection::send from the pump is counted with it when both are toggled).
__attribute__((noinline)) void receive_at_source(Stack& s, const Frame& f, Instant now) {
  s.receive(std::span<const uint8_t>(f.bytes.data(), f.len), RxMeta{}, now);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rx_path_bench MTU [chained|one] [MBYTES] [v4|v6] [BURST]\n");
    return 2;
  }
  const uint32_t mtu = static_cast<uint32_t>(std::atoi(argv[1]));
  const bool chained = argc > 2 && std::string(argv[2]) == "chained";
  const uint64_t total = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 64) << 20;
  const bool v6 = argc > 4 && std::string(argv[4]) == "v6";
  const size_t burst_max = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : kBurst;
  if (mtu < 576 || mtu > 9000 || burst_max < 1 || burst_max > 1024) return 2;

  std::deque<Frame*> a_to_b, b_to_a;
  const Ipv4Addr ip_a = Ipv4Addr::from_octets(10, 0, 0, 1);
  const Ipv4Addr ip_b = Ipv4Addr::from_octets(10, 0, 0, 2);
#ifdef WS_STACK_WIRE_IPV6
  const auto ip6_a = Ipv6Addr::parse("fd00::1");
  const auto ip6_b = Ipv6Addr::parse("fd00::2");
  // Only the IPv6 run gives the hosts IPv6 addresses: the IPv4 run stays as it was.
  Host a(mtu, MacAddr{{2, 0, 0, 0, 0, 1}}, ip_a, a_to_b, {}, v6 ? ip6_a : std::nullopt);
  Host b(mtu, MacAddr{{2, 0, 0, 0, 0, 2}}, ip_b, b_to_a, {}, v6 ? ip6_b : std::nullopt);
  const IpAddr dst = v6 ? IpAddr(*ip6_b) : IpAddr(ip_b);
#else
  if (v6) return 2;  // a stack without IPv6
  Host a(mtu, MacAddr{{2, 0, 0, 0, 0, 1}}, ip_a, a_to_b);
  Host b(mtu, MacAddr{{2, 0, 0, 0, 0, 2}}, ip_b, b_to_a);
  const Ipv4Addr dst = ip_b;
#endif

  uint64_t received = 0, sum = 0, sent = 0;
  static std::vector<uint8_t> chunk(256 * 1024);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<uint8_t>(i * 131 + 7);

  tcp::ListenCallbacks l;
  l.on_accept = [&](tcp::Connection& c) {
    tcp::ConnCallbacks cb;
    cb.on_data = [&](tcp::Connection&, std::span<const uint8_t> d) {
      received += d.size();
      sum += d[0] + d[d.size() - 1];
      return d.size();
    };
    c.set_callbacks(std::move(cb));
    return true;
  };
  b.tcp.listen(9, l);
  tcp::Connection* conn = nullptr;
  auto pump = [&](tcp::Connection& c) {
    while (sent < total) {
      size_t n = c.send(std::span(chunk).first(std::min<uint64_t>(chunk.size(), total - sent)));
      sent += n;
      if (n == 0) return;
    }
  };
  tcp::ConnCallbacks ccb;
  ccb.on_connected = pump;
  ccb.on_writable = pump;

  Instant now = Instant::from_ns(1'000'000'000);
#ifdef WS_STACK_WIRE_IPV6
  if (v6) {  // the IPv6 addresses (no DAD) become usable
    a.stack.start(now);
    b.stack.start(now);
  }
#endif
  a.stack.poll(now);
  b.stack.poll(now);
  conn = a.tcp.connect({dst, 9}, std::move(ccb), 0, now);
  if (conn == nullptr) return 1;
  // A 10 Gbit/s wire with a 20 us round trip: time advances per frame.
  for (uint64_t iter = 0; received < total && iter < 100'000'000; ++iter) {
    bool moved = false;
    while (!a_to_b.empty()) {
      // The burst is stamped with the arrival time of its last frame, as one rx_burst.
      std::array<Frame*, 1024> burst;
      size_t n = 0;
      while (!a_to_b.empty() && n < burst_max) {
        burst[n++] = a_to_b.front();
        now += Duration::nanos(a_to_b.front()->len * 8 / 10);
        a_to_b.pop_front();
      }
      receive_at_sink(b.stack, std::span<Frame* const>(burst.data(), n), chained, now);
      for (size_t i = 0; i < n; ++i) a.io.recycle(burst[i]);
      moved = true;
    }
    while (!b_to_a.empty()) {
      Frame* f = b_to_a.front();
      b_to_a.pop_front();
      receive_at_source(a.stack, *f, now);
      b.io.recycle(f);
      moved = true;
    }
    if (!moved) now += Duration::micros(10);
    a.stack.poll(now);
    b.stack.poll(now);
  }
  const auto& tc = b.tcp.counters();
  std::printf(
      "mtu %u %s%s, bursts of up to %zu: %llu bytes received (check %llu), drops %llu/%llu,"
      " segments %llu (sent %llu), ACKs %llu\n",
      mtu, chained ? "chained" : "one buffer", v6 ? ", IPv6" : "", burst_max,
      static_cast<unsigned long long>(received), static_cast<unsigned long long>(sum % 1000),
      static_cast<unsigned long long>(b.stack.drops().total()),
      static_cast<unsigned long long>(b.drops.total()),
      static_cast<unsigned long long>(tc.segments_in),
      static_cast<unsigned long long>(a.tcp.counters().segments_out),
      static_cast<unsigned long long>(tc.segments_out));
  return received >= total ? 0 : 1;
}
