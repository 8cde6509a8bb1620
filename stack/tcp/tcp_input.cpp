// Segment arrival, RFC 9293 section 3.10.7 ("SEGMENT ARRIVES"), with the RFC 5961
// protections and RFC 7323 PAWS. Checks are numbered after the RFC's steps.
#include <algorithm>

#include "stack/tcp/mss.hpp"
#include "stack/tcp/paws.hpp"
#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

static void syn_sent_input(Tcb& c, Segment& s, Instant now) {
  TcpStack& st = c.stack;
  // First: the ACK must acknowledge our SYN.
  if (s.has_ack() && (s.ack <= c.iss || s.ack > c.snd_max)) {
    st.drops().add(DropReason::kTcpBadAck);
    st.send_reset_for(c.t, s, now);
    return;
  }
  // Second: RST is acceptable only with an acceptable ACK (RFC 5961 section 3.2).
  if (s.rst()) {
    if (!s.has_ack()) {
      st.drops().add(DropReason::kTcpRstInvalid);
      return;
    }
    ++st.ctr().family.resets_received[c.fam];
    ++st.ctr().connect_failed;
    c.finish(CloseReason::kRefused);
    return;
  }
  if (!s.syn()) {
    st.drops().add(DropReason::kTcpBadFlags);
    return;
  }
  // Fourth: SYN. Options are in force only when both ends sent them.
  c.irs = s.seq;
  c.rcv_nxt = s.seq + 1;
  c.peer_mss = s.opts.mss ? std::max<uint32_t>(*s.opts.mss, 64) : kDefaultPeerMss;
  c.ws_ok = c.ws_ok && s.opts.wscale.has_value();
  if (c.ws_ok) {
    c.snd_wscale = std::min<uint8_t>(*s.opts.wscale, 14);  // RFC 7323 2.3
  } else {
    c.snd_wscale = 0;
    c.rcv_wscale = 0;
  }
  c.ts_ok = c.ts_ok && s.opts.ts_val.has_value();
  if (c.ts_ok) {
    c.ts_recent = *s.opts.ts_val;
    c.ts_recent_time = now;
  }
  c.sack_ok = c.sack_ok && s.opts.sack_permitted;
  c.cc->init(c.max_payload(false));
  // RFC 7323 2.2: the window of a SYN is not scaled.
  c.snd_wnd = s.wnd;
  c.max_snd_wnd = s.wnd;
  c.snd_wl1 = s.seq;
  c.snd_wl2 = s.has_ack() ? s.ack : c.iss;
  if (s.has_ack()) {
    c.snd_una = s.ack;
    if (c.rtt_timing && s.ack > c.rtt_seq) {
      c.rtt_timing = false;
      c.rtt_sample(now - c.rtt_time);
    }
    c.rto_at = Instant::never();
    c.retries = 0;
    c.ack_now = true;
    c.become_established(now);
    return;
  }
  // Simultaneous open (RFC 9293 figure 7): SYN-RECEIVED, send SYN,ACK.
  c.set_state(TcpState::kSynReceived);
  c.rto_at = Instant::never();
  c.send_syn(now);
}

static bool seq_acceptable(const Tcb& c, const Segment& s) {
  const uint32_t rwnd = c.offered_window();
  // RFC 9293 3.10.7.4, first check: the four cases of the acceptability test.
  if (s.len == 0) {
    if (rwnd == 0) return s.seq == c.rcv_nxt;
    return seq_in(s.seq, c.rcv_nxt, c.rcv_nxt + rwnd);
  }
  if (rwnd == 0) return false;
  return seq_in(s.seq, c.rcv_nxt, c.rcv_nxt + rwnd) ||
         seq_in(s.seq + s.len - 1, c.rcv_nxt, c.rcv_nxt + rwnd);
}

// RFC 2883: data that arrived before is reported once in a D-SACK block, so that the
// sender can tell a needless retransmission (and reordering) from a loss.
static void note_duplicate(Tcb& c, SeqNum l, SeqNum r) {
  if (!c.sack_ok || !(l < r)) return;
  c.dsack_pending = true;
  c.dsack_left = l;
  c.dsack_right = r;
  c.ack_now = true;
}

// Data wholly (or, PAWS-rejected, partly) below RCV.NXT: the peer sent again what we hold,
// most often because our ACK was lost and its timer or loss probe fired. It is recovering
// with a few segments in flight, where one ACK for two segments (or one held by SACK
// compression) lost on the way leaves it its timer alone. So the next kQuickAcks segments,
// in order or not, are ACKed at once, as Linux does (tcp_enter_quickack_mode on a
// duplicate; RFC 5681 4.2 allows ACKing more often than every second segment).
static void note_old_data(Tcb& c, SeqNum l, SeqNum r, Instant now) {
  c.note_loss_sign(now);
  note_duplicate(c, l, r);
  c.quickack = std::max(c.quickack, Tcb::kQuickAcks);
  c.ack_now = true;
}

static void challenge_ack(Tcb& c, Instant now) {
  if (c.stack.challenge_ack_allowed(now)) c.ack_now = true;
}

// Inline into its three callers (the full path, the predicted ACK and FIN): out of line it
// cost a call and saved registers on five segments per connection.
[[gnu::always_inline]] static inline void process_ack(Tcb& c, Segment& s, Instant now) {
  // Any acceptable ACK answers the zero-window probes sent so far (RFC 9293 3.8.6.1:
  // the connection stays open as long as the receiver acknowledges the probes).
  c.persist_unanswered = 0;
  const uint32_t sacked_before = c.txlog.sacked_bytes();
  bool dsack = c.sack_ok && s.opts.sack_count > 0 && c.sack_update(s, now);
  bool dupack = false;
  uint32_t acked = 0;
  if (s.ack > c.snd_una) {
    acked = static_cast<uint32_t>(s.ack - c.snd_una);
    c.log_ack(s, now);  // RTT sample, RACK (rack.cpp)
    c.rtt_timing = false;
    int32_t data_acked = s.ack - c.snd_buf_seq;
    if (data_acked > 0) {
      size_t n = std::min<size_t>(static_cast<size_t>(data_acked), c.sndbuf.size());
      c.sndbuf.consume(n);
      c.snd_buf_seq += static_cast<uint32_t>(n);
    }
    c.snd_una = s.ack;
    if (c.snd_nxt < c.snd_una) c.snd_nxt = c.snd_una;
    if (c.high_rxt < c.snd_una) c.high_rxt = c.snd_una;
    c.retries = 0;
    // Inline tests: no probe out and no timeout counted, no undo armed on nearly every ACK.
    if (c.pmtu.probe_out || c.pmtu.black_hole_rtos != 0) c.pmtu_on_ack(now);
    const bool undone = c.undo_eifel && c.detect_spurious(s);
    // RFC 6298 (5.2)/(5.3).
    c.rto_at = c.snd_una == c.snd_max ? Instant::never() : now + c.rto;
    if (undone) {
      // Back to the window of before the false alarm; no growth on this ACK.
    } else if (c.in_recovery) {
      c.on_new_ack_in_recovery(acked, now);
    } else {
      c.dupacks = 0;
      if (c.cwnd_in_use())
        c.cc->on_ack(acked, c.flight(), now, c.have_rtt ? c.srtt : Duration::millis(100));
    }
    c.autotune_send(now);
  } else if (s.ack == c.snd_una && c.snd_max != c.snd_una && s.payload.empty() && !s.syn() &&
             !s.fin() &&
             (static_cast<uint32_t>(s.wnd) << (c.ws_ok ? c.snd_wscale : 0)) == c.snd_wnd) {
    // RFC 5681 section 2: a duplicate ACK.
    dupack = true;
    ++c.dupacks;
  }
  if (c.sack_ok && c.frto == 0 && !c.tlp_out && !c.in_recovery && c.txlog.empty()) {
    // Inline: with no F-RTO step, no probe out, no recovery and nothing left in flight
    // (every ACK of a request/response exchange), after_ack() only clears RACK's timer.
    c.rack.reo_at = Instant::never();
  } else {
    // RFC 6937: DeliveredData = change in SND.UNA + change in SACKed bytes.
    int64_t delivered = static_cast<int64_t>(acked) + c.txlog.sacked_bytes() - sacked_before;
    c.after_ack(acked, static_cast<uint32_t>(std::max<int64_t>(delivered, 0)), dupack, dsack, s,
                now);
  }
  // Fifth check, window update (RFC 9293 3.10.7.4): only from newer segments.
  if (c.snd_wl1 < s.seq || (c.snd_wl1 == s.seq && c.snd_wl2 <= s.ack)) {
    c.snd_wnd = static_cast<uint32_t>(s.wnd) << (c.ws_ok ? c.snd_wscale : 0);
    c.snd_wl1 = s.seq;
    c.snd_wl2 = s.ack;
    c.max_snd_wnd = std::max(c.max_snd_wnd, c.snd_wnd);
    if (c.snd_wnd > 0) {
      c.persist_at = Instant::never();
      c.persist_backoff = 0;
    }
  }
}

// Offers in-order payload to on_data straight from the received buffers while
// nothing is queued ahead of it; returns how many bytes were consumed. Stops at
// the first piece not consumed whole (the application is full), or when a
// callback closed or released the connection.
static size_t deliver_direct(Tcb& c, const PacketView& p, Instant now) {
  size_t consumed = 0;
  bool more = true;
  c.delivering = true;  // a resume_read() from the callback must not reenter
  p.for_each([&](std::span<const uint8_t> piece) {
    if (!more || c.released || c.app_closed) return;
    c.direct_unread = p.size() - consumed;
    size_t n = std::min(c.cb.on_data(c, piece), piece.size());
    consumed += n;
    if (!c.released) c.autotune_on_consume(n, now);
    more = n == piece.size();
  });
  c.delivering = false;
  c.direct_unread = 0;
  return consumed;
}

// In-order bytes behind others already in the ring: appended, then out-of-order data
// that has become contiguous is pulled in.
[[gnu::always_inline]] static inline void buffer_in_order(Tcb& c, const PacketView& p, size_t len) {
  TcpStack& st = c.stack;
  c.rcvbuf.write_at(c.rcvbuf.size(), p);
  c.rcvbuf.commit(len);
  st.ctr().rx_bytes_buffered += len;
  c.rcv_nxt += static_cast<uint32_t>(len);
  c.stat_recv += len;
  // Pull in out-of-order data that is now contiguous.
  c.ooo.trim_below(c.rcv_nxt);
  while (!c.ooo.empty() && c.ooo[0].left == c.rcv_nxt) {
    uint32_t extra = c.ooo[0].len();
    c.rcvbuf.commit(extra);
    c.rcv_nxt += extra;
    c.stat_recv += extra;
    c.ooo.trim_below(c.rcv_nxt);
  }
}

// The out-of-order map holds as many ranges as the receive buffer can hold holes (a
// segment and a hole each, at the largest segment seen), and at most kMaxRanges (16 KiB),
// whatever segments a peer sends into a large buffer.
static size_t ooo_range_limit(const Tcb& c) {
  constexpr size_t kMaxRanges = 2048;
  const size_t seg = std::max<size_t>(c.rcv_mss, 536);
  return std::min(kMaxRanges, c.rcvbuf.capacity() / (2 * seg));
}

// A segment beyond rcv_nxt: its bytes wait in the ring at their offset, recorded in
// the out-of-order list that the SACK blocks report.
[[gnu::always_inline]] static inline void queue_out_of_order(Tcb& c, SeqNum seq,
                                                             const PacketView& p, size_t off,
                                                             size_t len, Instant now) {
  TcpStack& st = c.stack;
  if (c.ooo.covers(seq, seq + static_cast<uint32_t>(len)))
    note_duplicate(c, seq, seq + static_cast<uint32_t>(len));
  const size_t blocks = c.ooo.count();
  if (!c.ooo.insert(seq, seq + static_cast<uint32_t>(len), ooo_range_limit(c))) {
    st.drops().add(DropReason::kTcpReceiveBufferFull);
    c.ack_now = true;
    return;
  }
  c.rcvbuf.write_at(c.rcvbuf.size() + off, p);
  st.ctr().rx_bytes_buffered += len;
  c.note_ooo_segment(seq);
  c.note_loss_sign(now);
  c.ack_out_of_order(c.ooo.count() != blocks, now);
}

// RFC 5681 4.2 asks for an immediate ACK of every out-of-order segment. As Linux does
// (tcp_comp_sack_*), a run of them that only extends a SACK block already reported is
// ACKed less often: the first three duplicate ACKs for a RCV.NXT go at once (what a
// sender counting duplicate ACKs needs), later ones are held for at most RTT/20 and
// 1 ms, and one ACK carries them all (at most kCompSackMax held). An ACK goes at once
// when the blocks change in number (a new hole, or one closed between two blocks), for a
// D-SACK, and when RCV.NXT moves (the in-order path). Without this, a hole open for a
// round trip drew one ACK per segment behind it, each one costing the sender and the
// path as much as a data segment's ACK and telling nothing new but one SACK edge.
// Quick-ACK mode (quickack, note_old_data) comes first, as in Linux's
// __tcp_ack_snd_check: nothing is held while it lasts.
void Tcb::ack_out_of_order(bool blocks_changed, Instant now) {
  constexpr uint8_t kImmediateDupAcks = 3;
  constexpr uint8_t kCompSackMax = 44;
  if (quickack > 0) {
    --quickack;
    ack_now = true;
    return;
  }
  if (comp_rcv_nxt != rcv_nxt) {
    comp_rcv_nxt = rcv_nxt;
    comp_dupacks = 0;
  }
  if (blocks_changed || dsack_pending || !sack_ok || !have_rtt ||
      comp_dupacks < kImmediateDupAcks || comp_held >= kCompSackMax) {
    if (comp_dupacks < kImmediateDupAcks) ++comp_dupacks;
    ack_now = true;
    return;
  }
  ++comp_held;
  ack_pending = true;
  Instant due = now + std::min(srtt / 20, Duration::millis(1));
  if (due < delack_at) delack_at = due;
}

// In-order data: whether its ACK goes at once or may wait (RFC 5681 4.2: at once when a
// hole is filled, and for the next segment after it; otherwise at least every second
// full-sized segment, and at once during quick-ACK).
// While the receive buffer grows and no loss is about, the sender is most likely in slow
// start: a delayed ACK of a flight's odd last segment would reach it a millisecond after
// the rest, which a Linux sender's HyStart reads as the ACK train of a full path, and it
// leaves slow start early. So each segment is ACKed, as Linux's receiver does while its
// window opens (tcp_grow_window's quick-ACK); in a receive burst that is one ACK at its end
// (TcpStack::input). With loss about, in-order data is not coalesced per burst
// (ack_each_until), and one ACK per segment there would only add duplicate ACKs on a
// reordering path.
static void ack_in_order(Tcb& c, size_t len, bool had_ooo, Instant now) {
  c.unacked_bytes += static_cast<uint32_t>(len);
  if (had_ooo) c.quickack = std::max<uint32_t>(c.quickack, 2);
  if (c.quickack > 0 || c.unacked_bytes >= 2 * c.rcv_mss ||
      (now < c.rcv_growing_until && now >= c.ack_each_until)) {
    if (c.quickack > 0) --c.quickack;
    c.ack_now = true;
  } else {
    c.ack_pending = true;
  }
}

static void receive_data(Tcb& c, Segment& s, Instant now) {
  TcpStack& st = c.stack;
  SeqNum seq = s.seq;
  PacketView p = s.payload;
  if (s.syn()) seq = seq + 1;
  if (seq < c.rcv_nxt) {
    uint32_t off = static_cast<uint32_t>(c.rcv_nxt - seq);
    if (off >= p.size()) {
      note_old_data(c, seq, seq + static_cast<uint32_t>(p.size()), now);
      return;
    }
    note_duplicate(c, seq, c.rcv_nxt);
    p = p.tail(off);
    seq = c.rcv_nxt;
  }
  // Held bytes (rx_held.hpp) take window space like the ring's.
  size_t room = c.rcvbuf.capacity() - std::min(c.rcv_queued(), c.rcvbuf.capacity());
  size_t off = static_cast<size_t>(seq - c.rcv_nxt);
  if (off >= room) {
    st.drops().add(DropReason::kTcpReceiveBufferFull);
    c.ack_now = true;
    return;
  }
  size_t len = std::min(p.size(), room - off);
  p = p.first(len);
  c.rcv_mss = std::max<uint32_t>(c.rcv_mss, static_cast<uint32_t>(s.payload.size()));
  if (off == 0) {
    bool had_ooo = !c.ooo.empty();
    ack_in_order(c, len, had_ooo, now);
    // Nothing queued ahead of these bytes: the application reads them where they
    // arrived. What it leaves is kept in the received buffers when their owner
    // allows (rx_held.hpp), else copied into the ring (the window accounts for
    // both, so consumed bytes never close it), and offered again by deliver() at
    // the end of this input.
    size_t direct = 0;
    if (!had_ooo && c.rcv_queued() == 0 && c.cb.on_data && !c.app_closed && !c.delivering) {
      c.rcv_nxt += static_cast<uint32_t>(len);
      c.stat_recv += len;
      direct = deliver_direct(c, p, now);
      st.ctr().rx_bytes_direct += direct;
      if (c.released) return;
      size_t rest = len - direct;
      if (rest == 0) return;
      if (c.hold_rx(p.tail(direct))) {
        st.ctr().rx_bytes_held += rest;
        return;
      }
      c.rcvbuf.write_at(0, p.tail(direct));
      c.rcvbuf.commit(rest);
      st.ctr().rx_bytes_buffered += rest;
      return;
    }
    // Behind bytes already held (and with nothing copied or out of order): held too.
    if (!had_ooo && c.hold_rx(p)) {
      st.ctr().rx_bytes_held += len;
      c.rcv_nxt += static_cast<uint32_t>(len);
      c.stat_recv += len;
      return;
    }
    buffer_in_order(c, p, len);
  } else {
    queue_out_of_order(c, seq, p, off, len, now);
  }
}

static void process_fin(Tcb& c, Instant now) {
  c.rcv_nxt += 1;
  c.fin_received = true;
  c.ooo_fin.reset();
  c.ack_now = true;
  // The bytes before the FIN first. With none queued, deliver() would only look at the
  // window, for an ACK that goes out already.
  if (c.rcv_queued() != 0) {
    c.deliver(now);
    if (c.released) return;
  }
  // RFC 9293 3.10.7.4, eighth: the state changes before the application hears of the
  // FIN, so that a shutdown from on_peer_closed goes CLOSE_WAIT -> LAST_ACK.
  bool to_time_wait = false;
  switch (c.state) {
    case TcpState::kSynReceived:
    case TcpState::kEstablished:
      c.set_state(TcpState::kCloseWait);
      break;
    case TcpState::kFinWait1:
      if (c.fin_acked())
        to_time_wait = true;
      else
        c.set_state(TcpState::kClosing);  // simultaneous close
      break;
    case TcpState::kFinWait2:
      to_time_wait = true;
      break;
    case TcpState::kTimeWait:
      c.tw_at = now + c.stack.config().time_wait;
      break;
    default:
      break;
  }
  if (c.app_visible && !c.peer_fin_notified) {
    c.peer_fin_notified = true;
    if (c.cb.on_peer_closed) c.cb.on_peer_closed(c);
    if (c.released) return;
  }
  if (to_time_wait) c.enter_time_wait(now);
}

// The end of every input: queued data to the application, then the writer woken when the
// send buffer has room again.
// With nothing queued (on_data took every byte where it arrived, or close() discards
// them), deliver() would only check the window, which `window_check` false leaves to the
// caller.
[[gnu::always_inline]] static inline void deliver_and_wake(Tcb& c, Instant now,
                                                           bool window_check = true) {
  if (c.rcv_queued() != 0) {
    c.deliver(now);
    if (c.released) return;
  } else if (window_check && !c.delivering) {
    c.note_window_opened();
  }
  if (c.want_writable && c.cb.on_writable &&
      c.send_space() >= std::max<size_t>(c.snd_buf_limit / 4, 1)) {
    c.want_writable = false;
    c.cb.on_writable(c);
  }
}

// Every acceptable segment. One after a silence longer than the RTO is most likely the
// peer's retransmission after its timer fired, and the peer restarts from a window of one
// segment, which a delayed ACK would hold for tcp.delayed_ack each round trip of its slow
// start: the next segments are ACKed at once, as Linux does (tcp_event_data_recv). Its
// timer fired because a flight or its ACKs were lost: a sign of loss on the path, so its
// slow-start flights, often whole in one receive burst, draw an ACK for every second
// segment, not one for the burst that, lost, would leave it its timer again.
static void note_arrival(Tcb& c, Instant now) {
  if (now - c.last_rx > c.rto) {
    c.quickack = std::max(c.quickack, Tcb::kQuickAcks);
    c.note_loss_sign(now);
  }
  c.rx_gap = now - c.last_rx;
  c.last_rx = now;
  if (c.ack_repeat == Tcb::AckRepeat::kArmed) c.delack_at = Instant::never();
  c.ack_repeat = Tcb::AckRepeat::kIdle;
}

// Header prediction (RFC 9293 3.10.7.4, after Van Jacobson's): the next in-order data
// segment of an established connection with nothing in recovery, with no SACK blocks and a
// timestamp no older than TS.Recent, acknowledging either nothing new with nothing in
// flight and the window unchanged, or everything in flight (a request that acknowledges
// the last response). The latter's window may have moved, and process_ack() takes it: the
// first response after the handshake carries the scaled window that follows the SYN,ACK's
// unscaled one, and a receiver's SWS avoidance (RFC 9293 3.8.6.2.2) holds its right edge
// while the left one advances by each response it takes. Every check of the full path
// before the ACK passes for it: the sequence number is RCV.NXT in an open window, PAWS
// passes, no RST or SYN (a FIN only as below), and an ACK of SND.MAX is acceptable
// (RFC 5961 section 5.2).
enum class Prediction : uint8_t { kNone, kData, kDataAck, kFin };

// A FIN without data, in order, acknowledging everything in flight, in ESTABLISHED or
// FIN-WAIT-1/2 (the close of a request/response exchange, on either side), is predicted
// as well: the same checks pass for it (its one unit of sequence space lies in the open
// window), and the ACK, the FIN-WAIT steps and the FIN are processed as on the full path.
static bool fin_predictable(const Tcb& c, const Segment& s) {
  using namespace wire::tcpflag;
  return (s.flags & ~kPsh) == (kAck | kFin) && s.payload.empty() && receives_data(c.state);
}

static Prediction predict(const Tcb& c, const Segment& s) {
  using namespace wire::tcpflag;
  const bool fin = (s.flags & ~kPsh) != kAck;
  if (fin ? !fin_predictable(c, s) : c.state != TcpState::kEstablished) return Prediction::kNone;
  if (s.seq != c.rcv_nxt || s.ack != c.snd_max) return Prediction::kNone;
  if ((s.payload.empty() && !fin) || s.opts.sack_count != 0 || !c.ooo.empty() || c.ooo_fin)
    return Prediction::kNone;
  if (c.in_recovery || c.frto != 0 || c.tlp_out || c.rcv_adv - c.rcv_nxt <= 0)
    return Prediction::kNone;
  if (c.ts_ok && !(s.opts.ts_val && static_cast<int32_t>(*s.opts.ts_val - c.ts_recent) >= 0))
    return Prediction::kNone;
  if (fin) return Prediction::kFin;
  if (s.ack != c.snd_una) return Prediction::kDataAck;
  // Acknowledging nothing new, input_predicted() updates no window: it must be the same.
  if ((static_cast<uint32_t>(s.wnd) << (c.ws_ok ? c.snd_wscale : 0)) != c.snd_wnd)
    return Prediction::kNone;
  return Prediction::kData;
}

// The clocks and the timestamp of a predicted segment (note_ts_recent without the PAWS
// comparison, which predict() made). Inline: three segments per connection come this way.
[[gnu::always_inline]] static inline void note_predicted_arrival(Tcb& c, const Segment& s,
                                                                 Instant now) {
  note_arrival(c, now);
  c.keepalive_sent = 0;
  const TcpConfig& cfg = c.stack.config();
  if (c.keepalive_at != Instant::never() || cfg.keepalive)
    c.keepalive_at = cfg.keepalive ? now + cfg.keepalive_idle : Instant::never();
  if (c.ts_ok && s.seq <= c.last_ack_sent) {
    c.ts_recent = *s.opts.ts_val;
    c.ts_recent_time = now;
  }
  ++c.stack.ctr().rx_predicted;
}

// Acknowledging nothing new, the ACK processing changes nothing: only the clocks, the
// timestamp and the data are handled.
void Tcb::input_predicted(Segment& s, Instant now) {
  note_predicted_arrival(*this, s, now);
  // The window update of the fifth check, with the same window.
  if (snd_wl1 < s.seq || (snd_wl1 == s.seq && snd_wl2 <= s.ack)) {
    snd_wl1 = s.seq;
    snd_wl2 = s.ack;
    if (snd_wnd > 0) {
      persist_at = Instant::never();
      persist_backoff = 0;
    }
  }
  receive_data(*this, s, now);
  if (released) return;
  deliver_and_wake(*this, now, false);  // the window: see input()
}

// Acknowledging everything in flight, the ACK is processed in full (process_ack: the RTT
// sample, RACK, congestion control, the window update), then the data; the window check
// and the output follow as on the full path.
void Tcb::input_predicted_ack(Segment& s, Instant now) {
  note_predicted_arrival(*this, s, now);
  process_ack(*this, s, now);
  if (released) return;
  receive_data(*this, s, now);
  if (released) return;
  deliver_and_wake(*this, now);
}

// The ACK that answers an unacceptable segment (RFC 9293 3.10.7.4, RFC 7323 5.3 R1),
// throttled for segments without sequence space (UnacceptableReplyLimit).
static void reply_unacceptable(Tcb& c, const Segment& s, Instant now) {
  if (c.unacceptable_replies.allow(s.len, now))
    c.ack_now = true;
  else
    ++c.stack.ctr().unacceptable_acks_limited;
}

// First check failed (RFC 9293 3.10.7.4): the segment is outside the window. It is
// dropped, and answered with an ACK unless it is a RST.
[[gnu::always_inline]] static inline void out_of_window(Tcb& c, const Segment& s, Instant now) {
  TcpStack& st = c.stack;
  st.drops().add(DropReason::kTcpOutOfWindow);
  if (!s.rst()) reply_unacceptable(c, s, now);
  // The D-SACK block covers the whole segment, a FIN included (as the SACK blocks do).
  if (!s.payload.empty() && s.seq + s.len <= c.rcv_nxt) note_old_data(c, s.seq, s.seq + s.len, now);
  // RFC 9293 3.10.7.4 (TIME-WAIT): a retransmitted FIN is acknowledged and restarts
  // the 2 MSL timeout.
  if (c.state == TcpState::kTimeWait && s.fin() && !s.rst()) {
    c.tw_at = now + st.config().time_wait;
    st.schedule(&c);
  }
  // A probe into a closed window: offer what is queued again, as any arrival
  // does ("offered again when more data arrives", api.hpp), or an application
  // that reads part of each offer could sit on a full buffer for ever.
  if (!s.payload.empty() && c.rcv_queued() > 0) c.deliver(now);
}

// Second check: RST (RFC 5961 section 3.2: exact match resets, in-window challenges).
[[gnu::always_inline]] static inline void rst_input(Tcb& c, const Segment& s, Instant now) {
  TcpStack& st = c.stack;
  // RFC 1337 (TIME-WAIT assassination, hazard H1): a RST does not end TIME-WAIT
  // early, or old duplicates could reach the tuple's next connection.
  if (c.state == TcpState::kTimeWait) {
    st.drops().add(DropReason::kTcpTimeWaitRst);
    return;
  }
  if (s.seq == c.rcv_nxt) {
    ++st.ctr().family.resets_received[c.fam];
    // NOLINTNEXTLINE(bugprone-branch-clone): two reasons to release, each with its comment
    if (c.state == TcpState::kSynReceived && c.passive) {
      st.release(&c);  // back to LISTEN: the half-open connection goes away
    } else {
      c.finish(CloseReason::kReset);
    }
  } else {
    st.drops().add(DropReason::kTcpRstInvalid);
    challenge_ack(c, now);
  }
}

// The ACK that completes the handshake in SYN-RECEIVED (RFC 9293 3.10.7.4, fifth
// check): acceptable only for our SYN. False when input() must stop here.
[[gnu::always_inline]] static inline bool syn_received_ack(Tcb& c, const Segment& s, Instant now) {
  TcpStack& st = c.stack;
  if (!(c.snd_una < s.ack && s.ack <= c.snd_max)) {
    st.drops().add(DropReason::kTcpBadAck);
    st.send_reset_for(c.t, s, now);
    return false;
  }
  c.snd_wnd = static_cast<uint32_t>(s.wnd) << (c.ws_ok ? c.snd_wscale : 0);
  c.max_snd_wnd = std::max(c.max_snd_wnd, c.snd_wnd);
  c.snd_wl1 = s.seq;
  c.snd_wl2 = s.ack;
  c.rto_at = Instant::never();
  bool fin_pending = c.fin_queued;
  c.fin_queued = false;  // become_established handles a queued shutdown itself
  c.become_established(now);
  if (c.released) return false;
  if (fin_pending) {
    c.fin_queued = true;
    if (c.state == TcpState::kEstablished) c.set_state(TcpState::kFinWait1);
  }
  return true;
}

// The states that wait for our FIN to be acknowledged move on when it is (RFC 9293
// 3.10.7.4, fifth check). False when the connection is done with input.
[[gnu::always_inline]] static inline bool fin_acked_step(Tcb& c, Instant now) {
  TcpStack& st = c.stack;
  switch (c.state) {
    case TcpState::kFinWait1:
      if (c.fin_acked()) {
        c.set_state(TcpState::kFinWait2);
        // An orphaned FIN-WAIT-2 does not wait forever (cf. Linux tcp_fin_timeout).
        if (c.app_closed) c.tw_at = now + st.config().time_wait;
      }
      break;
    case TcpState::kClosing:
      if (c.fin_acked()) {
        c.enter_time_wait(now);
        return false;
      }
      break;
    case TcpState::kLastAck:
      if (c.fin_acked()) {
        c.finish(CloseReason::kNormal);
        return false;
      }
      break;
    default:
      break;
  }
  return true;
}

// Eighth check (RFC 9293 3.10.7.4): a FIN, processed once every byte before it has
// arrived; one beyond a hole waits (ooo_fin) and is ACKed at once as any out-of-order
// segment (RFC 5681 4.2), its SACK block telling the sender it arrived.
[[gnu::always_inline]] static inline void fin_step(Tcb& c, const Segment& s, Instant now) {
  if (s.fin()) {
    SeqNum fseq = s.seq + static_cast<uint32_t>(s.payload.size());
    if (fseq == c.rcv_nxt) {
      process_fin(c, now);
    } else if (fseq > c.rcv_nxt) {
      c.ooo_fin = fseq;
      c.ack_now = true;
    }
  } else if (c.ooo_fin && *c.ooo_fin == c.rcv_nxt) {
    process_fin(c, now);
  }
}

// RFC 7323 4.3: remember the timestamp of the segment that the next ACK covers.
[[gnu::always_inline]] static inline void note_ts_recent(Tcb& c, const Segment& s, Instant now) {
  if (c.ts_ok && s.opts.ts_val && s.seq <= c.last_ack_sent &&
      static_cast<int32_t>(*s.opts.ts_val - c.ts_recent) >= 0) {
    c.ts_recent = *s.opts.ts_val;
    c.ts_recent_time = now;
  }
}

// RFC 5961 section 5.2: acceptable ACKs lie in [SND.UNA - MAX.SND.WND, SND.NXT]; any
// other is dropped and answered with a challenge ACK.
[[gnu::always_inline]] static inline bool ack_acceptable(Tcb& c, const Segment& s, Instant now) {
  if (s.ack > c.snd_max || s.ack < c.snd_una - std::max<uint32_t>(c.max_snd_wnd, 1)) {
    c.stack.drops().add(DropReason::kTcpBadAck);
    challenge_ack(c, now);
    return false;
  }
  return true;
}

// A predicted FIN (fin_predictable): the ACK in full, then the steps of the full path
// after it, the FIN-WAIT states' (fifth check) and the FIN's (eighth).
void Tcb::input_predicted_fin(Segment& s, Instant now) {
  note_predicted_arrival(*this, s, now);
  process_ack(*this, s, now);
  if (released || !fin_acked_step(*this, now)) return;
  process_fin(*this, now);
  if (released) return;
  deliver_and_wake(*this, now);
}

bool Tcb::input(Segment& s, Instant now) {
  switch (predict(*this, s)) {
    case Prediction::kData:
      input_predicted(s, now);
      return true;
    case Prediction::kDataAck:
      input_predicted_ack(s, now);
      return false;  // output now, as on the full path
    case Prediction::kFin:
      input_predicted_fin(s, now);
      return false;
    case Prediction::kNone:
      break;
  }
  input_general(s, now);
  return false;
}

// A PAWS-old segment of new data that paws_spares_reordered() lets through, counted.
static bool paws_spares(Tcb& c, const Segment& s) {
  if (s.payload.empty() || s.seq < c.rcv_nxt) return false;
  if (!paws_spares_reordered(*s.opts.ts_val, c.ts_recent, c.stat_recv, c.offered_window()))
    return false;
  ++c.stack.ctr().paws_reordered_accepted;
  return true;
}

void Tcb::input_general(Segment& s, Instant now) {
  TcpStack& st = stack;
  if (state == TcpState::kSynSent) {
    syn_sent_input(*this, s, now);
    return;
  }
  if (state == TcpState::kClosed) return;

  // RFC 7323 5.3 R1: PAWS rejects segments with an older timestamp, new data held back by
  // reordering apart (paws_spares_reordered).
  if (ts_ok && s.opts.ts_val && !s.rst() && paws_old(*s.opts.ts_val, ts_recent) &&
      now - ts_recent_time < kPawsIdle && !paws_spares(*this, s)) {
    st.drops().add(DropReason::kTcpPawsRejected);
    // The rejected copy of data we hold is still a duplicate (RFC 2883 section 4): the
    // original overtook its retransmission, and without the D-SACK the sender never
    // learns that its reduction was needless (Linux tcp_send_dupack does the same).
    if (!s.payload.empty() && s.seq < rcv_nxt)
      note_old_data(*this, s.seq, seq_min(s.seq + static_cast<uint32_t>(s.payload.size()), rcv_nxt),
                    now);
    reply_unacceptable(*this, s, now);
    return;
  }
  // A retransmitted SYN while in SYN-RECEIVED: our SYN,ACK was lost; send it again.
  if (state == TcpState::kSynReceived && s.syn() && !s.has_ack() && s.seq == irs) {
    send_syn(now);
    return;
  }
  // First check: sequence number.
  if (!seq_acceptable(*this, s)) {
    out_of_window(*this, s, now);
    return;
  }
  note_arrival(*this, now);
  keepalive_sent = 0;
  if (keepalive_at != Instant::never() || st.config().keepalive)
    keepalive_at = st.config().keepalive ? now + st.config().keepalive_idle : Instant::never();
  note_ts_recent(*this, s, now);
  // Second check: RST (RFC 5961 section 3.2: exact match resets, in-window challenges).
  if (s.rst()) {
    rst_input(*this, s, now);
    return;
  }
  // Fourth check: SYN in a synchronized state (RFC 5961 section 4.2): challenge ACK.
  if (s.syn()) {
    st.drops().add(DropReason::kTcpBadFlags);
    challenge_ack(*this, now);
    return;
  }
  // Fifth check: ACK.
  if (!s.has_ack()) {
    st.drops().add(DropReason::kTcpBadFlags);
    return;
  }
  if (state == TcpState::kSynReceived) {
    if (!syn_received_ack(*this, s, now)) return;
  }
  if (!ack_acceptable(*this, s, now)) return;
  process_ack(*this, s, now);
  if (released) return;
  if (!fin_acked_step(*this, now)) return;
  // Seventh: segment text.
  const bool can_receive = receives_data(state);
  if (!s.payload.empty() && can_receive) {
    receive_data(*this, s, now);
    if (released) return;  // on_data closed or aborted the connection
  }
  if (can_receive) fin_step(*this, s, now);
  if (released) return;
  deliver_and_wake(*this, now);
}

}  // namespace ws::tcp
