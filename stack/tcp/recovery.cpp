// Loss recovery: the transmit log as SACK scoreboard, recovery entry and exit with
// Proportional Rate Reduction (RFC 6937), retransmission of the segments deemed lost,
// and the undo of reductions found spurious (Eifel timestamps, RFC 3522/4015; D-SACK,
// RFC 2883/3708). With SACK, losses are detected by RACK (rack.cpp); without it, by
// the duplicate-ACK threshold with NewReno (RFC 6582).
#include <algorithm>

#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

static constexpr uint32_t kMaxDupThresh = 8;

uint32_t Tcb::log_tso_pieces(SeqNum seq, uint32_t seqlen, uint32_t tso, Instant now) {
  uint32_t again = 0;
  // Logged as the segments that go on the wire, so that SACK edges fall on entries.
  for (uint32_t off = 0; off < seqlen; off += tso)
    again += txlog.sent(seq + off, std::min(tso, seqlen - off), now);
  return again;
}

void Tcb::note_sent_again(SeqNum end, uint32_t again) {
  rexmit_high = seq_max(rexmit_high, end);
  if (undo_valid) undo_retrans += again;
}

// RFC 2883 section 4: a first block below the cumulative ACK, or inside the second
// block, reports a duplicate. One plausibly about data we sent lately is acted on.
static bool is_dsack(const Tcb& c, const wire::TcpOptions& o, SeqNum ack) {
  SeqNum l = o.sack[0].left, r = o.sack[0].right;
  bool dup = r <= ack || (o.sack_count > 1 && o.sack[1].left <= l && r <= o.sack[1].right);
  return dup && l < r && r <= c.snd_max && c.snd_una - l <= static_cast<int32_t>(c.max_snd_wnd);
}

bool Tcb::sack_update(const Segment& s, Instant now) {
  const wire::TcpOptions& o = s.opts;
  bool dsack = is_dsack(*this, o, s.ack);
  if (dsack) on_dsack(o.sack[0].left, o.sack[0].right);
  for (size_t i = dsack ? 1 : 0; i < o.sack_count; ++i) {
    SeqNum l = o.sack[i].left, r = o.sack[i].right;
    // Blocks outside what is outstanding carry nothing for the scoreboard.
    if (!(l < r) || r <= snd_una || r > snd_max) continue;
    txlog.sack(seq_max(l, snd_una), r, [&](const TxSeg& g) { rack_on_delivered(g, s, now); });
  }
  return dsack;
}

void Tcb::on_dsack(SeqNum l, SeqNum r) {
  rack_on_dsack();
  // Every byte the episode retransmitted reported as a duplicate: none was needed.
  if (!undo_valid || l < undo_seq || undo_retrans == 0) return;
  undo_retrans -= std::min(undo_retrans, static_cast<uint32_t>(r - l));
  if (undo_retrans == 0) undo_recovery();
}

// RFC 6675 SetPipe with the log's sums: bytes in flight, less those SACKed and those
// deemed lost and not retransmitted since.
uint32_t Tcb::pipe() const {
  uint32_t f = flight();
  if (!sack_ok) return f;
  return f - std::min(f, txlog.sacked_bytes() + txlog.lost_bytes());
}

bool Tcb::retransmit_entry(size_t i, Instant now) {
  const TxSeg g = txlog[i];
  // Nothing beyond the peer's window, except the first segment (as Linux): it serves
  // as the window probe.
  if (g.seq != snd_una && g.seq >= snd_una + snd_wnd) return false;
  uint32_t len = std::min(g.len, max_payload(false));
  bool fin = fin_sent && g.end() == fin_seq + 1 && len == g.len;
  uint32_t data = fin ? len - 1 : len;
  if (g.seq + data > data_end()) return false;  // only the FIN lies beyond the data
  if (!emit(g.seq, data, wire::tcpflag::kAck | (fin ? wire::tcpflag::kFin : 0), now)) return false;
  ++stat_retrans;
  ++stack.ctr().retransmits;
  rtt_timing = false;  // Karn
  arm_rto(now);
  return true;
}

// Retransmits the segments deemed lost, lowest first, while cwnd leaves room over the
// pipe (RFC 6675 NextSeg rule 1; PRR sets cwnd during a fast recovery).
bool Tcb::recovery_output(Instant now) {
  if (frto != 0) return false;  // F-RTO has not decided yet
  bool sent = false;
  uint32_t mps = max_payload(false);
  for (size_t i = 0; i < txlog.size() && txlog.lost_bytes() > 0; ++i) {
    if (!txlog[i].has(TxSeg::kLost)) continue;
    int64_t room = static_cast<int64_t>(cc->cwnd()) - static_cast<int64_t>(pipe());
    if (room < std::min(txlog[i].len, mps)) break;
    if (!retransmit_entry(i, now)) break;
    sent = true;
  }
  return sent;
}

static void save_undo(Tcb& c, Instant now) {
  c.undo_valid = true;
  c.undo_eifel = c.ts_ok;
  c.undo_cwnd = c.cc->cwnd();
  c.undo_ssthresh = c.cc->ssthresh();
  c.undo_ts = c.ts_now(now);
  c.undo_seq = c.snd_una;
  c.undo_retrans = 0;
  c.undo_rack_xmit = c.rack.xmit;
  c.undo_rack_end = c.rack.end;
}

// RFC 3522 section 2: the Eifel test reads the timestamp echoed by the ACK of the oldest
// outstanding segment, so it tells about the episode only when that segment is the
// episode's first retransmission: deemed lost (RACK retransmits the oldest lost first;
// without SACK the fast retransmit is of SND.UNA) and never resent before. A copy of it
// resent in an earlier episode and still on the way would be ACKed with that copy's
// older timestamp, read as "the original arrived", and a real loss undone.
static bool eifel_applies(const Tcb& c, bool by_rack) {
  if (c.txlog.empty()) return false;
  const TxSeg& g = c.txlog[0];
  return !g.has(TxSeg::kRetrans) && (!by_rack || g.has(TxSeg::kLost));
}

void Tcb::enter_recovery(bool by_rack, Instant now) {
  in_recovery = true;
  rto_recovery = false;
  recover = snd_max;
  stack.count_recovery(by_rack ? RecoveryKind::kRack : RecoveryKind::kFast);
  ++stack.ctr().fast_retransmits;
  save_undo(*this, now);
  undo_eifel = undo_eifel && eifel_applies(*this, by_rack);
  cc->on_loss(flight(), now);
  // RFC 6937 section 3: RecoverFS is the flight at the start of recovery.
  prr_delivered = prr_out = 0;
  recover_fs = std::max<uint32_t>(flight(), 1);
  high_rxt = snd_una;
  rtt_timing = false;
  tlp_at = Instant::never();
}

void Tcb::enter_rto_recovery(Instant now) {
  if (retries == 1) save_undo(*this, now);
  in_recovery = true;
  rto_recovery = true;
  recover = snd_max;
  // With timestamps, Eifel tells a spurious timeout (detect_spurious).
  frto = !ts_ok && retries == 1 ? 1 : 0;
  prr_delivered = prr_out = 0;
  tlp_out = false;
  tlp_at = Instant::never();
  rack.reo_at = Instant::never();
  // RFC 8985 section 6.3: the first segment, and every one sent longer ago than the
  // RTT plus the reordering window, is lost. Later ones may still arrive.
  Duration wait = rack.rtt + rack_reo_wnd();
  for (size_t i = 0; i < txlog.size(); ++i) {
    const TxSeg& g = txlog[i];
    if (g.has(TxSeg::kSacked)) continue;
    if (i == 0 || !rack.valid || g.xmit + wait <= now) txlog.set_lost(i, true);
  }
}

// RFC 6937 section 3: the sending allowance on each ACK of a fast recovery.
void Tcb::prr_update(uint32_t delivered) {
  prr_delivered += delivered;
  const int64_t mss = max_payload(false);
  const int64_t p = pipe(), ss = cc->ssthresh();
  int64_t sndcnt;
  if (p > ss) {
    // Proportional: ceil(prr_delivered * ssthresh / RecoverFS) - prr_out.
    int64_t target = (static_cast<int64_t>(prr_delivered) * ss + recover_fs - 1) / recover_fs;
    sndcnt = target - prr_out;
  } else {
    // Slow start reduction bound: catch up to ssthresh no faster than slow start.
    int64_t limit = std::max<int64_t>(static_cast<int64_t>(prr_delivered) - prr_out, delivered);
    sndcnt = std::min(ss - p, limit + mss);
  }
  // The first retransmission goes out whatever the arithmetic says (fast retransmit).
  sndcnt = std::max<int64_t>(sndcnt, prr_out == 0 ? mss : 0);
  cc->set_cwnd(static_cast<uint32_t>(std::min<int64_t>(p + sndcnt, UINT32_MAX)));
}

void Tcb::exit_recovery() {
  in_recovery = false;
  frto = 0;
  dupacks = 0;
  if (rto_recovery) {
    rto_recovery = false;  // slow start carries on from where it is
  } else if (sack_ok) {
    // RFC 6937 section 3: cwnd = ssthresh at the end of the recovery.
    cc->set_cwnd(std::max(cc->ssthresh(), 2 * max_payload(false)));
  } else {
    cc->on_recovery_exit(flight());
  }
  if (rack.reo_wnd_persist > 0 && --rack.reo_wnd_persist == 0) rack.reo_wnd_mult = 1;
}

void Tcb::undo_recovery() {
  const bool timeout = rto_recovery;
  undo_valid = undo_eifel = false;
  stack.count_recovery(RecoveryKind::kSpurious);
  ++stack.ctr().spurious_recoveries;
  // RFC 4015 section 3.2: restore the congestion state of before the reduction.
  cc->restore(undo_cwnd, undo_ssthresh);
  in_recovery = rto_recovery = false;
  frto = 0;
  dupacks = 0;
  txlog.clear_lost();  // what was deemed lost was delayed; RACK looks again
  rack.reordering_seen = true;
  if (timeout) {
    // The timeout's retransmissions say nothing of the segments sent before them (their
    // originals are still on the way): RACK goes back to the latest original delivered.
    rack.xmit = undo_rack_xmit;
    rack.end = undo_rack_end;
  }
  // Without SACK, tolerate more reordering from now on (cf. Linux tp->reordering).
  if (!sack_ok) dupthresh = std::min(dupthresh + 1, kMaxDupThresh);
}

void Tcb::after_ack(uint32_t acked, uint32_t delivered, bool dupack, bool dsack, const Segment& s,
                    Instant now) {
  if (!sack_ok) {
    if (dupack) on_dupack_nosack(now);
    return;
  }
  if (frto != 0) frto_on_ack(acked, dupack);
  if (tlp_out) tlp_on_ack(s, dupack, dsack, now);
  // With nothing left in flight (every ACK of a request/response exchange) RACK has
  // nothing to judge: rack_detect_loss() would only clear its timer.
  if (txlog.empty())
    rack.reo_at = Instant::never();
  else
    rack_check(now);
  if (in_recovery && !rto_recovery) prr_update(delivered);
}

// RFC 5682 section 3 (SACK-enhanced F-RTO). The timeout resent the first segment only.
// If the first ACK after it advances SND.UNA without covering everything, two new
// segments go out instead of retransmissions; if the next ACK advances SND.UNA again,
// segments sent before the timeout are still arriving: the timeout was spurious and is
// undone. A duplicate ACK at either step means real losses: the conventional recovery
// (slow start through the segments marked lost) goes on.
void Tcb::frto_on_ack(uint32_t acked, bool dupack) {
  if (!in_recovery || !rto_recovery) {
    frto = 0;
    return;
  }
  const uint32_t mss = max_payload(false);
  if (frto == 1) {
    if (acked == 0 || dupack || data_end() <= snd_nxt || snd_una + snd_wnd <= snd_nxt) {
      frto = 0;
      return;
    }
    frto = 2;
    cc->set_cwnd(pipe() + 2 * mss);  // room for two new segments, no retransmission
    return;
  }
  frto = 0;
  if (acked > 0 && !dupack) {
    undo_recovery();
  } else {
    cc->set_cwnd(std::min(cc->cwnd(), 3 * mss));  // RFC 5682 step 3 (a)
  }
}

// Entering fast recovery sends the fast retransmit whatever cwnd and the pipe say (RFC
// 6675 section 5 step (4.2), RFC 6937 section 3), which prr_update() grants when
// nothing has gone out yet. On an ACK, after_ack() calls it next; RACK's timer (Step 6)
// brings no ACK, so the grant is asked for here, with nothing delivered (Linux's
// tcp_rack_reo_timeout does the same). Without the grant, a flight larger than the new
// ssthresh would hold the retransmission until an ACK came, and, were the ACKs of the
// segments behind the hole lost, until the timeout.
void Tcb::rack_check(Instant now) {
  if (!rack_detect_loss(now) || in_recovery || snd_una < recover) return;
  if (pmtu_probe_lost(now)) return;  // a lost MTU probe is no congestion (pmtu.cpp)
  enter_recovery(true, now);
  prr_update(0);
}

// Without SACK: RFC 5681 fast retransmit on DupThresh duplicate ACKs, then NewReno.
void Tcb::on_dupack_nosack(Instant now) {
  if (pmtu_probe_lost(now)) return;
  uint32_t mps = max_payload(false);
  if (in_recovery) {
    // RFC 6582 step 4: each further duplicate ACK inflates cwnd by one SMSS.
    if (!rto_recovery && dupacks > dupthresh) cc->set_cwnd(cc->cwnd() + mps);
    return;
  }
  // RFC 6582 section 3.2 step 2: one reduction per window of data.
  if (dupacks < dupthresh || snd_una < recover) return;
  enter_recovery(false, now);
  // RFC 6582 section 3.2 step 2: retransmit, cwnd = ssthresh + 3*SMSS.
  uint32_t len =
      std::min<uint32_t>(static_cast<uint32_t>(std::max<int32_t>(data_end() - snd_una, 0)), mps);
  if (len > 0 && emit(snd_una, len, wire::tcpflag::kAck, now)) {
    ++stat_retrans;
    ++stack.ctr().retransmits;
  }
  cc->set_cwnd(cc->ssthresh() + 3 * mps);
}

void Tcb::on_new_ack_in_recovery(uint32_t acked, Instant now) {
  if (snd_una >= recover) {
    exit_recovery();  // full acknowledgment (RFC 6582 step 3, RFC 6675 section 5)
    return;
  }
  if (rto_recovery) {
    // After a timeout the window opens by slow start (RFC 5681 section 3.1).
    if (cwnd_in_use()) cc->on_ack(acked, flight(), now, have_rtt ? srtt : Duration::millis(100));
    return;
  }
  if (sack_ok) return;  // PRR sets cwnd (after_ack)
  // RFC 6582 step 4 (partial ACK): retransmit the first unacknowledged segment and
  // deflate cwnd by the amount acknowledged, adding back one SMSS.
  uint32_t mps = max_payload(false);
  uint32_t len =
      std::min<uint32_t>(static_cast<uint32_t>(std::max<int32_t>(data_end() - snd_una, 0)), mps);
  if (len > 0 && emit(snd_una, len, wire::tcpflag::kAck, now)) {
    ++stat_retrans;
    ++stack.ctr().retransmits;
    rtt_timing = false;
  }
  uint32_t c = cc->cwnd();
  c = c > acked ? c - acked : 0;
  if (acked >= mps) c += mps;
  cc->set_cwnd(std::max(c, mps));
}

bool Tcb::detect_spurious(const Segment& s) {
  if (!undo_eifel || !(s.ack > undo_seq)) return false;
  undo_eifel = false;
  // RFC 3522: the ACK for the retransmitted segment echoes a timestamp older than the
  // retransmission, so the original arrived: the "loss" was reordering or delay.
  if (!s.opts.ts_val || static_cast<int32_t>(s.opts.ts_ecr - undo_ts) >= 0) return false;
  undo_recovery();
  return true;
}

}  // namespace ws::tcp
