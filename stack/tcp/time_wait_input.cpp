// TIME-WAIT kept as a record (time_wait.hpp): how a connection becomes one, what a segment
// to it gets (RFC 9293 3.10.7.4 with RFC 1337, RFC 7323 PAWS and RFC 6191), and how a new
// connection takes its tuple over.
#include <algorithm>

#include "stack/tcp/paws.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/wire/tcp.hpp"

namespace ws::tcp {

using namespace wire::tcpflag;

namespace {
// The window field a TIME-WAIT connection keeps sending: its rings are gone, and the right
// edge it advertised last may not move left (RFC 9293 3.8.6.2.2, RFC 7323 2.4), so the
// rest of the last window, rounded up to the scale.
uint16_t kept_window(const Tcb& c) {
  const uint32_t left = c.offered_window();
  const uint8_t shift = c.ws_ok ? c.rcv_wscale : 0;
  return static_cast<uint16_t>(std::min<uint32_t>((left + (1u << shift) - 1) >> shift, 65535));
}

// The ISN and timestamp offset of the tuple's next connection at `now`: F and the offset
// serve again (RFC 6528's F depends on the tuple and the secret only).
IsnGenerator::Initial next_initial(const TimeWaitRecord& w, Instant now) {
  return IsnGenerator::again({0, w.ts_offset, w.isn_f}, now);
}
}  // namespace

void TcpStack::park_time_wait(Tcb& c) {
  TimeWaitRecord& w = time_waits_.add(c.t, c.table_hash, c.tw_at);
  w.ts_recent_time = c.ts_recent_time;
  w.snd_nxt = c.snd_max;
  w.rcv_nxt = c.rcv_nxt;
  w.ts_recent = c.ts_recent;
  w.ts_offset = c.ts_offset;
  w.isn_f = c.isn_f;
  w.window = kept_window(c);
  w.fam = c.fam;
  w.ts_ok = c.ts_ok;
  w.replies = c.unacceptable_replies;
  // The record counts as the TIME-WAIT connection it is; the Tcb leaves as CLOSED.
  ++ctr_.state[static_cast<size_t>(TcpState::kTimeWait)];
  ++ctr_.family.state[static_cast<size_t>(TcpState::kTimeWait)][w.fam];
  release(&c);
}

void TcpStack::drop_time_wait(TimeWaitRecord& w) {
  --ctr_.state[static_cast<size_t>(TcpState::kTimeWait)];
  --ctr_.family.state[static_cast<size_t>(TcpState::kTimeWait)][w.fam];
  time_waits_.remove(w);
}

void TcpStack::expire_time_waits(Instant now) {
  while (TimeWaitRecord* w = time_waits_.oldest()) {
    if (w->until > now) return;
    drop_time_wait(*w);
  }
}

// RFC 9293 3.10.7.4 in TIME-WAIT, as the Tcb's input treats that state: the window is
// closed, so anything but the next sequence number with nothing in it is outside it.
void TcpStack::time_wait_input(TimeWaitRecord& w, const FourTuple& t, Segment& s, Instant now) {
  // RFC 1337 (TIME-WAIT assassination, hazard H1): a RST does not end TIME-WAIT early.
  if (s.rst()) {
    drops_.add(DropReason::kTcpTimeWaitRst);
    return;
  }
  // RFC 6191: a new SYN takes the tuple over.
  if (s.syn() && !s.has_ack() && syn_is_newer(s, w.ts_ok, w.ts_recent, w.rcv_nxt)) {
    if (Listener* l = listener_for(t)) {
      ++ctr_.time_wait_reused;
      const IsnGenerator::Initial init = next_initial(w, now);
      const uint64_t hash = w.hash;
      drop_time_wait(w);
      listen_input(*l, t, s, now, &init, hash);
      return;
    }
  }
  // RFC 7323 5.3 R1: PAWS, answered with an ACK.
  if (w.ts_ok && s.opts.ts_val && paws_old(*s.opts.ts_val, w.ts_recent) &&
      now - w.ts_recent_time < kPawsIdle) {
    drops_.add(DropReason::kTcpPawsRejected);
    time_wait_reply(w, s, now);
    return;
  }
  // At the next sequence number with nothing in it: an ACK needs no answer (the fifth
  // check drops a segment without one).
  if (s.len == 0 && s.seq == w.rcv_nxt) {
    if (!s.has_ack()) drops_.add(DropReason::kTcpBadFlags);
    return;
  }
  drops_.add(DropReason::kTcpOutOfWindow);
  // The peer's FIN again (our ACK of it was lost): 2 MSL start over.
  if (s.fin()) time_waits_.restart(w, now + cfg_.time_wait);
  time_wait_reply(w, s, now);
}

// The ACK that answers an unacceptable segment, throttled as a connection's is
// (UnacceptableReplyLimit): a retransmitted FIN is always answered.
void TcpStack::time_wait_reply(TimeWaitRecord& w, const Segment& s, Instant now) {
  if (w.replies.allow(s.len, now))
    time_wait_ack(w, now);
  else
    ++ctr_.unacceptable_acks_limited;
}

// The ACK a TIME-WAIT connection sends: no SACK blocks (nothing is held out of order). A
// transmit buffer short now is not waited for: the peer's next retransmission asks again.
void TcpStack::time_wait_ack(const TimeWaitRecord& w, Instant now) {
  wire::TcpRepr r;
  r.src_port = w.t.lport;
  r.dst_port = w.t.rport;
  r.seq = w.snd_nxt;
  r.ack = w.rcv_nxt;
  r.flags = kAck;
  r.window = w.window;
  if (w.ts_ok) {
    r.ts_val = static_cast<uint32_t>(now.ns() / 1000000) + w.ts_offset;
    r.ts_ecr = w.ts_recent;
  }
  L4Frame f;
  if (!out_.begin(w.t.laddr, w.t.raddr, 6, static_cast<uint32_t>(r.header_len()), f)) return;
  wire::emit_tcp(f.l4.data(), r);
  out_.commit(f, now);
  ++ctr_.family.segments_out[w.fam];
}

bool TcpStack::syn_takes_over(Tcb& tw, const FourTuple& t, Segment& s, Instant now) {
  if (!s.syn() || s.has_ack() || !syn_is_newer(s, tw.ts_ok, tw.ts_recent, tw.rcv_nxt)) return false;
  Listener* l = listener_for(t);
  if (l == nullptr) return false;
  ++ctr_.time_wait_reused;
  tw.set_state(TcpState::kClosed);
  release(&tw);
  listen_input(*l, t, s, now);
  return true;
}

bool TcpStack::reuse_time_wait(const FourTuple& t, Instant now, TimeWaitRecord*& tw) {
  tw = nullptr;
  // A Tcb holds the tuple: a live connection, or one in TIME-WAIT whose last ACK is still
  // waiting for a transmit buffer (it becomes a record once that is out).
  if (conns_.find(t) != nullptr) return false;
  TimeWaitRecord* w = time_waits_.find(t);
  if (w == nullptr) return true;
  // Like Linux tcp_tw_reuse: with timestamps, PAWS on the peer rejects old duplicates
  // once both timestamp clocks have moved on (TcpConfig::time_wait_reuse, 1 s default).
  if (w->ts_ok && now - w->ts_recent_time >= cfg_.time_wait_reuse) {
    ++ctr_.time_wait_reused;
    tw = w;
    return true;
  }
  return false;
}

Tcb* TcpStack::take_over_time_wait(TimeWaitRecord& tw) {
  const FourTuple t = tw.t;
  const IsnGenerator::Initial init = next_initial(tw, now_);
  const uint64_t hash = tw.hash;
  drop_time_wait(tw);
  return new_tcb(t, &init, hash);
}

}  // namespace ws::tcp
