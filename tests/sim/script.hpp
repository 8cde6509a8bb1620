// Scripted scenarios: one stack under test (at kAddrA, or another address of either
// family), the test plays the peer (kAddrB) by crafting segments and reading what the
// stack sent (cf. packetdrill).
#pragma once

#include <optional>

#include "tests/sim/apps.hpp"

namespace ws::sim {

struct Seg {
  Packet p;
  wire::TcpView v;
  wire::TcpOptions o;
  explicit Seg(Packet pk) : p(std::move(pk)), v(p.tcp()) { v.parse_options(o); }
  bool has(uint8_t f) const { return (v.flags() & f) != 0; }
};

struct Script {
  explicit Script(tcp::TcpConfig c = default_config(1)) : Script(kAddrA, kAddrB, std::move(c)) {}
  Script(IpAddr self, IpAddr peer_addr, tcp::TcpConfig c = default_config(1))
      : me(self), them(peer_addr), out(self), s(out, drops, std::move(c)) {
    now = Instant::from_ns(10'000'000'000);
    s.poll(now);
  }
  // Delivers a segment from the peer (them:peer_port).
  void in(wire::TcpRepr r, std::span<const uint8_t> payload = {}) {
    auto v = make_segment(them, me, r, payload);
    s.input(them, me, v, false, now);
  }
  std::optional<Seg> pop() {
    if (out.captured.empty()) return std::nullopt;
    Seg g(std::move(out.captured.front()));
    out.captured.pop_front();
    return g;
  }
  void clear() { out.captured.clear(); }
  size_t pending() const { return out.captured.size(); }
  // Runs timers up to now + d; stops early (returns true) when a segment was sent.
  bool advance(Duration d, bool stop_on_send = false) {
    Instant end = now + d;
    for (;;) {
      Instant next = s.poll(now);
      if (stop_on_send && !out.captured.empty()) return true;
      if (next > end) break;
      now = next;
    }
    now = end;
    s.poll(now);
    return !out.captured.empty();
  }
  // Active open from A to B:80 with a peer that offers every option. Returns the
  // connection once established; the peer's next sequence number is peer_nxt.
  tcp::Connection* open(Peer& app, bool peer_ws = true, bool peer_ts = true, bool peer_sack = true,
                        uint16_t peer_wnd = 65535) {
    app.shutdown_when_done = false;
    app.c = s.connect({them, 80}, app.callbacks(), 0, now);
    auto syn = pop();
    if (!syn) return nullptr;
    lport = syn->v.src_port();
    our_iss = syn->v.seq();
    ts_ok = peer_ts;
    wire::TcpRepr r = peer(wire::tcpflag::kSyn | wire::tcpflag::kAck);
    r.seq = peer_iss;
    r.ack = our_iss + 1;
    r.window = peer_wnd;
    r.mss = peer_mss;
    if (peer_ws) r.wscale = 7;
    r.sack_permitted = peer_sack;
    if (peer_ts) {
      r.ts_val = peer_ts_val;
      r.ts_ecr = syn->o.ts_val.value_or(0);
    }
    now = now + open_rtt;
    in(r);
    peer_nxt = peer_iss + 1;
    our_nxt = our_iss + 1;
    ts_ok = peer_ts;
    return app.c;
  }
  // A segment from the peer with the current numbers.
  wire::TcpRepr peer(uint8_t flags = wire::tcpflag::kAck) {
    wire::TcpRepr r;
    r.src_port = 80;
    r.dst_port = lport;
    r.seq = peer_nxt;
    r.ack = our_nxt;
    r.flags = flags;
    r.window = 1000;  // scaled by 7 when negotiated: 128000 bytes
    if (ts_ok) {
      r.ts_val = peer_ts_val;
      r.ts_ecr = 0;
    }
    return r;
  }

  IpAddr me, them;
  FakeOutput out;
  DropCounters drops;
  tcp::TcpStack s;
  Instant now;
  uint16_t lport = 0;
  SeqNum our_iss, our_nxt;
  SeqNum peer_iss{5000};
  SeqNum peer_nxt{5001};
  uint32_t peer_ts_val = 100000;
  bool ts_ok = true;
  uint16_t peer_mss = 1460;  // the MSS option of the peer's SYN-ACK
  Duration open_rtt;         // how long open()'s SYN-ACK takes: the first RTT sample
};

}  // namespace ws::sim
