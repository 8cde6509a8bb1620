// Loss recovery: the SACK scoreboard and RFC 6675 (conservative SACK-based recovery),
// or NewReno (RFC 6582) when SACK was not negotiated.
#include <algorithm>

#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

static constexpr uint32_t kMaxDupThresh = 8;

void Tcb::sack_update(const wire::TcpOptions& o) {
  for (size_t i = 0; i < o.sack_count; ++i) {
    SeqNum l = o.sack[i].left, r = o.sack[i].right;
    // Ignore blocks outside what is outstanding (RFC 2018 section 4: D-SACKs and
    // bogus blocks carry no information for the scoreboard).
    if (!(l < r) || r <= snd_una || r > snd_max) continue;
    scoreboard.insert(seq_max(l, snd_una), r, /*drop_highest=*/true);
  }
}

// The highest sequence number below which un-SACKed bytes count as lost (RFC 6675
// IsLost: DupThresh discontiguous SACKed blocks, or more than (DupThresh-1)*SMSS
// SACKed bytes, above them).
SeqNum Tcb::lost_boundary() const {
  size_t n = scoreboard.count();
  if (n == 0) return snd_una;
  uint32_t mss = max_payload(false);
  uint32_t need = (dupthresh - 1) * mss + 1;
  SeqNum by_bytes = snd_una;
  uint32_t cum = 0;
  for (size_t i = n; i-- > 0;) {
    const SeqRange& r = scoreboard[i];
    if (cum + r.len() >= need) {
      by_bytes = r.right - (need - cum);
      break;
    }
    cum += r.len();
  }
  SeqNum by_blocks = n >= dupthresh ? scoreboard[n - dupthresh].left : snd_una;
  return seq_max(seq_max(by_bytes, by_blocks), snd_una);
}

// RFC 6675 SetPipe: bytes believed in the network.
uint32_t Tcb::pipe() const {
  SeqNum lost = lost_boundary();
  uint64_t p = 0;
  SeqNum a = snd_una;
  auto hole = [&](SeqNum l, SeqNum r) {
    if (!(l < r)) return;
    SeqNum lost_end = seq_min(r, lost);
    if (l < lost_end) {
      // Lost bytes are in flight again only once retransmitted.
      SeqNum rx = seq_min(lost_end, high_rxt);
      if (l < rx) p += static_cast<uint32_t>(rx - l);
    }
    SeqNum nl = seq_max(l, lost);
    if (nl < r) p += static_cast<uint32_t>(r - nl);
  };
  for (size_t i = 0; i < scoreboard.count(); ++i) {
    hole(a, scoreboard[i].left);
    a = scoreboard[i].right;
  }
  hole(a, snd_nxt);
  return static_cast<uint32_t>(std::min<uint64_t>(p, UINT32_MAX));
}

// RFC 6675 section 5 (C): retransmit lost holes (NextSeg rule 1) while the pipe
// leaves room; new data (rule 2) is left to the caller's loop.
bool Tcb::recovery_output(Instant now) {
  bool sent = false;
  uint32_t mps = max_payload(false);
  for (int guard = 0; guard < 1024; ++guard) {
    if (static_cast<int64_t>(cc->cwnd()) - static_cast<int64_t>(pipe()) < mps) break;
    SeqNum lost = lost_boundary();
    SeqNum from = seq_max(high_rxt, snd_una);
    if (from >= lost) break;
    // First un-SACKed byte at or after `from`.
    SeqNum a = snd_una, start = from, hole_end = from;
    bool found = false;
    for (size_t i = 0; i <= scoreboard.count() && !found; ++i) {
      SeqNum r = i < scoreboard.count() ? scoreboard[i].left : snd_max;
      SeqNum l = seq_max(a, from);
      if (l < r) {
        start = l;
        hole_end = r;
        found = true;
      }
      if (i < scoreboard.count()) a = scoreboard[i].right;
    }
    if (!found || start >= lost) break;
    SeqNum end = seq_min(seq_min(hole_end, lost), data_end());
    uint32_t len = static_cast<uint32_t>(std::max<int32_t>(end - start, 0));
    len = std::min(len, mps);
    if (len == 0) break;
    if (!emit(start, len, wire::tcpflag::kAck, now)) break;
    len = last_emit_len;
    ++stat_retrans;
    ++stack.ctr().retransmits;
    rtt_timing = false;  // Karn
    high_rxt = start + len;
    arm_rto(now);
    sent = true;
  }
  return sent;
}

void Tcb::on_dupack_or_sack(Instant now) {
  if (pmtu_probe_lost(now)) return;  // a lost MTU probe is no congestion (pmtu.cpp)
  if (in_recovery) {
    // RFC 6582 step 4: each further duplicate ACK inflates cwnd by one SMSS.
    if (!sack_ok && dupacks > dupthresh) cc->set_cwnd(cc->cwnd() + max_payload(false));
    return;
  }
  bool trigger = dupacks >= dupthresh || (sack_ok && lost_boundary() > snd_una);
  // RFC 6582 section 3.2 step 2 / RFC 6675 section 5: one reduction per window of data.
  if (!trigger || snd_una < recover) return;
  in_recovery = true;
  recover = snd_max;
  ++stack.ctr().fast_retransmits;
  undo_valid = ts_ok;
  undo_cwnd = cc->cwnd();
  undo_ssthresh = cc->ssthresh();
  undo_ts = ts_now(now);
  undo_seq = snd_una;
  cc->on_loss(flight(), now);
  high_rxt = snd_una;
  rtt_timing = false;
  uint32_t mps = max_payload(false);
  if (sack_ok) {
    // RFC 6675 5 (4.2): retransmit the first lost segment regardless of cwnd.
    SeqNum r = scoreboard.empty() ? snd_max : scoreboard[0].left;
    if (r <= snd_una) r = snd_max;
    uint32_t len = std::min<uint32_t>(
        static_cast<uint32_t>(std::max<int32_t>(seq_min(r, data_end()) - snd_una, 0)), mps);
    if (len > 0 && emit(snd_una, len, wire::tcpflag::kAck, now)) {
      high_rxt = snd_una + last_emit_len;
      ++stat_retrans;
      ++stack.ctr().retransmits;
    }
  } else {
    // RFC 6582 section 3.2 step 2: retransmit, cwnd = ssthresh + 3*SMSS.
    uint32_t len =
        std::min<uint32_t>(static_cast<uint32_t>(std::max<int32_t>(data_end() - snd_una, 0)), mps);
    if (len > 0 && emit(snd_una, len, wire::tcpflag::kAck, now)) {
      ++stat_retrans;
      ++stack.ctr().retransmits;
    }
    cc->set_cwnd(cc->ssthresh() + 3 * mps);
  }
}

void Tcb::on_new_ack_in_recovery(uint32_t acked, Instant now) {
  uint32_t mps = max_payload(false);
  if (snd_una >= recover) {
    // Full acknowledgment: leave recovery (RFC 6582 step 3, RFC 6675 section 5).
    in_recovery = false;
    dupacks = 0;
    cc->on_recovery_exit(flight());
    return;
  }
  if (sack_ok) return;  // RFC 6675: the pipe governs what is sent next
  // RFC 6582 step 4 (partial ACK): retransmit the first unacknowledged segment and
  // deflate cwnd by the amount acknowledged, adding back one SMSS.
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

}  // namespace ws::tcp

namespace ws::tcp {

bool Tcb::detect_spurious(const Segment& s) {
  if (!undo_valid || !(s.ack > undo_seq)) return false;
  undo_valid = false;
  // RFC 3522: the ACK for the retransmitted segment echoes a timestamp older than the
  // retransmission, so the original arrived: the "loss" was reordering.
  if (!s.opts.ts_val || static_cast<int32_t>(s.opts.ts_ecr - undo_ts) >= 0) return false;
  ++stack.ctr().spurious_recoveries;
  // RFC 4015 section 3.2: restore the congestion state of before the reduction.
  cc->restore(undo_cwnd, undo_ssthresh);
  in_recovery = false;
  dupacks = 0;
  // Tolerate more reordering from now on (cf. Linux tp->reordering).
  dupthresh = std::min(dupthresh + 1, kMaxDupThresh);
  return true;
}

}  // namespace ws::tcp
