// Path MTU: ICMP-driven reduction (RFC 1191, RFC 5927), recovery after a timeout,
// black-hole detection and probing upward (RFC 4821, RFC 8899). See pmtu.hpp.
#include "stack/tcp/pmtu.hpp"

#include <algorithm>
#include <array>

#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

uint32_t mtu_plateau_below(uint32_t mtu) {
  // RFC 1191 section 7, table 7-1 (the "plateau" column).
  static constexpr std::array<uint32_t, 11> kPlateaus = {65535, 32000, 17914, 8166, 4352, 2002,
                                                         1492,  1006,  508,   296,  68};
  for (uint32_t p : kPlateaus)
    if (p < mtu) return p;
  return 68;
}

uint32_t Tcb::pmtu_ceiling() const { return std::min(our_mss, peer_mss); }

void Tcb::pmtu_set(uint32_t mss, Instant now) {
  (void)now;
  pmtu.mss = mss;
  if (cc) cc->set_mss(max_payload(false));
}

void Tcb::pmtu_lower(uint32_t mss, PmtuLoweredBy by, Instant now) {
  pmtu_set(mss, now);
  pmtu.lowered_by = by;
  ++stack.ctr().pmtu_reductions;
  // RFC 1191 section 6.3: a lowered estimate is raised again after a while (10 minutes
  // suggested); RFC 8899 5.2 calls it PMTU_RAISE_TIMER.
  pmtu.raise_at = now + stack.config().pmtu_recovery;
  pmtu_remember(now);
}

void Tcb::pmtu_remember(Instant now) {
  // Below the peer's MSS only the path limits us; before the SYN-ACK the peer's MSS is
  // not known yet.
  uint32_t limit = state == TcpState::kSynSent ? our_mss : pmtu_ceiling();
  stack.pmtu_cache().record(t.raddr, pmtu.mss, pmtu.search_high, limit, pmtu.lowered_by,
                            now + stack.config().pmtu_recovery);
}

IcmpVerdict Tcb::pmtu_frag_needed(uint32_t mtu, SeqNum seq, Instant now) {
  // An IPv6 link carries 1280 bytes at least (RFC 8201 4: a smaller report is raised).
  const uint32_t floor = t.raddr.is_v4() ? kPmtuFloorMtu : kIpv6MinMtu;
  uint32_t mss = advertised_mss(std::max(mtu, floor), ip_header_len(t.raddr));
  if (pmtu.probe_out && pmtu.probe_seq <= seq && seq < pmtu.probe_end && mss >= pmtu.mss) {
    // About our probe (RFC 4821 section 7.4: ICMP may speed up the search): the probed
    // size fails; the reported MTU bounds the search from above.
    pmtu_probe_failed(std::min(mss, pmtu.probe_mss - 1), true, now);
    return IcmpVerdict::kAccepted;
  }
  // RFC 1191 section 6.1: only a smaller MTU is news. Routers send one message per
  // dropped datagram, so the second and later copies about a flight land here.
  if (mss >= pmtu.mss) return IcmpVerdict::kMtuNotLower;
  if (pmtu.probe_out) pmtu_probe_failed(pmtu.probe_mss - 1, false, now);
  pmtu.search_high = mss;  // the router told us: nothing above is worth probing
  pmtu_lower(mss, PmtuLoweredBy::kIcmp, now);
  pmtu.black_hole_rtos = 0;
  // The oversized segments were dropped on the path: resend them now at the new size.
  // This is not congestion, so cwnd stays (RFC 1191 section 6.5).
  if (state != TcpState::kSynSent && state != TcpState::kSynReceived) {
    snd_nxt = snd_una;
    rtt_timing = false;
    output(now);
  }
  return IcmpVerdict::kAccepted;
}

ProbeStep Tcb::mtu_probe(uint32_t pending, int64_t usable, Instant now) {
  if (!stack.config().mtu_probing || pmtu.probe_out || in_recovery) return ProbeStep::kNone;
  if (state != TcpState::kEstablished && state != TcpState::kCloseWait) return ProbeStep::kNone;
  // Only new data (RFC 4821 section 7.4), never while a failed probe is being repaired.
  if (snd_nxt != snd_max || snd_una < pmtu.hold_until) return ProbeStep::kNone;
  pmtu.search_high = std::min(pmtu.search_high, pmtu_ceiling());
  if (!pmtu.searching()) return ProbeStep::kNone;
  uint32_t size = pmtu.next_probe(pmtu_ceiling());
  uint32_t payload = effective_send_mss(size, peer_mss, ts_ok);
  uint32_t mps = max_payload(false);
  if (payload <= mps) return ProbeStep::kNone;
  // Enough data behind the probe that its loss shows as duplicate ACKs / SACK blocks
  // (fast detection) rather than a timeout.
  if (pending < payload + 3 * mps) return ProbeStep::kNone;
  if (usable < static_cast<int64_t>(payload)) {
    // An ACK-clocked flow frees one or two segments per ACK and would never have room
    // for a larger one. If the windows can hold the probe once the flight drains a
    // little, hold new segments back until it fits (as Linux's tcp_mtu_probe does);
    // the ACKs of the flight guarantee progress.
    uint32_t need = payload + 2 * mps;
    bool fits_later = flight() > 0 && cc->cwnd() >= need && snd_wnd >= need;
    return fits_later ? ProbeStep::kWait : ProbeStep::kNone;
  }
  pmtu.emitting_probe = true;
  pmtu.probe_mss = size;
  bool ok = emit(snd_nxt, payload, wire::tcpflag::kAck, now);
  pmtu.emitting_probe = false;
  if (!ok) return ProbeStep::kNone;
  uint32_t len = last_emit_len;
  pmtu.probe_out = true;
  pmtu.probe_seq = snd_nxt;
  pmtu.probe_end = snd_nxt + len;
  ++stack.ctr().pmtu_probes_sent;
  if (!rtt_timing) {
    rtt_timing = true;
    rtt_seq = snd_nxt;
    rtt_time = now;
  }
  stat_sent += len;
  snd_nxt += len;
  snd_max = seq_max(snd_max, snd_nxt);
  arm_rto(now);
  return ProbeStep::kSent;
}

void Tcb::pmtu_on_ack(Instant now) {
  pmtu.black_hole_rtos = 0;
  if (!pmtu.probe_out || snd_una < pmtu.probe_end) return;
  // RFC 4821 section 7.5: the probe arrived, the path carries probe_mss.
  pmtu.probe_out = false;
  pmtu.lost_probes = 0;
  ++stack.ctr().pmtu_probes_succeeded;
  ++stack.ctr().pmtu_increases;
  pmtu_set(pmtu.probe_mss, now);
  pmtu_remember(now);
  pmtu_search_state(now);
}

void Tcb::pmtu_search_state(Instant now) {
  // Search finished below the ceiling: look again later (RFC 8899 5.2, PROBE_COMPLETE
  // and PMTU_RAISE_TIMER); the path may have changed.
  if (!pmtu.searching() && pmtu.mss < pmtu_ceiling() && pmtu.raise_at.is_never())
    pmtu.raise_at = now + stack.config().pmtu_recovery;
}

void Tcb::pmtu_probe_loss(bool resend, Instant now) {
  if (pmtu.lost_probe_mss != pmtu.probe_mss) {
    pmtu.lost_probe_mss = pmtu.probe_mss;
    pmtu.lost_probes = 0;
  }
  // Short of kPmtuMaxProbes the size stays in the search and is probed again once the
  // probe's bytes, resent at the working size, are acknowledged (hold_until).
  bool failed = ++pmtu.lost_probes >= kPmtuMaxProbes;
  pmtu_probe_failed(failed ? pmtu.probe_mss - 1 : pmtu.search_high, resend, now);
}

void Tcb::pmtu_probe_failed(uint32_t high, bool resend, Instant now) {
  pmtu.probe_out = false;
  pmtu.search_high = std::min(pmtu.search_high, high);
  ++stack.ctr().pmtu_probes_failed;
  pmtu_remember(now);  // later connections need not try this size again
  pmtu_search_state(now);
  pmtu.hold_until = snd_max;
  if (!resend) return;
  // RFC 4821 section 7.6: a lost probe is no sign of congestion, so no window reduction:
  // resend its bytes at the size known to work, and keep the duplicate ACKs it caused
  // from starting a recovery (as RFC 6582 section 4 does for stale ones).
  uint32_t mps = max_payload(false);
  for (SeqNum s = seq_max(snd_una, pmtu.probe_seq); s < pmtu.probe_end;) {
    uint32_t len = std::min<uint32_t>(static_cast<uint32_t>(pmtu.probe_end - s), mps);
    if (!emit(s, len, wire::tcpflag::kAck, now)) break;  // the RTO covers it
    ++stat_retrans;
    ++stack.ctr().retransmits;
    s += last_emit_len;
  }
  high_rxt = seq_max(high_rxt, pmtu.probe_end);
  recover = snd_max;
  dupacks = 0;
  rtt_timing = false;
  arm_rto(now);
}

bool Tcb::pmtu_probe_lost(Instant now) {
  if (!pmtu.probe_out || in_recovery) return false;
  // The same test that would start a recovery: RACK deemed segments lost, or (without
  // SACK) DupThresh duplicate ACKs.
  bool lost = sack_ok ? txlog.lost_bytes() > 0 : dupacks >= dupthresh;
  if (!lost || snd_una < recover) return false;
  if (snd_una == pmtu.probe_seq) {
    // The first hole is the probe: the probed size may be what failed.
    pmtu_probe_loss(true, now);
    return true;
  }
  // An earlier segment is lost: the recovery that starts now may resend the probe's
  // bytes at the working size, and an ACK covering them would prove nothing. The probe
  // is inconclusive; the same size is tried again later.
  pmtu.probe_out = false;
  return false;
}

// A SACKed segment of `mps` bytes in the window: the path carries full-sized segments.
static bool full_segment_sacked(const TxLog& log, uint32_t mps) {
  if (log.sacked_bytes() < mps) return false;
  for (size_t i = 0; i < log.size(); ++i)
    if (log[i].has(TxSeg::kSacked) && log[i].len >= mps) return true;
  return false;
}

void Tcb::pmtu_on_rto(Instant now) {
  if (pmtu.probe_out) {
    // The timer fired with the probe outstanding: if it was the first hole, the probed
    // size may have failed (the retransmission that follows resends it at the working
    // size); otherwise the probe says nothing and is forgotten.
    if (snd_una == pmtu.probe_seq) {
      pmtu_probe_loss(false, now);
    } else {
      pmtu.probe_out = false;
    }
    return;
  }
  const bool v4 = t.raddr.is_v4();
  const uint32_t floor = pmtu_floor_mss(v4);
  if (!stack.config().mtu_probing || pmtu.mss <= floor) return;
  // RFC 4821 section 7.7 / RFC 8899 section 4.3: full-sized segments keep timing out
  // and no ICMP lowered the MTU: the path may drop large packets silently. Fall back to
  // a size almost every path carries (RFC 8899 BASE_PLPMTU) and, if that fails too, to
  // the floor; then probe upward again.
  uint32_t mps = max_payload(false);
  if (static_cast<uint32_t>(std::max<int32_t>(data_end() - snd_una, 0)) < mps) return;
  // A full-sized segment SACKed in this window: the path carries the size, and the
  // timeout is loss, not a black hole (on a lossy path, counting it lowered the MSS).
  if (full_segment_sacked(txlog, mps)) {
    pmtu.black_hole_rtos = 0;
    return;
  }
  if (++pmtu.black_hole_rtos < kPmtuBlackHoleRtos) return;
  pmtu.black_hole_rtos = 0;
  uint32_t old = pmtu.mss;
  uint32_t base = old > pmtu_base_mss(v4) ? pmtu_base_mss(v4) : floor;
  ++stack.ctr().pmtu_black_holes;
  // search_high stays: timeouts are no proof that `old` fails (on a lossy path they
  // are loss), so the search probes it first (next_probe) and only kPmtuMaxProbes lost
  // probes rule it out.
  pmtu_lower(base, PmtuLoweredBy::kBlackHole, now);
  pmtu.raise_at = Instant::never();  // probing raises it; pmtu_search_state re-arms
  pmtu_search_state(now);
}

void Tcb::pmtu_timer(Instant now) {
  pmtu.raise_at = Instant::never();
  uint32_t ceiling = pmtu_ceiling();
  if (pmtu.lowered_by == PmtuLoweredBy::kIcmp || !stack.config().mtu_probing) {
    // RFC 1191 section 6.3: try the original size; if the path still cannot carry it,
    // ICMP (or, where that is filtered, black-hole detection) lowers it again.
    if (pmtu.mss < ceiling) {
      pmtu_set(ceiling, now);
      ++stack.ctr().pmtu_increases;
    }
    pmtu.lowered_by = PmtuLoweredBy::kNone;
    pmtu_remember(now);
  }
  // Probing (when on) searches the whole range again from the current size.
  pmtu.search_high = ceiling;
}

}  // namespace ws::tcp
