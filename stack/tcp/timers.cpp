// Timers: retransmission (RFC 6298), delayed ACK (RFC 1122 4.2.3.2, RFC 5681 4.2),
// persist (RFC 9293 3.8.6.1), keepalive (RFC 1122 4.2.3.6), TIME_WAIT (RFC 9293 3.6).
#include <algorithm>

#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

static void on_rto(Tcb& c, Instant now) {
  TcpStack& st = c.stack;
  const auto& cfg = st.config();
  c.rto_at = Instant::never();
  if (c.state == TcpState::kSynSent || c.state == TcpState::kSynReceived) {
    if (++c.retries > cfg.max_syn_retries) {
      if (c.state == TcpState::kSynSent) ++st.ctr().connect_failed;
      c.finish(CloseReason::kTimeout);
      return;
    }
    // RFC 6298 (5.5) backoff; Karn: the SYN is no longer timed (see (5.7) in
    // become_established).
    c.rto = std::min(c.rto * 2, cfg.rto_max);
    c.rtt_timing = false;
    c.syn_retransmitted = true;
    ++c.stat_retrans;
    ++st.ctr().retransmits;
    c.send_syn(now);
    return;
  }
  if (c.snd_max == c.snd_una) return;
  if (++c.retries > cfg.max_retries) {
    c.send_rst(now);
    c.finish(CloseReason::kTimeout);
    return;
  }
  ++st.ctr().rto_fired;
  st.count_recovery(RecoveryKind::kRto);
  c.pmtu_on_rto(now);  // black-hole detection, probe loss (pmtu.cpp)
  c.tlp_out = false;
  c.tlp_at = Instant::never();
  if (c.sack_ok) {
    // Keep the scoreboard (as Linux does): what was SACKed is not sent again; the
    // segments the timeout shows lost are resent by slow start (recovery.cpp).
    c.enter_rto_recovery(now);
  } else {
    // Go back to SND.UNA (RFC 5681 section 3.1).
    c.snd_nxt = c.snd_una;
    c.in_recovery = false;
    c.recover = c.snd_max;  // RFC 6582 section 4: no fast retransmit from old dupacks
    c.high_rxt = c.snd_una;
  }
  // RFC 5681 (4): ssthresh from the flight size on the first timeout only.
  if (c.retries == 1)
    c.cc->on_rto(c.flight(), now);
  else
    c.cc->set_cwnd(c.max_payload(false));
  c.rto = std::min(c.rto * 2, cfg.rto_max);  // RFC 6298 (5.5)
  c.dupacks = 0;
  c.rtt_timing = false;
  // (5.4) retransmit the earliest segment whatever the pipe says, (5.6) restart the timer.
  if (c.sack_ok && !c.txlog.empty() && c.txlog[0].has(TxSeg::kLost)) c.retransmit_entry(0, now);
  c.output(now);
  c.arm_rto(now);
}

// The delayed ACK's timer, or the repeat of an ACK that silence followed (arm_ack_repeat,
// tcp_output.cpp), which has it while nothing is pending.
static void on_delack(Tcb& c) {
  c.delack_at = Instant::never();
  if (c.ack_pending) {
    c.ack_now = true;
  } else if (c.ack_repeat == Tcb::AckRepeat::kArmed) {
    c.ack_repeat = Tcb::AckRepeat::kFired;
    c.ack_now = true;
    ++c.stack.ctr().acks_repeated;
  }
}

void Tcb::on_timers(Instant now) {
  const auto& cfg = stack.config();
  if (now >= pmtu.raise_at) pmtu_timer(now);  // first: it clears itself in every state
  if (state == TcpState::kTimeWait) {
    if (now >= tw_at) {
      stack.release(this);
      return;
    }
    // TIME_WAIT's only other timer: the ACK of the peer's FIN found no transmit buffer
    // (emit's retry). Left due, this connection's next deadline would stay in the past.
    if (now >= retry_at) {
      retry_at = Instant::never();
      output(now);
    }
    return;
  }
  if (state == TcpState::kFinWait2 && now >= tw_at) {
    finish(CloseReason::kNormal);
    return;
  }
  // A due probe goes first: it restarts the retransmission timer (RFC 8985 section 7.3).
  if (now >= tlp_at) tlp_fire(now);
  if (now >= rto_at) {
    on_rto(*this, now);
    if (released) return;
  }
  bool recovery_due = false;
  if (now >= rack.reo_at) {
    // RACK's reordering window has passed for some segment (RFC 8985 section 6.2).
    rack_check(now);
    recovery_due = true;
  }
  if (now >= delack_at) on_delack(*this);
  bool probed = false;
  if (now >= persist_at) {
    // RFC 9293 3.8.6.1 lets a closed window last as long as the receiver acknowledges
    // the probes; a receiver that has gone silent would hold the connection (and the
    // data queued behind the window) forever. Give up as a retransmission timeout does
    // (max_retries unanswered probes; Linux's tcp_retries2 for probes alike).
    if (++persist_unanswered > cfg.max_retries) {
      send_rst(now);
      finish(CloseReason::kTimeout);
      return;
    }
    probed = true;  // output() re-arms the persist timer with the next backoff
    persist_at = Instant::never();
    ++persist_backoff;
    ++stack.ctr().zero_window_probes;
    send_probe(now);
  }
  if (now >= keepalive_at) {
    bool idle = snd_max == snd_una && data_end() == snd_nxt;
    if (!idle || !(state == TcpState::kEstablished || state == TcpState::kCloseWait)) {
      keepalive_at = now + cfg.keepalive_idle;
    } else if (keepalive_sent >= cfg.keepalive_probes) {
      send_rst(now);
      finish(CloseReason::kKeepalive);
      return;
    } else {
      ++keepalive_sent;
      ++stack.ctr().keepalive_probes;
      send_probe(now);
      keepalive_at = now + cfg.keepalive_interval;
    }
  }
  bool retry = now >= retry_at;
  if (retry) retry_at = Instant::never();
  // Scans visit every connection when any deadline is due: only build output for
  // those that need it.
  const bool pressure_due = now >= pressure_at;
  if (pressure_due) pressure_at = Instant::never();
  if (!(ack_now || retry || pressure_due || probed || recovery_due)) return;
  resume_output(now);
}

void Tcb::resume_output(Instant now) {
  bool was_pressured = pressured;
  output(now);
  if (released) return;
  if (was_pressured && !pressured && want_writable && cb.on_writable) {
    want_writable = false;
    cb.on_writable(*this);
    // What the writer queued goes out in this turn, not behind every other waiter.
    if (!released) output(now);
  }
}

}  // namespace ws::tcp
