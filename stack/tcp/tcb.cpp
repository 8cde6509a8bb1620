// Connection lifecycle and the application-facing Connection methods.
#include "stack/tcp/tcb.hpp"

#include <algorithm>

#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

const char* close_reason_name(CloseReason r) {
  switch (r) {
    case CloseReason::kNormal:
      return "normal";
    case CloseReason::kReset:
      return "reset";
    case CloseReason::kTimeout:
      return "timeout";
    case CloseReason::kKeepalive:
      return "keepalive";
    case CloseReason::kRefused:
      return "refused";
    case CloseReason::kAborted:
      return "aborted";
    case CloseReason::kStackShutdown:
      return "stack_shutdown";
  }
  return "unknown";
}

const char* tcp_state_name(TcpState s) {
  static const char* const names[] = {"closed",      "listen",     "syn_sent",   "syn_received",
                                      "established", "fin_wait_1", "fin_wait_2", "close_wait",
                                      "closing",     "last_ack",   "time_wait"};
  size_t i = static_cast<size_t>(s);
  return i < kTcpStateCount ? names[i] : "unknown";
}

Tcb::Tcb(TcpStack& s, const FourTuple& tuple)
    : stack(s), t(tuple), fam(static_cast<uint8_t>(family_index(tuple.raddr))) {
  ++stack.ctr().state[static_cast<size_t>(TcpState::kClosed)];
  ++stack.ctr().family.state[static_cast<size_t>(TcpState::kClosed)][fam];
  BufferTally& b = stack.tally();
  rcvbuf.bind(&b.rcv);
  sndbuf.bind(&b.snd);
  txlog.set_tally(&b.heap);
  ooo.set_tally(&b.heap);
}

void Tcb::become_established(Instant now) {
  set_state(TcpState::kEstablished);
  ++stack.ctr().family.connections_established[fam];
  // RFC 6298 (5.7): after a lost SYN (or SYN,ACK) and without an RTT sample, data
  // transmission starts with an RTO of 3 s.
  if (syn_retransmitted && !have_rtt) rto = std::max(rto, Duration::seconds(3));
  rcv_space_time = now;
  rcv_space = std::min<uint32_t>(rcvbuf.capacity(), 10 * our_mss);
  keepalive_at = stack.config().keepalive ? now + stack.config().keepalive_idle : Instant::never();
  if (passive) {
    Listener* l = listener;
    if (l) {
      --l->syn_queue;
      l->handshakes.completed(now);
      listener = nullptr;
    }
    bool ok = l && l->cb.on_accept;
    if (ok) {
      app_visible = true;
      ++stack.ctr().family.connections_accepted[fam];
      ok = l->cb.on_accept(*this);
      if (!ok) app_visible = false;
    }
    if (!ok) {
      if (!released) {
        stack.drops().add(DropReason::kTcpAcceptQueueFull);
        send_rst(now);
        stack.release(this);
      }
      return;
    }
  } else if (cb.on_connected) {
    cb.on_connected(*this);
  }
  // shutdown_write() before the handshake finished: FIN goes out after the data.
  if (!released && fin_queued && state == TcpState::kEstablished) set_state(TcpState::kFinWait1);
}

void Tcb::enter_time_wait(Instant now) {
  if (stack.count_in(TcpState::kTimeWait) >= stack.config().time_wait_max) {
    // The peer's FIN is acknowledged first (the input's own output would come too late).
    if (last_ack_sent != rcv_nxt) send_ack(now);
    ++stack.ctr().time_wait_overflow;
    finish(CloseReason::kNormal);
    return;
  }
  set_state(TcpState::kTimeWait);
  rto_at = delack_at = persist_at = keepalive_at = retry_at = pressure_at = Instant::never();
  pressured = false;
  tlp_at = rack.reo_at = Instant::never();
  tw_at = now + stack.config().time_wait;
  // Keep only what TIME_WAIT needs: the sequence state and ts_recent.
  stack.recycle_rings(*this);
  ooo.clear();
  txlog.release();
  if (app_visible && !notified) {
    notified = true;
    ++stack.ctr().connections_closed;
    if (cb.on_closed) cb.on_closed(*this, CloseReason::kNormal);
  }
  cb.clear();
  stack.schedule(this);
}

void Tcb::finish(CloseReason r) {
  if (released) return;
  stack.release(this);  // to CLOSED; freed when the stack call returns
  if (r == CloseReason::kTimeout || r == CloseReason::kKeepalive) ++stack.ctr().timeouts;
  if (app_visible && !notified) {
    notified = true;
    ++stack.ctr().connections_closed;
    auto f = std::move(cb.on_closed);
    cb.clear();
    if (f) f(*this, r);
  }
}

void Tcb::deliver(Instant now) {
  if (delivering || released) return;
  delivering = true;
  if (app_closed && rcv_queued() > 0) {
    // close() was called: nobody reads any more; discard (and keep the window open).
    size_t n = rcv_queued();
    drop_held();
    rcvbuf.pop(rcvbuf.size());
    autotune_on_consume(n, now);
  }
  // Held bytes come first (they precede the ring's in sequence order).
  bool more = held_first == kNoPiece || deliver_held(*this, now);
  // The application left bytes. Held, they are offered again piece by piece; in
  // the ring, joined with everything after them. When bytes wait in the ring
  // behind them, or they fill half the buffer, copy them into the ring: an
  // application that reads part of each offer then sees all that is queued at the
  // next arrival, as without holding, and the window cannot close on a queue it
  // is offered only a piece at a time.
  if (!more && !released && (rcvbuf.size() > 0 || held_bytes > rcvbuf.capacity() / 2)) {
    compact_held();
    // Offer the joined bytes now; if the ring could not take them (it always can:
    // the window counted them), the ring's bytes must not overtake the held ones.
    more = held_first == kNoPiece;
  }
  while (more && rcvbuf.size() > 0 && cb.on_data && !released) {
    auto span = rcvbuf.contiguous(0, rcvbuf.size());
    size_t n = std::min(cb.on_data(*this, span), span.size());
    if (released) break;
    rcvbuf.pop(n);
    autotune_on_consume(n, now);
    if (n < span.size()) break;
  }
  delivering = false;
  if (released) return;
  note_window_opened();
}

// ---------------------------------------------------------------- Connection API

static Tcb& self(Connection* c) { return *static_cast<Tcb*>(c); }
static const Tcb& self(const Connection* c) { return *static_cast<const Tcb*>(c); }

void Connection::set_callbacks(ConnCallbacks&& cbs) { self(this).cb.swap(cbs); }

namespace {
// Connection::send_space, inline for the send path (a reserve and its commit ask twice).
[[gnu::always_inline]] inline size_t space(const Tcb& t) {
  if (t.released || t.fin_queued) return 0;
  if (t.state != TcpState::kEstablished && t.state != TcpState::kCloseWait &&
      t.state != TcpState::kSynSent && t.state != TcpState::kSynReceived)
    return 0;
  if (t.pressured) return 0;
  return t.snd_buf_limit > t.sndbuf.size() ? t.snd_buf_limit - t.sndbuf.size() : 0;
}
}  // namespace

size_t Connection::send_space() const { return space(self(this)); }

size_t Connection::send_queued() const { return self(this).sndbuf.size(); }

uint32_t Connection::send_mss() const { return self(this).max_payload(false); }

namespace {
// Room in the send buffer for `want` more bytes (at most send_space()); storage
// grows toward the autotuned limit in steps (not per segment). 0 when nothing
// may be queued now; then on_writable follows.
size_t prepare_send(Tcb& t, size_t want) {
  // Refused here, the writer waits its turn at the transmit queue like the frames do
  // (tx_blocked): the turn wakes it (resume_output). Left to poll the mark, it found the
  // queue refilled by others each time. The timer re-check (pressure_at) is the fallback
  // for a connection with nothing in flight and so no other timer.
  if (!t.released) {
    if (t.stack.tx_blocked(t)) {
      if (!t.pressured) {
        t.set_pressured(t.stack.last_now());
        t.stack.schedule(&t);
      }
    } else if (t.pressured) {
      t.pressured = false;
      t.pressure_at = Instant::never();
      t.ack_now = true;  // the window's right edge moves again (update_pressure)
    }
  }
  size_t n = std::min(space(t), want);
  if (n < want) t.want_writable = true;
  if (n == 0) return 0;
  if (t.sndbuf.free() < n) {
    size_t grow = std::max<size_t>(t.sndbuf.size() + n, t.sndbuf.capacity() * 2);
    // Grow geometrically, bounded by the autotune ceiling rather than by the
    // current limit: the limit rises in small steps (2 x cwnd) and resizing to
    // each step re-copied the whole buffer a thousand times on the way to 6 MiB.
    size_t ceiling = std::max<size_t>(t.snd_buf_limit, t.stack.config().buffer_max);
    t.stack.grow_send_ring(t, std::min<size_t>(std::max<size_t>(grow, 16384), ceiling));
  }
  return std::min(n, t.sndbuf.free());
}

void queued(Tcb& t) {
  if (t.stack.in_stack())
    t.stack.conn_output(&t);
  else
    t.output(t.stack.last_now());
}
}  // namespace

size_t Connection::send(std::span<const uint8_t> data) {
  Tcb& t = self(this);
  t.send_reserved = 0;
  size_t n = prepare_send(t, data.size());
  if (n == 0) return 0;
  n = t.sndbuf.push(data.first(n));
  queued(t);
  return n;
}

Connection::SendSpace Connection::send_reserve(size_t max) {
  Tcb& t = self(this);
  size_t n = prepare_send(t, max);
  auto [a, b] = t.sndbuf.tail_room(n);
  t.send_reserved = a.size() + b.size();
  return {a, b};
}

size_t Connection::send_commit(size_t n) {
  Tcb& t = self(this);
  n = std::min(n, t.send_reserved);
  t.send_reserved = 0;
  // The state may have changed since send_reserve() (a callback closed it).
  if (n == 0 || space(t) < n) return 0;
  t.sndbuf.commit(n);
  queued(t);
  return n;
}

void Connection::shutdown_write() {
  Tcb& t = self(this);
  if (t.released || t.fin_queued) return;
  switch (t.state) {
    case TcpState::kSynSent:
      // RFC 9293 3.10.4: CLOSE in SYN-SENT deletes the TCB.
      t.finish(CloseReason::kNormal);
      return;
    case TcpState::kSynReceived:
      t.fin_queued = true;  // FIN_WAIT_1 once established
      return;
    case TcpState::kEstablished:
      t.fin_queued = true;
      t.set_state(TcpState::kFinWait1);
      break;
    case TcpState::kCloseWait:
      t.fin_queued = true;
      t.set_state(TcpState::kLastAck);
      break;
    default:
      return;
  }
  if (t.stack.in_stack())
    t.stack.conn_output(&t);
  else
    t.output(t.stack.last_now());
}

void Connection::close() {
  Tcb& t = self(this);
  t.app_closed = true;
  // Half-closed earlier and already in FIN-WAIT-2: orphaned now, so it gets the bounded
  // wait that a close() before the FIN was acknowledged gets (tcp_input.cpp), or a
  // silent peer would hold it forever.
  if (!t.released && t.state == TcpState::kFinWait2 && t.tw_at.is_never()) {
    t.tw_at = t.stack.last_now() + t.stack.config().time_wait;
    t.stack.schedule(&t);
  }
  shutdown_write();
}

void Connection::abort() {
  Tcb& t = self(this);
  if (t.released) return;
  if (t.state != TcpState::kSynSent && t.state != TcpState::kTimeWait)
    t.send_rst(t.stack.last_now());
  t.finish(CloseReason::kAborted);
}

void Connection::resume_read() {
  Tcb& t = self(this);
  if (t.released) return;
  t.deliver(t.stack.last_now());
  if (t.stack.in_stack())
    t.stack.conn_output(&t);
  else
    t.output(t.stack.last_now());
}

size_t Connection::readable() const { return self(this).rcv_queued() + self(this).direct_unread; }
Endpoint Connection::local() const { return {self(this).t.laddr, self(this).t.lport}; }
Endpoint Connection::remote() const { return {self(this).t.raddr, self(this).t.rport}; }
TcpState Connection::state() const { return self(this).state; }

ConnInfo Connection::info() const {
  const Tcb& t = self(this);
  ConnInfo i;
  i.state = t.state;
  i.send_mss = t.max_payload(false);
  i.cwnd = t.cc ? t.cc->cwnd() : 0;
  i.ssthresh = t.cc ? t.cc->ssthresh() : 0;
  i.snd_wnd = t.snd_wnd;
  i.rcv_wnd = static_cast<uint32_t>(std::max<int32_t>(t.rcv_adv - t.rcv_nxt, 0));
  i.rcv_buf = static_cast<uint32_t>(t.rcvbuf.capacity());
  i.snd_buf = t.snd_buf_limit;
  i.snd_wscale = t.ws_ok ? t.snd_wscale : 0;
  i.rcv_wscale = t.ws_ok ? t.rcv_wscale : 0;
  i.timestamps = t.ts_ok;
  i.sack = t.sack_ok;
  i.srtt = t.srtt;
  i.rto = t.rto;
  i.retransmits = t.stat_retrans;
  i.bytes_sent = t.stat_sent;
  i.bytes_received = t.stat_recv;
  return i;
}

}  // namespace ws::tcp
