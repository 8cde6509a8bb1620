// RACK-TLP (RFC 8985): loss detection by time, and tail loss probes. A segment is lost
// when one sent after it has been delivered and it has been outstanding for longer
// than the RTT plus a reordering window; the window adapts to the reordering the
// connection sees (D-SACK). With SACK this replaces the duplicate-ACK threshold
// (as Linux does), so lost retransmissions are found too, by the same rule. The probe
// timeout's rearm after every output() is inline (Tcb::tlp_rearm, tcb.hpp).
#include <algorithm>

#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

namespace {
constexpr uint32_t kDupThresh = 3;
constexpr uint32_t kReoWndPersist = 16;

// RACK_sent_after (RFC 8985 section 6.2): the transmission order, ties broken by
// sequence (segments of one burst share a timestamp).
bool sent_after(Instant t1, SeqNum s1, Instant t2, SeqNum s2) {
  return t1 > t2 || (t1 == t2 && s1 > s2);
}

// RFC 8985 section 6.2 steps 1-3, for each segment newly SACKed or acknowledged. Inline into
// log_ack(): every ACK that advances SND.UNA passes each segment it covers through it.
[[gnu::always_inline]] inline void rack_delivered(Tcb& c, const TxSeg& g, const Segment& s,
                                                  Instant now) {
  Tcb::Rack& rack = c.rack;
  Duration rtt = now - g.xmit;
  if (g.has(TxSeg::kRetrans)) {
    // The ACK may be for an earlier transmission: unusable if it came too soon, or if
    // the echoed timestamp predates this transmission.
    if (rtt < rack.min_rtt) return;
    if (c.ts_ok && s.opts.ts_val && static_cast<int32_t>(s.opts.ts_ecr - c.ts_now(g.xmit)) < 0)
      return;
  }
  rack.rtt = rtt;
  rack.min_rtt = std::min(rack.min_rtt, rtt);
  if (!rack.valid || sent_after(g.xmit, g.end(), rack.xmit, rack.end)) {
    rack.xmit = g.xmit;
    rack.end = g.end();
    rack.valid = true;
  }
  // Step 3: a never-retransmitted segment delivered below the highest one delivered
  // was reordered.
  if (!g.has(TxSeg::kRetrans) && g.end() < rack.fack)
    rack.reordering_seen = true;
  else if (g.end() > rack.fack)
    rack.fack = g.end();
}
}  // namespace

void Tcb::rack_on_delivered(const TxSeg& g, const Segment& s, Instant now) {
  rack_delivered(*this, g, s, now);
}

// Here, beside rack_delivered(), which it inlines.
void Tcb::log_ack(const Segment& s, Instant now) {
  bool any = false, retransmitted = false;
  Instant oldest;
  txlog.ack(s.ack, [&](const TxSeg& g) {
    rack_delivered(*this, g, s, now);
    if (!any) oldest = g.xmit;
    any = true;
    retransmitted |= g.has(TxSeg::kRetrans);
  });
  if (rexmit_high < s.ack) rexmit_high = s.ack;
  // RFC 6298 (2), one sample per ACK: with Karn's rule from the oldest segment it
  // covers; when a retransmission is among them, from the echoed timestamp, which names
  // the transmission (RFC 7323 section 4).
  if (any && !retransmitted) {
    rtt_sample(now - oldest);
  } else if (any && ts_ok && s.opts.ts_val && s.opts.ts_ecr != 0) {
    int32_t ms = static_cast<int32_t>(ts_now(now) - s.opts.ts_ecr);
    if (ms >= 0) rtt_sample(Duration::millis(ms));
  } else if (!any && rtt_timing && s.ack > rtt_seq) {
    rtt_sample(now - rtt_time);  // the SYN, which is not logged
  }
  // A SACKed segment at SND.UNA: the receiver dropped what it had SACKed (RFC 2018
  // section 8). The scoreboard is forgotten; the timer resends what is missing.
  if (!txlog.empty() && txlog[0].has(TxSeg::kSacked)) txlog.forget_sacks();
}

// Step 4: a D-SACK widens the window, at most once per round trip; it stays wide for
// 16 recoveries (RFC 8985 section 6.2, "Step 4").
void Tcb::rack_on_dsack() {
  rack.reordering_seen = true;
  if (rack.dsack_round_on && snd_una < rack.dsack_round) return;
  rack.dsack_round_on = true;
  rack.dsack_round = snd_max;
  rack.reo_wnd_mult = std::min<uint32_t>(rack.reo_wnd_mult + 1, 64);
  rack.reo_wnd_persist = kReoWndPersist;
}

Duration Tcb::rack_reo_wnd() const {
  if (!rack.reordering_seen &&
      (in_recovery || txlog.sacked_bytes() >= kDupThresh * max_payload(false)))
    return Duration::zero();
  if (rack.min_rtt == Duration::max()) return Duration::zero();
  Duration w = rack.min_rtt / 4 * rack.reo_wnd_mult;
  return have_rtt ? std::min(w, srtt) : w;
}

// Step 5. The log is in sequence order; segments never retransmitted were sent in
// that order, so past the highest retransmission the first one sent after RACK.xmit
// ends the scan.
bool Tcb::rack_detect_loss(Instant now) {
  rack.reo_at = Instant::never();
  // Nothing in flight (every ACK of a request/response exchange): nothing to judge.
  if (!sack_ok || !rack.valid || txlog.empty()) return false;
  const Duration reo = rack_reo_wnd();
  Duration wait = Duration::zero();
  bool newly = false;
  for (size_t i = 0; i < txlog.size(); ++i) {
    const TxSeg& g = txlog[i];
    if (g.has(TxSeg::kSacked) || g.has(TxSeg::kLost)) continue;
    if (!sent_after(rack.xmit, rack.end, g.xmit, g.end())) {
      if (!g.has(TxSeg::kRetrans) && g.seq >= rexmit_high) break;
      continue;
    }
    Duration remaining = (g.xmit + rack.rtt + reo) - now;
    if (remaining <= Duration::zero()) {
      txlog.set_lost(i, true);
      newly = true;
    } else {
      wait = std::max(wait, remaining);
    }
  }
  if (wait > Duration::zero()) rack.reo_at = now + wait;
  return newly;
}

// RFC 8985 section 7.3: send one new segment if the receive window allows, else
// retransmit the highest one, so that its ACK (or SACK) reveals a tail loss.
void Tcb::tlp_fire(Instant now) {
  tlp_at = Instant::never();
  if (!sack_ok || in_recovery || tlp_out || snd_una == snd_max || txlog.empty()) return;
  const SeqNum before = snd_max;
  const uint32_t mps = max_payload(false);
  if (snd_nxt == snd_max && data_end() > snd_nxt && snd_una + snd_wnd - snd_nxt >= 1) {
    // New data, regardless of cwnd: one segment's worth of room for output().
    uint32_t cwnd = cc->cwnd();
    cc->set_cwnd(std::max(cwnd, pipe() + mps));
    output(now);
    cc->set_cwnd(cwnd);
  }
  tlp_retrans = snd_max == before;
  if (tlp_retrans && !retransmit_entry(txlog.size() - 1, now)) return;  // the RTO covers it
  tlp_out = true;
  tlp_end = snd_max;
  tlp_at = Instant::never();
  stack.count_recovery(RecoveryKind::kTlp);
  rto_at = now + rto;  // the timer restarts after the probe
  stack.schedule(this);
}

// RFC 8985 section 7.4: the probe's episode ends with its acknowledgment. A D-SACK, or
// a duplicate ACK at TLP.end_seq, says both copies arrived; an ACK beyond it without
// either says the probe repaired a loss, which gets a congestion response.
void Tcb::tlp_on_ack(const Segment& s, bool dupack, bool dsack, Instant now) {
  if (!tlp_out || s.ack < tlp_end) return;
  if (!tlp_retrans || dsack || (dupack && s.ack == tlp_end)) {
    tlp_out = false;
  } else if (s.ack > tlp_end) {
    tlp_out = false;
    cc->on_loss(flight(), now);
  }
}

}  // namespace ws::tcp
