// Building and sending segments (RFC 9293 3.8.6 windows, RFC 7323 / RFC 2018 options).
#include <algorithm>
#include <utility>

#include "stack/tcp/mss.hpp"
#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/tcp/tso.hpp"

namespace ws::tcp {

using namespace wire::tcpflag;

namespace {

// Transmit buffers ran short towards the peer, or came back: then reopen the window
// and wake the writer.
[[gnu::always_inline]] inline void update_pressure(Tcb& c, Instant now) {
  if (c.pressured && !c.stack.tx_pressure(c.t.raddr)) {
    c.pressured = false;
    c.pressure_at = Instant::never();
    c.ack_now = true;
  } else if (c.stack.tx_pressure(c.t.raddr)) {
    c.set_pressured(now);
  }
}

// SYN_SENT and SYN_RECEIVED. A SYN (or SYN,ACK) that found no buffer goes out from here:
// emit() set retry_at, and no retransmission timer runs for a segment never sent.
void output_handshake(Tcb& c, Instant now) {
  if (c.snd_max == c.iss) {
    c.send_syn(now);
    return;
  }
  if (c.ack_now && c.state == TcpState::kSynReceived) c.send_ack(now);
  c.stack.schedule(&c);
}

// Bookkeeping after a data segment went out: retransmission counts and Karn's rule
// (RFC 6298 3), or an RTT sample started; the FIN it carried takes a sequence number.
[[gnu::always_inline]] inline void note_data_sent(Tcb& c, SeqNum end, uint32_t len, bool fin,
                                                  bool rexmit, Instant now) {
  if (rexmit) {
    ++c.stat_retrans;
    ++c.stack.ctr().retransmits;
    c.rtt_timing = false;  // Karn
  } else if (!c.rtt_timing) {
    c.rtt_timing = true;
    c.rtt_seq = c.snd_nxt;
    c.rtt_time = now;
  }
  if (!rexmit) c.stat_sent += len;
  c.snd_nxt += len;
  if (fin) {
    c.fin_sent = true;
    c.fin_seq = end;
    c.snd_nxt += 1;
  }
  c.snd_max = seq_max(c.snd_max, c.snd_nxt);
  c.arm_rto(now);
}

// A FIN on its own, after the last byte of data went out (RFC 9293 3.6). False when
// no buffer was free.
[[gnu::always_inline]] inline bool send_fin(Tcb& c, SeqNum end, Instant now) {
  if (!c.emit(c.snd_nxt, 0, kAck | kFin, now)) return false;
  if (c.fin_sent && c.snd_max > c.snd_nxt) {
    ++c.stat_retrans;
    ++c.stack.ctr().retransmits;
  }
  c.fin_sent = true;
  c.fin_seq = end;
  c.snd_nxt = end + 1;
  c.snd_max = seq_max(c.snd_max, c.snd_nxt);
  c.arm_rto(now);
  return true;
}

// What may be sent now: the least of the peer's window and the congestion window
// (RFC 5681 2), the latter against the pipe with SACK (RFC 6675 SetPipe).
// What counts against cwnd: the pipe (RFC 6675 section 4) with SACK, else everything
// between SND.UNA and SND.NXT.
[[gnu::always_inline]] inline uint32_t cwnd_outstanding(Tcb& c) {
  return c.sack_ok ? c.pipe() : static_cast<uint32_t>(c.snd_nxt - c.snd_una);
}

[[gnu::always_inline]] inline int64_t usable_window(Tcb& c) {
  int64_t rwnd_left = static_cast<int64_t>(c.snd_una + c.snd_wnd - c.snd_nxt);
  int64_t cwnd_left = static_cast<int64_t>(c.cc->cwnd()) - int64_t{cwnd_outstanding(c)};
  return std::min(rwnd_left, cwnd_left);
}

// After a pass that had data to send: whether cwnd held the sender (it left less than a
// segment of room), and the largest flight of the window observed. A new window starts
// once SND.UNA passes the last one's end, or when cwnd holds the sender; in between, the
// flight's maximum is kept while cwnd did not hold it (as Linux's tcp_cwnd_validate).
[[gnu::always_inline]] inline void note_cwnd_use(Tcb& c, uint32_t mps, bool sent) {
  const bool limited = uint64_t{cwnd_outstanding(c)} + mps > c.cc->cwnd();
  if (!sent && !limited) return;
  if (c.snd_una >= c.cwnd_window_end || limited ||
      (!c.cwnd_limited && c.flight() > c.cwnd_max_flight)) {
    c.cwnd_limited = limited;
    c.cwnd_max_flight = c.flight();
    c.cwnd_window_end = c.snd_nxt;
  }
}

[[gnu::always_inline]] inline void arm_persist(Tcb& c, uint32_t mps, Instant now) {
  // Persist timer (RFC 9293 3.8.6.1): data waits, the window is shut and nothing is in
  // flight, so no ACK will come to reopen it.
  if (c.data_end() > c.snd_nxt && c.snd_max == c.snd_una && c.snd_wnd < mps) {
    if (c.persist_at.is_never()) {
      Duration d = c.rto * (int64_t{1} << std::min<uint32_t>(c.persist_backoff, 10));
      c.persist_at = now + std::min(d, c.stack.config().rto_max);
    }
  } else {
    c.persist_at = Instant::never();
  }
}

// TSO: the port cuts super-segments of whole multiples of `seg` (the MSS, or less where the
// port bounds the frames it cuts) up to `limits.packet` bytes. The limits (a route lookup)
// are asked for only when more than one segment's worth may go: a request's or a
// response's few bytes go as one ordinary segment either way.
struct TsoPlan {
  TsoLimits limits;
  uint32_t header = 0;
  uint32_t seg = 0;
  bool known = false;
  // Payload bytes of the next super-segment; 0 for an ordinary segment.
  uint32_t next(const Tcb& c, uint32_t avail, uint32_t mps) {
    if (avail <= mps) return 0;
    if (!known) {
      limits = c.stack.out().tso_limits_to(c.t.raddr);
      header = kTcpHeaderLen + (c.ts_ok ? kTimestampOptionLen : 0);
      seg = tso_segment(mps, limits.segment_frame, header);
      known = true;
    }
    return limits.packet != 0 ? tso_payload(avail, seg, header, limits.packet) : 0;
  }
};

}  // namespace

[[gnu::always_inline]] inline uint16_t Tcb::window_field() {
  uint32_t wnd = rcv_window_now();
  uint8_t shift = ws_ok ? rcv_wscale : 0;
  uint32_t field = std::min<uint32_t>(wnd >> shift, 65535);
  // Never move the right edge left (RFC 9293 3.8.6.2.2 / RFC 7323 2.4): round up when
  // scaling would.
  if (rcv_nxt + (field << shift) < rcv_adv && field < 65535) ++field;
  SeqNum edge = rcv_nxt + (field << shift);
  if (edge > rcv_adv) rcv_adv = edge;
  return static_cast<uint16_t>(field);
}

void Tcb::note_ooo_segment(SeqNum seq) {
  // Move-to-front; an older entry inside the same block goes (emit() dedups the rest).
  size_t n = std::min<size_t>(sack_recent_n, sack_recent.size() - 1);
  for (size_t i = n; i > 0; --i) sack_recent[i] = sack_recent[i - 1];
  sack_recent[0] = seq;
  sack_recent_n = static_cast<uint8_t>(n + 1);
}

// RFC 2018 section 4: the block holding the most recent segment first, then the blocks
// of the segments received before it, newest first (they repeat what earlier ACKs said,
// which a lost ACK would otherwise take with it), then any other blocks, lowest first.
// A FIN held beyond a hole takes the sequence number after its data, and the block
// covers it, as Linux's do: a sender (Linux's tcp_sacktag) counts a segment SACKed only
// when a block covers all of it, FIN included, and one that never hears of its last
// segment cannot find the losses before it (RACK) and waits for its timer.
size_t Tcb::fill_sack_blocks(std::array<wire::SackBlock, 4>& out, size_t k) const {
  const size_t first = k;
  auto add = [&](const SeqRange& g) {
    for (size_t j = first; j < k; ++j)
      if (out[j].left == g.left) return;
    out[k++] = {g.left, ooo_fin && *ooo_fin == g.right ? g.right + 1 : g.right};
  };
  if (ooo_fin) {  // a FIN alone beyond the data held (no block ends at it): its own block
    bool after_data = false;
    for (size_t i = 0; i < ooo.count(); ++i) after_data = after_data || ooo[i].right == *ooo_fin;
    if (!after_data) out[k++] = {*ooo_fin, *ooo_fin + 1};
  }
  for (size_t m = 0; m < sack_recent_n && k < out.size(); ++m) {
    const size_t i = ooo.find(sack_recent[m]);
    if (i < ooo.count()) add(ooo[i]);
  }
  for (size_t i = 0; i < ooo.count() && k < out.size(); ++i) add(ooo[i]);
  return k;
}

// Moving the header fields into a helper cost an instruction per ACK (rx_path_bench).
// long: options, header and payload of one segment, sent for every ACK on the receive path
bool Tcb::emit(SeqNum seq, uint32_t len, uint8_t flags, Instant now, bool syn_opts,
               uint32_t tso_segment) {
  wire::TcpRepr r;
  r.src_port = t.lport;
  r.dst_port = t.rport;
  r.seq = seq;
  r.flags = flags;
  if (flags & kAck) r.ack = rcv_nxt;
  if (syn_opts) {
    // RFC 9293 3.7.1 MSS; RFC 7323 2.2 window scale and 3.2 timestamps; RFC 2018 SACK.
    r.mss = static_cast<uint16_t>(std::min<uint32_t>(our_mss, 65535));
    if (ws_ok) r.wscale = rcv_wscale;
    r.sack_permitted = sack_ok;
    // The window of a SYN is never scaled (RFC 7323 2.2).
    uint32_t w = std::min<uint32_t>(static_cast<uint32_t>(rcvbuf.capacity()), 65535);
    r.window = static_cast<uint16_t>(w);
    rcv_adv = rcv_nxt + w;
  } else {
    r.window = window_field();
  }
  if (ts_ok) {
    r.ts_val = ts_now(now);
    r.ts_ecr = (flags & kAck) ? ts_recent : 0;
  }
  if (sack_ok && !syn_opts && (dsack_pending || !ooo.empty() || ooo_fin) && (flags & kAck)) {
    // RFC 2883 section 4: a D-SACK block first, reporting a duplicate once; then (RFC
    // 2018 section 4) the block holding the most recently received segment.
    size_t k = 0;
    if (dsack_pending) r.sack[k++] = {dsack_left, dsack_right};
    dsack_pending = false;
    k = fill_sack_blocks(r.sack, k);
    r.sack_count = static_cast<uint8_t>(k);
  }
  // No SYN options, no SACK blocks: the header is written inline (emit_tcp_plain); so is
  // a SYN with every option (emit_tcp_syn).
  const bool plain = !syn_opts && r.sack_count == 0;
  const bool syn_all = syn_opts && ws_ok && ts_ok && sack_ok;
  size_t hl = plain     ? kTcpHeaderLen + (ts_ok ? kTimestampOptionLen : 0)
              : syn_all ? kTcpHeaderLen + kSynAllOptionsLen
                        : r.header_len();
  // Options beyond the timestamp take room from the payload so that no datagram
  // exceeds the path MTU (RFC 9293 3.7.1).
  uint32_t base = std::min(pmtu.emit_cap(), peer_mss);
  uint32_t optlen = static_cast<uint32_t>(hl - kTcpHeaderLen);
  // A super-segment's header is copied into every segment it becomes: SACK blocks
  // would shrink the room per segment, so such a segment goes out alone.
  if (tso_segment != 0 && optlen > (ts_ok ? kTimestampOptionLen : 0)) tso_segment = 0;
  const uint32_t asked = len;
  if (tso_segment == 0 && len > 0 && len + optlen > base) len = base > optlen ? base - optlen : 1;
  // A FIN follows the last byte of data: a segment cut short carries none.
  if (len < asked) r.flags = static_cast<uint8_t>(r.flags & ~kFin);
  L4Frame f;
  // Data segments are gathered: the header goes into the frame's first buffer
  // and the payload from the send ring straight into the buffers that carry it
  // (a chain for jumbo frames over small mbufs and for super-segments), summed
  // for the checksum on the way where the port does not offload it.
  const auto hl32 = static_cast<uint32_t>(hl);
  bool ok = tso_segment != 0
                ? stack.out().begin_tso(t.laddr, t.raddr, hl32, hl32 + len, tso_segment, f)
            : len > 0 ? stack.out().begin_gather(t.laddr, t.raddr, 6, hl32, hl32 + len, f)
                      : stack.out().begin(t.laddr, t.raddr, 6, hl32, f);
  if (!ok) {
    ++stack.ctr().output_no_buffer;
    retry_at = now + Duration::millis(1);
    return false;
  }
  if (plain)
    wire::emit_tcp_plain(f.l4.data(), r);
  else if (syn_all)
    wire::emit_tcp_syn(f.l4.data(), r);
  else
    wire::emit_tcp(f.l4.data(), r);
  if (len > 0) {
    TxWriter w = f.writer(hl32);
    size_t off = static_cast<size_t>(seq - snd_buf_seq);
    // The ring hands out at most two runs (before and after its wrap point).
    for (size_t left = len; left > 0;) {
      std::span<const uint8_t> run = sndbuf.contiguous(off, left);
      if (run.empty() || !w.write(run)) break;
      off += run.size();
      left -= run.size();
    }
    if (w.written() != len) {  // the send buffer or the frame fell short: a bug
      stack.out().abort(f);
      return false;
    }
    f.payload_written(hl32, w);
  }
  stack.out().commit(f, now);
  ++stack.ctr().family.segments_out[fam];
  const uint32_t seqlen = len + ((r.flags & kFin) ? 1 : 0);
  if (!(flags & kSyn) && seqlen > 0) on_transmit(seq, seqlen, tso_segment, now);
  if (tso_segment != 0) ++stack.ctr().tso_super_segments;
  if (flags & kAck) {
    ack_pending = false;
    ack_now = false;
    comp_held = 0;
    unacked_bytes = 0;
    delack_at = Instant::never();
    last_ack_sent = rcv_nxt;
  }
  last_emit_len = len;
  return true;
}

void Tcb::send_syn(Instant now) {
  bool synack = state == TcpState::kSynReceived;
  if (!emit(iss, 0, synack ? (kSyn | kAck) : kSyn, now, true)) {
    stack.schedule(this);  // retry_at: output() sends it again
    return;
  }
  if (snd_nxt == iss) {
    snd_nxt = iss + 1;
    snd_max = seq_max(snd_max, snd_nxt);
  }
  if (retries == 0 && !rtt_timing) {
    rtt_timing = true;
    rtt_seq = iss;
    rtt_time = now;
  }
  if (rto_at.is_never()) rto_at = now + rto;
  stack.schedule(this);
}

// Pure ACKs and RSTs carry the highest sequence number sent, not a SND.NXT rolled back
// for retransmission: the peer has possibly received everything up to it, and would
// discard a segment whose sequence number lies below its RCV.NXT (with its ACK).
void Tcb::send_ack(Instant now) {
  if (emit(snd_max, 0, kAck, now)) arm_ack_repeat(now);
}

// While the path shows loss (ack_each_until), a pure ACK is sent again when nothing at
// all arrives for a round trip and a half after it. A sender that got it sends at once
// (new data, or its next retransmission), so that silence most likely means the ACK was
// lost, and the sender waits for a loss probe (two round trips and more, RFC 8985
// section 7.2) or, in recovery or after a timeout, for its retransmission timer (RFC 6298:
// 200 ms at least on Linux, doubled after each). One repeat per silence, with what the
// ACK says then. Where the first got through, the sender sees a duplicate ACK: with SACK
// it counts SACKed bytes, not duplicates (RFC 6675 section 5), and without, fast
// retransmit takes three (RFC 5681 section 3.2). The timer is the delayed ACK's: nothing
// is pending when a pure ACK has just gone out, and the next segment disarms it.
void Tcb::arm_ack_repeat(Instant now) {
  if (now >= ack_each_until || ack_repeat == AckRepeat::kFired || !have_rtt) return;
  if (!receives_data(state)) return;
  constexpr Duration kMinMargin = Duration::millis(1);
  ack_repeat = AckRepeat::kArmed;
  delack_at = now + srtt + std::max(srtt / 2, kMinMargin);
}

// RFC 5681 4.2 and RFC 9293 3.8.6.3 ask for an ACK at least every second full-sized
// segment and within 0.5 s; inside that, the delay is a bet that the next segment (one
// ACK for both) or the application's reply (the ACK rides on it) comes soon. A segment
// that came right behind the one before it is most likely the end of a flight the peer
// sent back to back: were more of it coming, it would follow as closely, and a sender
// whose window is spent sends nothing more until it has this ACK, so tcp.delayed_ack held
// in full would stall it that long each round trip. Such an ACK waits four of those gaps
// and at least kFlightEndDelay, so that a segment of the flight held up on the way still
// shares it; a segment after a longer silence waits tcp.delayed_ack.
Instant Tcb::delack_due(Instant now) const {
  constexpr Duration kFlightEndDelay = Duration::millis(1);
  const Duration full = stack.config().delayed_ack;
  if (rx_gap >= full) return now + full;
  return now + std::min(full, std::max(kFlightEndDelay, rx_gap * 4));
}

// A pure ACK waits for its turn at a transmit queue that is backing up, like data
// (TcpStack::tx_blocked): ack_now stays set and the turn sends one ACK for all that
// arrived meanwhile. Sent regardless, the ACKs of busy receivers filled every slot the
// queue freed (and overflowed it), so the queue never fell below the mark and data held
// there waited for good.
void Tcb::send_ack_when_room(Instant now) {
  if (stack.tx_blocked(*this)) {
    if (!pressured) set_pressured(now);  // re-checked by the timer as well (pressure_at)
    return;
  }
  send_ack(now);
}

void Tcb::send_rst(Instant now) {
  if (emit(snd_max, 0, kRst | kAck, now)) ++stack.ctr().family.resets_sent[fam];
}

void Tcb::send_probe(Instant now) { emit(snd_una - 1, 0, kAck, now); }

void Tcb::set_pressured(Instant now) {
  pressured = true;
  pressure_at = now + Duration::millis(1);
}

// TIME-WAIT and CLOSED send an ACK at most. With nothing owed any more, TIME-WAIT goes on
// as a record (TcpStack::park_time_wait) and the Tcb is free.
static void output_closed(Tcb& c, Instant now) {
  if (c.ack_now) c.send_ack(now);
  if (c.state == TcpState::kTimeWait && !c.ack_now) {
    c.stack.park_time_wait(c);
    return;
  }
  c.stack.schedule(&c);  // an ACK that found no buffer is retried (retry_at)
}

void Tcb::output(Instant now) {
  if (std::exchange(output_queued, false)) stack.conn_output_done(this);  // goes out now
  if (released) return;
  if (state == TcpState::kSynSent || state == TcpState::kSynReceived) {
    output_handshake(*this, now);
    return;
  }
  if (state == TcpState::kTimeWait || state == TcpState::kClosed) {
    output_closed(*this, now);
    return;
  }
  update_pressure(*this, now);
  // Nothing in flight, nothing unsent, no FIN due (a receiver between its ACKs): nothing to
  // send, resend or probe, so only the ACK and the timers; no TSO or window arithmetic.
  if (snd_una == snd_max && snd_nxt == data_end() && !fin_queued) {
    if (ack_now) send_ack_when_room(now);
    if (ack_pending && delack_at.is_never()) delack_at = delack_due(now);
    persist_at = Instant::never();
    tlp_at = Instant::never();  // tlp_rearm() with nothing in flight: no probe
    stack.schedule(this);
    return;
  }
  // Lost segments first (recovery.cpp); with SACK, cwnd is held against the pipe
  // (RFC 6675 SetPipe), which leaves out what is SACKed or deemed lost.
  bool sent = sack_ok && txlog.lost_bytes() > 0 && recovery_output(now);
  bool can_fin = fin_queued && (state == TcpState::kFinWait1 || state == TcpState::kClosing ||
                                state == TcpState::kLastAck);
  uint32_t mps = max_payload(false);
  TsoPlan tso;
  for (;;) {
    SeqNum end = data_end();
    if (snd_nxt < end) {
      // Only with data to send: the pass that finds none (after every reply) needs no pipe.
      const int64_t usable = usable_window(*this);
      uint32_t pending = static_cast<uint32_t>(end - snd_nxt);
      if (usable <= 0) break;
      // The port's transmit queue is backing up: hold data rather than have it dropped at a
      // full ring and sent again; the next poll resumes once frames drain.
      if (stack.tx_blocked(*this)) break;
      // A probe needs more than three segments' worth behind a segment larger than the MSS
      // (mtu_probe): a request's or a response's few bytes never carry one.
      ProbeStep p = pending > 4 * mps ? mtu_probe(pending, usable, now) : ProbeStep::kNone;
      if (p != ProbeStep::kNone) {
        if (p == ProbeStep::kWait) break;  // RFC 4821 probe of a larger size (pmtu.cpp)
        sent = true;
        continue;
      }
      uint32_t avail = static_cast<uint32_t>(std::min<int64_t>(pending, usable));
      uint32_t tso_len = tso.next(*this, avail, mps);
      uint32_t len = tso_len != 0 ? tso_len : std::min(avail, mps);
      bool idle = snd_max == snd_una;
      // Sender SWS avoidance (RFC 9293 3.8.6.2.1): no small segment the window cut,
      // unless nothing is in flight.
      if (len < mps && len < pending && !idle && len < max_snd_wnd / 2) break;
      // Nagle (RFC 896), off by default.
      if (stack.config().nagle && len < mps && !idle) break;
      bool fin = can_fin && len == pending;
      uint8_t flags = kAck | (len == pending ? kPsh : 0) | (fin ? kFin : 0);
      bool rexmit = snd_nxt < snd_max;
      if (!emit(snd_nxt, len, flags, now, false, tso_len != 0 ? tso.seg : 0)) break;
      if (last_emit_len < len) {  // options shortened it
        len = last_emit_len;
        fin = false;
      }
      note_data_sent(*this, end, len, fin, rexmit, now);
      sent = true;
    } else if (can_fin && snd_nxt == end) {
      if (!send_fin(*this, end, now)) break;
      sent = true;
    } else {
      break;
    }
  }
  note_cwnd_use(*this, mps, sent);
  if (ack_now && !sent) send_ack_when_room(now);
  if (ack_pending && delack_at.is_never()) delack_at = delack_due(now);
  arm_persist(*this, mps, now);
  tlp_rearm(now);
  stack.schedule(this);
}

}  // namespace ws::tcp
