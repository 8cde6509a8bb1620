// The listener's side of SYN cookies (RFC 4987 section 3.6; the encoding is in
// syncookie.cpp): a SYN,ACK sent without keeping state, and the connection built from
// the ACK that returns the cookie.
#include <algorithm>

#include "stack/tcp/mss.hpp"
#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

using namespace wire::tcpflag;

namespace {
// How long after its last cookie a listener (in auto mode) checks ACKs for one: a
// cookie is accepted for up to two key periods.
constexpr Duration kCookieWindow = SynCookies::kPeriod * 2;
}  // namespace

bool TcpStack::cookie_wanted(const Listener& l) const {
  switch (cfg_.syncookies) {
    case SynCookieMode::kAlways:
      return true;
    case SynCookieMode::kAuto:
      return l.syn_queue >= cfg_.syn_backlog;
    case SynCookieMode::kNever:
      break;
  }
  return false;
}

void TcpStack::send_syn_cookie(Listener& l, const FourTuple& t, const Segment& s, Instant now) {
  // The cookie's MSS table is derived from an IPv4 MTU: the one of our MSS.
  const uint32_t mtu = mss_to(t.raddr) + kIpv4HeaderLen + kTcpHeaderLen;
  CookieOptions o;
  o.mss = s.opts.mss ? std::max<uint32_t>(*s.opts.mss, 64) : kDefaultPeerMss;
  // Window scale and SACK travel in the timestamp: without one, offer neither (Linux
  // clears the options of a cookie SYN without timestamps alike).
  o.ts = cfg_.timestamps && s.opts.ts_val.has_value();
  if (o.ts) {
    o.sack = cfg_.sack && s.opts.sack_permitted;
    if (cfg_.window_scaling && s.opts.wscale) o.wscale = std::min<uint8_t>(*s.opts.wscale, 14);
  }
  const IsnGenerator::Initial init = isn_.initial({t.laddr, t.lport}, {t.raddr, t.rport}, now);
  const auto ts_clock = static_cast<uint32_t>(now.ns() / 1000000) + init.ts_offset;
  const SynCookies::Issued c =
      cookies_.make({t.laddr, t.lport}, {t.raddr, t.rport}, s.seq, o, mtu, ts_clock, now);

  wire::TcpRepr r;
  r.src_port = t.lport;
  r.dst_port = t.rport;
  r.seq = SeqNum(c.iss);
  r.ack = s.seq + 1;
  r.flags = kSyn | kAck;
  r.mss = static_cast<uint16_t>(std::min<uint32_t>(advertised_mss(mtu), 65535));
  if (o.wscale) r.wscale = offered_wscale();
  r.sack_permitted = o.sack;
  // The window of a SYN is never scaled (RFC 7323 2.2): the receive ring's first size.
  const uint32_t rb = cfg_.recv_buffer ? cfg_.recv_buffer : cfg_.buffer_initial;
  r.window = static_cast<uint16_t>(std::min<uint32_t>(rb, 65535));
  if (o.ts) {
    r.ts_val = c.ts_val;
    r.ts_ecr = *s.opts.ts_val;
  }
  L4Frame f;
  if (!out_.begin(t.laddr, t.raddr, 6, static_cast<uint32_t>(r.header_len()), f)) {
    ++ctr_.output_no_buffer;
    return;
  }
  wire::emit_tcp(f.l4.data(), r);
  out_.commit(f, now);
  ++ctr_.family.segments_out[family_index(t.raddr)];
  ++ctr_.syncookies_sent;
  l.cookies_until = now + kCookieWindow;
}

bool TcpStack::accept_cookie(Listener& l, const FourTuple& t, Segment& s, Instant now) {
  if (cfg_.syncookies == SynCookieMode::kNever || s.rst()) return false;
  if (cfg_.syncookies == SynCookieMode::kAuto && !(now < l.cookies_until)) return false;
  const uint32_t mtu = mss_to(t.raddr) + kIpv4HeaderLen + kTcpHeaderLen;
  const SeqNum iss = s.ack - 1, irs = s.seq - 1;
  std::optional<uint32_t> ecr;
  if (s.opts.ts_val) ecr = s.opts.ts_ecr;
  auto o = cookies_.check({t.laddr, t.lport}, {t.raddr, t.rport}, iss, irs, ecr, mtu, now);
  if (!o) {
    // Forged, damaged or expired: dropped without an answer, as Linux does (a RST
    // would let a flood of ACKs turn the listener into a reflector).
    ++ctr_.syncookies_invalid;
    drops_.add(DropReason::kTcpSynCookieInvalid);
    return true;
  }
  ++ctr_.syncookies_valid;
  if (conns_.size() >= cfg_.max_connections) {
    drops_.add(DropReason::kTcpMaxConnections);
    return true;
  }
  // The connection as listen_input() would have made it from the SYN, in SYN_RECEIVED
  // with our SYN,ACK acknowledged by this segment; Tcb::input() then takes the ACK (and
  // any data or FIN with it) the usual way and hands the connection to the application.
  Tcb* tcb = new_tcb(t);
  tcb->passive = true;
  tcb->listener = &l;
  ++l.syn_queue;
  tcb->iss = iss;
  tcb->snd_una = tcb->recover = tcb->high_rxt = tcb->pmtu.hold_until = iss;
  tcb->snd_nxt = tcb->snd_max = tcb->snd_buf_seq = iss + 1;
  tcb->irs = irs;
  tcb->rcv_nxt = tcb->last_ack_sent = s.seq;
  tcb->rcv_adv = s.seq + std::min<uint32_t>(static_cast<uint32_t>(tcb->rcvbuf.capacity()), 65535);
  tcb->last_rx = now;
  tcb->peer_mss = o->mss;
  tcb->ws_ok = o->wscale.has_value();
  if (tcb->ws_ok)
    tcb->snd_wscale = *o->wscale;
  else
    tcb->rcv_wscale = 0;
  tcb->ts_ok = o->ts;
  if (tcb->ts_ok) {
    tcb->ts_recent = *s.opts.ts_val;
    tcb->ts_recent_time = now;
  }
  tcb->sack_ok = o->sack;
  tcb->snd_wl1 = irs;
  tcb->snd_wl2 = iss;
  tcb->cc->init(tcb->max_payload(false));
  tcb->set_state(TcpState::kSynReceived);
  tcb->input(s, now);
  if (!tcb->released) tcb->output(now);
  return true;
}

}  // namespace ws::tcp
