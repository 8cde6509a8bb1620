// Two whole Stacks (Ethernet, IPv4, ARP, TCP; IPv6 and NDP beside them when a host is given
// an IPv6 address) wired back to back in memory, for the
// programs in tests/bench that count instructions under callgrind (rx_path_bench,
// http_cost, echo_cost): each frame a host transmits lands in its peer's queue, and buffers are
// recycled so that the allocator is not measured.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "stack/apps/service.hpp"
#include "stack/iface/stack.hpp"
#include "stack/tcp/tcp_stack.hpp"
#if __has_include("stack/iface/tcp_transport.hpp")
#include "stack/iface/tcp_transport.hpp"
#else
#include "stack/tcp/transport.hpp"
#endif

namespace ws::test {

struct Frame {
  std::vector<uint8_t> bytes;
  uint32_t len = 0;
};

// A PacketIo whose frames land in the peer's queue; buffers are recycled.
class WireIo final : public PacketIo {
 public:
  WireIo(uint32_t mtu, std::deque<Frame*>& to_peer) : mtu_(mtu), to_peer_(to_peer) {}
  // Its frames: the free ones and those sent but never taken off the peer's queue (a run
  // that stops with frames in flight). The queue outlives it (HostPair declares it first).
  ~WireIo() override {
    for (Frame* f : free_) delete f;
    for (Frame* f : to_peer_) delete f;
    to_peer_.clear();
  }
  bool alloc_tx(uint32_t len, TxBuf& out) override {
    if (len > mtu_ + 14) return false;
    Frame* f;
    if (free_.empty()) {
      f = new Frame;
      f->bytes.resize(mtu_ + 14);
    } else {
      f = free_.back();
      free_.pop_back();
    }
    out = TxBuf{};
    out.data = f->bytes.data();
    out.capacity = mtu_ + 14;
    out.handle = f;
    return true;
  }
  bool transmit(TxBuf& b) override {
    auto* f = static_cast<Frame*>(b.handle);
    f->len = b.len;
    to_peer_.push_back(f);
    return true;
  }
  void release(TxBuf& b) override { recycle(static_cast<Frame*>(b.handle)); }
  TxOffloads tx_offloads() const override { return {}; }
  uint32_t max_frame_len() const override { return mtu_ + 14; }
  uint32_t free_buffers() const override { return 1u << 20; }
  void recycle(Frame* f) { free_.push_back(f); }

 private:
  uint32_t mtu_;
  std::deque<Frame*>& to_peer_;
  std::vector<Frame*> free_;
};

// Built against a stack without IPv6 (to measure an older commit), `ip6` is not allowed.
#if __has_include("stack/wire/ipv6.hpp")
#define WS_STACK_WIRE_IPV6 1
using HostIpv6 = std::optional<Ipv6Addr>;
#else
using HostIpv6 = std::optional<int>;
#endif

struct Host {
  // With `ip6`, the interface also holds ip6/64, usable at once (no DAD).
  Host(uint32_t mtu, MacAddr mac, Ipv4Addr ip, std::deque<Frame*>& to_peer,
       tcp::TcpConfig tcp_cfg = {}, HostIpv6 ip6 = std::nullopt)
      : io(mtu, to_peer), tcp(stack, drops, std::move(tcp_cfg)), transport(tcp) {
    InterfaceConfig c;
    c.name = "bench0";
    c.mac = mac;
    c.address = Ipv4Cidr{ip, 24};
    c.mtu = mtu;
#ifdef WS_STACK_WIRE_IPV6
    if (ip6) {
      c.addresses6 = {Ipv6Cidr{*ip6, 64}};
      c.dad_transmits = 0;
    }
#endif
    stack.add_interface(c, io);
    stack.set_tcp(&transport);
  }
  WireIo io;
  Stack stack;
  DropCounters drops;
  tcp::TcpStack tcp;
  tcp::TcpTransport transport;
};

// The cost benches' two hosts on one wire: a (10.0.0.1, the client's side) and b
// (10.0.0.2), MTU 1500, each sending into the other's queue.
struct HostPair {
  static constexpr Ipv4Addr kIpA = Ipv4Addr::from_octets(10, 0, 0, 1);
  static constexpr Ipv4Addr kIpB = Ipv4Addr::from_octets(10, 0, 0, 2);
  // Both hosts' TCP settings (echo_cost's reconnect mode: the benchmark's TIME_WAIT ones).
  explicit HostPair(const tcp::TcpConfig& cfg = {})
      : a{1500, MacAddr{{2, 0, 0, 0, 0, 1}}, kIpA, a_to_b, cfg},
        b{1500, MacAddr{{2, 0, 0, 0, 0, 2}}, kIpB, b_to_a, cfg} {}
  std::deque<Frame*> a_to_b, b_to_a;
  Host a;
  Host b;
};

// One side of a back-to-back pair run as the data plane's loop runs it (dataplane/pipeline.cpp,
// Pipeline::run): one receive burst of up to kLoopBurst frames, then the timers (Stack::poll
// and the service's poll) when something arrived or a deadline passed, then the transmit
// step (TcpStack::serve_tx_waiters, Stack::flush). echo_cost and http_client_cost count
// each side's steps alone.
inline constexpr size_t kLoopBurst = 32;  // Pipeline::run's receive burst

struct LoopSide {
  Host& host;
  Service& svc;
  std::deque<Frame*>& inbox;  // frames the peer sent to this side
  WireIo* peer_io;            // where those frames' buffers go back
  Instant deadline = Instant::never();
  uint64_t bursts = 0;
  uint64_t frames = 0;
};

// One receive burst of up to kLoopBurst frames; returns how many.
inline size_t loop_burst(LoopSide& s, Instant now) {
  Frame* f[kLoopBurst];
  size_t n = 0;
  while (n < kLoopBurst && !s.inbox.empty()) {
    f[n++] = s.inbox.front();
    s.inbox.pop_front();
  }
  if (n == 0) return 0;
  s.host.stack.begin_rx_burst();
  for (size_t i = 0; i < n; ++i)
    s.host.stack.receive(std::span<const uint8_t>(f[i]->bytes.data(), f[i]->len), RxMeta{}, now);
  s.host.stack.end_rx_burst(now);
  for (size_t i = 0; i < n; ++i) s.peer_io->recycle(f[i]);
  ++s.bursts;
  s.frames += n;
  return n;
}

// Timers when due (or after a burst), then the transmit step.
inline void loop_timers(LoopSide& s, bool got, Instant now) {
  if (got || now >= s.deadline) s.deadline = earliest(s.host.stack.poll(now), s.svc.poll(now));
  s.host.tcp.serve_tx_waiters(now);
  s.host.stack.flush(now);
  s.deadline = earliest(s.deadline, s.host.tcp.next_due());
}

// Each side's steps, not inlined nor folded into one another (noipa), so that callgrind
// counts each side alone (--toggle-collect='*server_*' or '*client_*').
__attribute__((noipa)) inline size_t server_burst(LoopSide& s, Instant now) {
  return loop_burst(s, now);
}
__attribute__((noipa)) inline void server_timers(LoopSide& s, bool got, Instant now) {
  loop_timers(s, got, now);
}
__attribute__((noipa)) inline size_t client_burst(LoopSide& s, Instant now) {
  return loop_burst(s, now);
}
__attribute__((noipa)) inline void client_timers(LoopSide& s, bool got, Instant now) {
  loop_timers(s, got, now);
}

}  // namespace ws::test
