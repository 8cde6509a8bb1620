#include "stack/tcp/tcp_stack.hpp"

#include <algorithm>
#include <new>
#include <utility>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/tcp/mss.hpp"
#include "stack/wire/ipv4.hpp"

namespace ws::tcp {

using namespace wire::tcpflag;

namespace {
// The first size a send ring grows to (Connection::send in tcb.cpp).
constexpr size_t kFirstSendRing = 16384;

// The connection table's hash key, from the stack's secret. The inputs lie far above any
// second count, the other input of prf() (the challenge-ACK budget).
std::array<uint64_t, 4> table_key(const IsnGenerator& g) {
  return {g.prf(~0ull), g.prf(~1ull), g.prf(~2ull), g.prf(~3ull)};
}
}  // namespace

TcpStack::TcpStack(L4Output& out, DropCounters& drops, TcpConfig cfg)
    : out_(out),
      drops_(drops),
      cfg_(std::move(cfg)),
      isn_(cfg_.isn_secret),
      cookies_(cfg_.isn_secret),
      rst_bucket_(cfg_.rst_rate_limit, std::max<uint32_t>(1, cfg_.rst_rate_limit / 10)),
      conns_(table_key(isn_)),
      time_waits_(table_key(isn_)) {
  if (cfg_.ephemeral_high < cfg_.ephemeral_low) std::swap(cfg_.ephemeral_low, cfg_.ephemeral_high);
  // The window scale we offer: enough to express the largest buffer (RFC 7323 2.3).
  const uint32_t maxbuf = cfg_.recv_buffer ? cfg_.recv_buffer : cfg_.buffer_max;
  while (cfg_.window_scaling && offered_wscale_ < 14 &&
         (uint64_t{65535} << offered_wscale_) < maxbuf)
    ++offered_wscale_;
  spare_rcv_.size = cfg_.recv_buffer ? cfg_.recv_buffer : cfg_.buffer_initial;
  spare_snd_.size = kFirstSendRing;
  holders_.reserve(kHeldPieces);
  // At most one entry per frame of a burst (32 in the data plane): never grows per packet.
  burst_output_.reserve(kBurstOutputReserve);
}

namespace {
// Spare rings kept per direction: enough for a burst of connection turnover, bounded so
// that a burst does not pin its memory for ever (16 MiB of 64 KiB receive rings).
constexpr size_t kMaxSpareRings = 256;
// Free Tcb slots kept when the timer queue is compacted (about 1 MiB), and the floor of
// what is kept below that: the recent live population (see compact_timers()).
constexpr size_t kMaxFreeSlots = 1024;
constexpr size_t kMinSpare = 64;

// The header (20..60 bytes, RFC 9293 3.1) as one span: read in place, or pulled up
// into `hdr_buf` when it straddles segments; the payload stays where it arrived.
// Empty, with the reason, when the segment is too short for its data offset.
[[gnu::always_inline]] inline std::span<const uint8_t> read_header(
    const PacketView& seg, uint8_t (&hdr_buf)[wire::TcpView::kMaxHeaderLen], uint64_t& pullups,
    DropReason& why) {
  auto fixed = seg.pullup(std::min(seg.size(), wire::TcpView::kMinHeaderLen), hdr_buf, pullups);
  if (fixed.size() < wire::TcpView::kMinHeaderLen) {
    why = DropReason::kTcpTruncated;
    return {};
  }
  const size_t hl = size_t{static_cast<uint8_t>(fixed[wire::TcpView::kDataOffOff] >> 4)} * 4;
  if (hl < wire::TcpView::kMinHeaderLen || hl > seg.size()) {
    why = DropReason::kTcpBadDataOffset;
    return {};
  }
  // Options: the whole header in one span; if the fixed part was pulled up
  // already, the options are added behind it (one pull-up counted).
  if (hl > fixed.size() && fixed.data() == hdr_buf) {
    seg.copy_out(fixed.size(), std::span(hdr_buf).subspan(fixed.size(), hl - fixed.size()));
    return std::span<const uint8_t>(hdr_buf, hl);
  }
  if (hl > fixed.size()) return seg.pullup(hl, hdr_buf, pullups);
  return fixed;
}

}  // namespace

TcpStack::~TcpStack() {
  auto free_tcb = [](Tcb* t) {
    t->drop_held();  // the buffers go back to their owner
    TcbSlot* s = t->slot;
    t->~Tcb();
    delete s;
  };
  for (Tcb* t : graveyard_) free_tcb(t);
  conns_.for_each(free_tcb);
  for (TcbSlot* s : free_slots_) delete s;
}

void TcpStack::end_of_call() {
  // Output requested by the application from inside callbacks.
  for (size_t i = 0; i < pending_output_.size(); ++i) {
    Tcb* t = pending_output_[i];
    if (t->output_queued && !t->released) t->output(now_);
  }
  pending_output_.clear();
  // Index loop: a destructor runs no callbacks, but stay safe if one ever releases more.
  for (size_t i = 0; i < graveyard_.size(); ++i) destroy(graveyard_[i]);
  graveyard_.clear();
  end_work_ = 0;
}

TcbSlot* TcpStack::take_slot() {
  if (!free_slots_.empty()) {
    TcbSlot* s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  ++slot_count_;
  return new TcbSlot;
}

// The connection's rings go back to the spares (when of the pooled sizes), its storage
// to the free slots; the memory itself stays with the stack for the next connection.
void TcpStack::destroy(Tcb* t) {
  if (t->burst_output) std::erase(burst_output_, t);
  recycle_rings(*t);
  TcbSlot* s = t->slot;
  t->~Tcb();
  s->id = 0;
  free_slots_.push_back(s);
  // The second trigger of the compaction and its trimming: a churn whose connections find
  // their slots' entries queued already pushes few (the first trigger), and the slots and
  // rings a burst left behind would stay.
  if (++freed_since_compact_ > conns_.size() + 1024) compact_timers();
}

// Inline into its two callers (a new connection's receive ring, its first send ring), as is
// give_ring() into recycle_rings(): four calls per connection, each a few tests and stores.
[[gnu::always_inline]] inline void TcpStack::take_ring(SparePool& pool, size_t cap,
                                                       ByteRing& into) {
  if (!pool.buffers.empty() && pool.size == cap) {
    into.adopt(pool.buffers.back(), cap);
    pool.buffers.pop_back();
    tally_.spare.capacity -= cap;
    tally_.spare.allocated -= cap;
  } else {
    into.resize(cap);
  }
}

void TcpStack::grow_send_ring(Tcb& t, size_t cap) {
  if (t.sndbuf.capacity() == 0 && cap == kFirstSendRing)
    take_ring(spare_snd_, cap, t.sndbuf);
  else
    t.sndbuf.resize(cap, t.sndbuf.size());
}

[[gnu::always_inline]] inline void TcpStack::give_ring(SparePool& pool, ByteRing& r) {
  // Only rings with storage are worth keeping: an unused one costs nothing to make.
  if (r.capacity() == pool.size && r.allocated() != 0 && pool.buffers.size() < kMaxSpareRings) {
    pool.buffers.push_back(r.surrender());  // counted as a spare from now on
    tally_.spare.capacity += pool.size;
    tally_.spare.allocated += pool.size;
  } else {
    r.release();
  }
}

void TcpStack::recycle_rings(Tcb& t) {
  // Done already when the connection went through TIME_WAIT (enter_time_wait).
  if (t.rcvbuf.capacity() == 0 && t.sndbuf.capacity() == 0 && t.held_first == kNoPiece) return;
  t.drop_held();
  give_ring(spare_rcv_, t.rcvbuf);
  give_ring(spare_snd_, t.sndbuf);
}

Listener* TcpStack::listener_for(const FourTuple& t) {
  auto lit = listeners_.find(t.lport);
  if (lit == listeners_.end()) return nullptr;
  if (!listen_family_.empty()) {
    auto f = listen_family_.find(t.lport);
    if (f != listen_family_.end() && !family_admits(f->second, t.raddr)) return nullptr;
  }
  return &lit->second;
}

void TcpStack::restrict_family(uint16_t port, AddrFamily f) {
  if (f == AddrFamily::kAny) {
    listen_family_.erase(port);
  } else {
    listen_family_[port] = f;
  }
}

uint32_t TcpStack::mss_to(IpAddr raddr) const {
  const uint32_t mtu = out_.mtu_to(raddr);
  const uint32_t floor = raddr.is_v4() ? kIpv4MinMtu : kIpv6MinMtu;
  return advertised_mss(mtu ? mtu : floor, ip_header_len(raddr));
}

void TcpStack::join_tx_waiters(Tcb& c) {
  if (!c.tx_waiting) {
    c.tx_waiting = true;
    tx_waiters_.push_back(&c);
  }
}

// One pass over the waiters in arrival order. A connection whose port is still short
// keeps its place; one that is served and fills the queue again joins at the back
// (tx_blocked), behind those that queued meanwhile: round robin, so each waits at most
// one turn of every other waiter.
void TcpStack::serve_tx_turns(Instant now) {
  Guard g(*this);
  now_ = std::max(now_, now);
  tx_turns_.swap(tx_waiters_);
  size_t kept = 0;
  for (size_t i = 0; i < tx_turns_.size(); ++i) {
    Tcb* c = tx_turns_[i];
    if (c->released) continue;
    if (tx_pressure(c->t.raddr)) {
      tx_turns_[kept++] = c;
      continue;
    }
    c->tx_waiting = false;
    tx_serving_ = c;
    c->resume_output(now_);
    tx_serving_ = nullptr;
  }
  tx_turns_.resize(kept);
  for (Tcb* c : tx_waiters_) tx_turns_.push_back(c);
  tx_waiters_.clear();
  for (Tcb* c : tx_turns_) {
    if (c->released) continue;  // destroyed at the end of this call
    tx_waiters_.push_back(c);
  }
  tx_turns_.clear();
}

bool TcpStack::challenge_ack_allowed(Instant now) {
  uint64_t sec = now.ns() / 1000000000ull;
  if (sec != challenge_second_) {
    // As Linux since CVE-2016-5696: a fixed budget shared by all connections tells an
    // off-path attacker, who can count the challenge ACKs he draws, whether his guess
    // hit another connection's window. A budget drawn per second from a keyed hash
    // (unpredictable without the secret) hides that.
    challenge_second_ = sec;
    const uint32_t lim = std::max<uint32_t>(cfg_.challenge_ack_limit, 1);
    challenge_budget_ = (lim + 1) / 2 + static_cast<uint32_t>(isn_.prf(sec) % lim);
  }
  if (challenge_budget_ == 0) {
    ++ctr_.challenge_acks_limited;
    return false;
  }
  --challenge_budget_;
  ++ctr_.challenge_acks;
  return true;
}

void TcpStack::input(IpAddr src, IpAddr dst, const PacketView& seg, bool csum_verified,
                     Instant now) {
  Guard g(*this);
  now_ = now;
  uint8_t hdr_buf[wire::TcpView::kMaxHeaderLen];
  DropReason why{};
  const std::span<const uint8_t> header = read_header(seg, hdr_buf, ctr_.rx_header_pullups, why);
  if (header.empty()) {
    drops_.add(why);
    return;
  }
  const size_t hl = header.size();
  auto v = wire::TcpView::parse(header);
  if (!v) {  // unreachable: the data offset was checked above
    drops_.add(DropReason::kTcpBadDataOffset);
    return;
  }
  if (!csum_verified) {
    uint32_t s = pseudo_sum(src, dst, wire::kIpProtoTcp, static_cast<uint32_t>(seg.size()));
    if (csum_fold(seg.csum(s)) != 0) {
      drops_.add(DropReason::kTcpBadChecksum);
      return;
    }
  }
  auto payload = seg.tail(hl);
  // Sequence space: the payload plus one each for SYN and FIN.
  const auto seq_len =
      static_cast<uint32_t>(payload.size()) + (v->syn() ? 1u : 0u) + (v->fin() ? 1u : 0u);
  Segment s(*v, payload, seq_len);
  if (!v->parse_options(s.opts)) {
    drops_.add(DropReason::kTcpBadOptions);
    return;
  }
  // RFC 9293 3.10.7: SYN+FIN, SYN+RST are never valid; drop them early.
  if ((s.syn() && (s.fin() || s.rst())) || v->src_port() == 0 || v->dst_port() == 0) {
    drops_.add(DropReason::kTcpBadFlags);
    return;
  }
  FourTuple t{dst, src, v->dst_port(), v->src_port()};
  if (Tcb* tcb = find_conn(t); tcb != nullptr) {
    ++ctr_.family.segments_in[tcb->fam];
    if (tcb->state == TcpState::kTimeWait && syn_takes_over(*tcb, t, s, now)) return;
    const bool in_order = tcb->input(s, now);
    if (tcb->released) return;
    if (in_order) {
      if (rx_burst_open_ && now >= tcb->ack_each_until) {  // no loss seen: begin_rx_burst
        if (!tcb->burst_output) {
          tcb->burst_output = true;
          burst_output_.push_back(tcb);
        }
        return;
      }
      tcb->note_window_opened();
    }
    tcb->output(now);
    return;
  }
  ++ctr_.family.segments_in[family_index(src)];
  if (TimeWaitRecord* w = time_waits_.find(t)) {
    time_wait_input(*w, t, s, now);
    return;
  }
  if (Listener* l = listener_for(t)) {
    listen_input(*l, t, s, now);
    return;
  }
  drops_.add(DropReason::kTcpNoListener);
  reset_unknown(t, s, now);
}

void TcpStack::end_rx_burst(Instant now) {
  rx_burst_open_ = false;
  if (burst_output_.empty()) return;
  Guard g(*this);
  now_ = std::max(now_, now);
  flush_burst_output();
}

// Index loop: output() runs no input, but a callback could still ask for more output.
void TcpStack::flush_burst_output() {
  for (size_t i = 0; i < burst_output_.size(); ++i) {
    Tcb* t = burst_output_[i];
    t->burst_output = false;
    if (t->released) continue;
    t->note_window_opened();  // left by header prediction (Tcb::input)
    t->output(now_);
  }
  burst_output_.clear();
}

// RFC 9293 3.10.7.1 / 3.10.7.2: a segment for no connection (or to LISTEN with an
// ACK) is answered with RST, never a RST for a RST.
void TcpStack::send_reset_for(const FourTuple& t, const Segment& s, Instant now) {
  if (s.rst()) return;
  wire::TcpRepr r;
  r.src_port = t.lport;
  r.dst_port = t.rport;
  if (s.has_ack()) {
    r.seq = s.ack;
    r.flags = kRst;
  } else {
    r.seq = SeqNum(0);
    r.ack = s.seq + s.len;
    r.flags = kRst | kAck;
  }
  size_t hl = r.header_len();
  L4Frame f;
  if (!out_.begin(t.laddr, t.raddr, 6, static_cast<uint32_t>(hl), f)) return;
  wire::emit_tcp(f.l4.data(), r);
  out_.commit(f, now);
  ++ctr_.family.segments_out[family_index(t.raddr)];
  ++ctr_.family.resets_sent[family_index(t.raddr)];
}

void TcpStack::reset_unknown(const FourTuple& t, const Segment& s, Instant now) {
  if (s.rst()) return;
  if (!rst_bucket_.take(now)) {
    drops_.add(DropReason::kTcpRstRateLimited);
    return;
  }
  send_reset_for(t, s, now);
}

// Piled up: at least syn_shed_half_open half-open connections and, unless that is 0 (the
// budget alone), more than the listener completed lately (HandshakeRate: handshakes take
// longer than its window). A core that completes handshakes as fast as they arrive holds
// many half-open ones at a high rate; shedding there only costs the peers a SYN timeout.
bool TcpStack::handshakes_piled_up(Listener& l, Instant now) const {
  if (l.syn_queue < cfg_.syn_shed_half_open) return false;
  return cfg_.syn_shed_half_open == 0 || l.syn_queue > l.handshakes.recent(now);
}

void TcpStack::listen_input(Listener& l, const FourTuple& t, Segment& s, Instant now,
                            const IsnGenerator::Initial* init, uint64_t hash) {
  // RFC 9293 3.10.7.2, LISTEN state.
  if (s.rst()) {
    drops_.add(DropReason::kTcpNoConnection);
    return;
  }
  if (s.has_ack()) {
    if (!s.syn() && accept_cookie(l, t, s, now)) return;
    drops_.add(DropReason::kTcpBadAck);
    reset_unknown(t, s, now);
    return;
  }
  if (!s.syn()) {
    drops_.add(DropReason::kTcpBadFlags);
    return;
  }
  // Overload: before any state, SYN,ACK or cookie, a SYN beyond the burst's budget is
  // dropped once handshakes pile up, so the core's time goes to connections already open
  // and the served rate holds; the peer retransmits it (RFC 6298 5.7: after rto_initial).
  if (syn_budget_ == 0 && handshakes_piled_up(l, now)) {
    drops_.add(DropReason::kTcpSynShed);
    return;
  }
  if (syn_budget_ != UINT32_MAX && syn_budget_ != 0) --syn_budget_;
  if (cookie_wanted(l)) {
    send_syn_cookie(l, t, s, now);
    return;
  }
  if (l.syn_queue >= cfg_.syn_backlog) {
    drops_.add(DropReason::kTcpSynQueueFull);
    return;
  }
  if (conns_.size() >= cfg_.max_connections) {
    drops_.add(DropReason::kTcpMaxConnections);
    return;
  }
  Tcb* tcb = new_tcb(t, init, hash);
  tcb->passive = true;
  tcb->listener = &l;
  ++l.syn_queue;
  tcb->irs = s.seq;
  tcb->rcv_nxt = s.seq + 1;
  tcb->last_rx = now;
  // Options: each one only when the peer offered it (RFC 7323 sections 2.2, 3.2;
  // RFC 2018 section 2).
  if (s.opts.mss)
    tcb->peer_mss = std::max<uint32_t>(*s.opts.mss, 64);
  else
    tcb->peer_mss = kDefaultPeerMss;
  tcb->ws_ok = cfg_.window_scaling && s.opts.wscale.has_value();
  if (tcb->ws_ok)
    tcb->snd_wscale = std::min<uint8_t>(*s.opts.wscale, 14);
  else
    tcb->rcv_wscale = 0;
  tcb->ts_ok = cfg_.timestamps && s.opts.ts_val.has_value();
  if (tcb->ts_ok) {
    tcb->ts_recent = *s.opts.ts_val;
    tcb->ts_recent_time = now;
  }
  tcb->sack_ok = cfg_.sack && s.opts.sack_permitted;
  // RFC 7323 2.2: the window in a SYN is never scaled.
  tcb->snd_wnd = s.wnd;
  tcb->max_snd_wnd = s.wnd;
  tcb->snd_wl1 = s.seq;
  tcb->snd_wl2 = tcb->iss;
  tcb->cc->init(tcb->max_payload(false));
  tcb->set_state(TcpState::kSynReceived);
  tcb->send_syn(now);
}

Tcb* TcpStack::new_tcb(const FourTuple& t, const IsnGenerator::Initial* init, uint64_t hash) {
  TcbSlot* slot = take_slot();
  Tcb* tcb = new (slot->mem) Tcb(*this, t);
  tcb->slot = slot;
  tcb->id = next_id_++;
  slot->id = tcb->id;
  tcb->table_hash = hash != 0 ? conns_.insert(t, tcb, hash) : conns_.insert(t, tcb);
  peak_live_ = std::max(peak_live_, conns_.size());
  init_tcb(*tcb, init);
  return tcb;
}

void TcpStack::init_tcb(Tcb& c, const IsnGenerator::Initial* given) {
  Tcb* const tcb = &c;
  const FourTuple& t = c.t;
  tcb->our_mss = mss_to(t.raddr);
  tcb->pmtu.mss = tcb->pmtu.search_high = tcb->our_mss;
  if (const PmtuCache::Entry* e = pmtu_cache_.find(t.raddr, now_); e && e->mss < tcb->our_mss) {
    // Start where an earlier connection to this host is (RFC 1191 section 5), with its
    // recovery deadline and what its search left open: no second walk into the same
    // black hole, no probe of a size already known to fail.
    tcb->pmtu.mss = e->mss;
    tcb->pmtu.search_high = std::max(e->mss, std::min(e->search_high, tcb->our_mss));
    tcb->pmtu.lowered_by = e->by;
    tcb->pmtu.raise_at = e->expires;
    ++ctr_.pmtu_cache_hits;
  }
  const IsnGenerator::Initial init =
      given != nullptr ? *given : isn_.initial({t.laddr, t.lport}, {t.raddr, t.rport}, now_);
  tcb->iss = SeqNum(init.isn);
  tcb->isn_f = init.f;
  tcb->snd_una = tcb->snd_nxt = tcb->snd_max = tcb->iss;
  tcb->snd_buf_seq = tcb->iss + 1;
  tcb->recover = tcb->iss;
  tcb->high_rxt = tcb->iss;
  tcb->rexmit_high = tcb->iss;
  tcb->rack.fack = tcb->iss;
  tcb->pmtu.hold_until = tcb->iss;
  tcb->ts_offset = init.ts_offset;
  tcb->rto = cfg_.rto_initial;
  tcb->cc.emplace(cfg_.congestion);
  tcb->rcv_wscale = offered_wscale();
  uint32_t rb = cfg_.recv_buffer ? cfg_.recv_buffer : cfg_.buffer_initial;
  take_ring(spare_rcv_, rb, tcb->rcvbuf);
  tcb->rcv_buf_target = rb;
  tcb->snd_buf_limit = cfg_.send_buffer ? cfg_.send_buffer : cfg_.buffer_initial;
  tally_.snd_limit += tcb->snd_buf_limit;
}

void TcpStack::release(Tcb* t) {
  if (t->released) return;
  t->released = true;
  if (t->listener) {
    --t->listener->syn_queue;
    t->listener = nullptr;
  }
  if (t->state != TcpState::kClosed) t->set_state(TcpState::kClosed);
  // Entries of the timer queue for this connection are stale from now on.
  t->slot->id = 0;
  // Not inside serve_tx_waiters' pass: that pass drops released connections itself.
  if (t->tx_waiting && tx_turns_.empty()) std::erase(tx_waiters_, t);
  if (last_flow_ == t) last_flow_ = nullptr;
  if (conns_.erase(t->t, t, t->table_hash)) {
    // Out of the table: out of the gauges that count the table's connections.
    --ctr_.state[static_cast<size_t>(TcpState::kClosed)];
    --ctr_.family.state[static_cast<size_t>(TcpState::kClosed)][t->fam];
    tally_.snd_limit -= t->snd_buf_limit;
    graveyard_.push_back(t);
    ++end_work_;
  }
}

bool TcpStack::icmp_error(IpAddr local, IpAddr remote, std::span<const uint8_t> quoted, IcmpError e,
                          uint16_t next_hop_mtu, Instant now, uint16_t quoted_len) {
  Guard g(*this);
  now_ = std::max(now_, now);
  if (quoted.size() < 8) {
    ++ctr_.icmp_ignored;
    ++ctr_.icmp_ignored_short;
    return false;
  }
  FourTuple t{local, remote, load_be16(quoted.data()), load_be16(quoted.data() + 2)};
  Tcb* c = conns_.find(t);
  if (c == nullptr) {
    ++ctr_.icmp_ignored;
    ++ctr_.icmp_ignored_no_connection;
    return false;
  }
  SeqNum seq(load_be32(quoted.data() + 4));
  // RFC 5927 section 4.1: only an error about data in flight can be genuine; a blind
  // attacker has to guess a sequence number inside the window.
  if (!(c->snd_una <= seq && seq < c->snd_max)) {
    ++ctr_.icmp_ignored;
    ++ctr_.icmp_ignored_sequence;
    return true;
  }
  switch (e) {
    case IcmpError::kFragNeeded: {
      // RFC 1191 section 5: an old router reports 0 (or nonsense below the minimum of
      // 68): estimate from the plateau table, below the quoted datagram's length.
      uint32_t mtu = next_hop_mtu;
      if (mtu < 68) mtu = quoted_len > 68 ? mtu_plateau_below(quoted_len) : kPmtuFloorMtu;
      // RFC 5927 section 7.2: a datagram no larger than the reported MTU would have
      // fitted; the message contradicts itself.
      if (quoted_len != 0 && mtu >= quoted_len) {
        ++ctr_.icmp_ignored;
        ++ctr_.icmp_ignored_mtu;
        return true;
      }
      if (c->pmtu_frag_needed(mtu, seq, now_) == IcmpVerdict::kMtuNotLower) {
        ++ctr_.icmp_ignored;
        ++ctr_.icmp_ignored_mtu;
        return true;
      }
      ++ctr_.icmp_accepted;
      break;
    }
    case IcmpError::kPortUnreachable:
      ++ctr_.icmp_accepted;
      // RFC 1122 4.2.3.9 / RFC 5461: a hard error aborts only a connection attempt.
      if (c->state == TcpState::kSynSent) {
        ++ctr_.connect_failed;
        c->finish(CloseReason::kRefused);
      }
      break;
    case IcmpError::kOtherUnreachable:
      ++ctr_.icmp_accepted;
      break;  // soft error: the retransmission timer decides
  }
  return true;
}

bool TcpStack::listen(uint16_t port, ListenCallbacks cbs) {
  if (port == 0 || listeners_.count(port)) return false;
  Listener& l = listeners_[port];
  l.port = port;
  l.cb = std::move(cbs);
  return true;
}

void TcpStack::unlisten(uint16_t port) {
  auto it = listeners_.find(port);
  if (it == listeners_.end()) return;
  // Half-open connections of this listener lose it; they are reset when they complete.
  conns_.for_each([l = &it->second](Tcb* c) {
    if (c->listener == l) c->listener = nullptr;
  });
  listeners_.erase(it);
}

uint16_t TcpStack::pick_port(IpAddr laddr, Endpoint remote, Instant now, TimeWaitRecord*& tw) {
  uint32_t lo = cfg_.ephemeral_low, hi = cfg_.ephemeral_high;
  uint32_t n = hi - lo + 1;
  // Seeded once, then only advanced: a cursor re-seeded when it wraps to 0 would jump back
  // to the seed and never use the ports below it, and every port left out lowers the rate
  // at which a client can cycle through TIME_WAIT takeovers.
  if (!port_cursor_seeded_) {
    port_cursor_ = static_cast<uint16_t>(isn_.ts_offset({laddr, 0}, remote) % n);
    port_cursor_seeded_ = true;
  }
  // The cursor stays below n, so it wraps by a compare, not a division per connection.
  const auto step = [n](uint32_t k) { return k + 1 == n ? 0 : k + 1; };
  uint32_t c = port_cursor_ < n ? port_cursor_ : port_cursor_ % n;
  for (uint32_t i = 0; i < n; ++i) {
    const auto p = static_cast<uint16_t>(lo + c);
    c = step(c);
    if (cfg_.port_ok && !cfg_.port_ok(p, remote)) continue;
    if (listeners_.count(p)) continue;
    FourTuple t{laddr, remote.addr, p, remote.port};
    if (!reuse_time_wait(t, now, tw)) continue;
    port_cursor_ = static_cast<uint16_t>(c);
    prefetch_ports(laddr, remote, static_cast<uint16_t>(lo + c),
                   static_cast<uint16_t>(lo + step(c)));
    return p;
  }
  return 0;
}

Connection* TcpStack::connect(Endpoint remote, ConnCallbacks&& cbs, uint16_t local_port) {
  return connect(remote, std::move(cbs), local_port, now_);
}

Connection* TcpStack::connect(Endpoint remote, ConnCallbacks&& cbs, uint16_t local_port,
                              Instant now) {
  Guard g(*this);
  now_ = std::max(now_, now);
  IpAddr laddr = out_.source_for(remote.addr);
  if (laddr.is_any() || remote.port == 0 || conns_.size() >= cfg_.max_connections) {
    ++ctr_.connect_failed;
    return nullptr;
  }
  TimeWaitRecord* tw = nullptr;
  if (local_port == 0) {
    local_port = pick_port(laddr, remote, now_, tw);
  } else if (!reuse_time_wait({laddr, remote.addr, local_port, remote.port}, now_, tw)) {
    local_port = 0;
  }
  if (local_port == 0) {
    ++ctr_.connect_failed;
    return nullptr;
  }
  Tcb* tcb = tw != nullptr ? take_over_time_wait(*tw)
                           : new_tcb({laddr, remote.addr, local_port, remote.port});
  tcb->cb.swap(cbs);  // a new Tcb's are empty
  tcb->app_visible = true;
  tcb->ws_ok = cfg_.window_scaling;
  tcb->ts_ok = cfg_.timestamps;
  tcb->sack_ok = cfg_.sack;
  tcb->last_rx = now_;
  tcb->cc->init(tcb->max_payload(false));
  tcb->set_state(TcpState::kSynSent);
  ++ctr_.family.connections_opened[family_index(remote.addr)];
  tcb->send_syn(now_);
  return tcb;
}

void TcpStack::push_timer(Tcb* t, Instant d) {
  t->slot->sched_at = d;
  timers_.push_back({d, t->slot});
  std::push_heap(timers_.begin(), timers_.end(), std::greater<TimerEntry>());
  if (timers_.size() > 2 * timers_kept_ + 1024) compact_timers();
}

// Under connection churn most entries belong to connections already gone (an initial
// RTO of 1 s outlives a connection of a few microseconds): without this the queue holds
// a second's worth of dead entries, and every push and pop walks a deeper heap. The queue is
// compacted when it has doubled (plus 1024) since the last compaction left `timers_kept_`:
// at least that many pushes pay for each O(n) pass. Or when as many slots were freed as
// the table holds connections, plus 1024 (destroy()), for the trimming below.
void TcpStack::compact_timers() {
  freed_since_compact_ = 0;
  // A free slot's entries all go (and with them its earliest); a held slot keeps its
  // earliest entry only.
  std::erase_if(timers_, [](const TimerEntry& e) {
    if (e.slot->id != 0) return e.at != e.slot->sched_at;
    e.slot->sched_at = Instant::never();
    return true;
  });
  timers_kept_ = timers_.size();
  std::make_heap(timers_.begin(), timers_.end(), std::greater<TimerEntry>());
  // The queue's array follows its population back down: after an overload it would
  // otherwise keep the capacity of the largest burst. It is sized for what may be pushed
  // before the next compaction.
  const size_t next_bound = 2 * timers_kept_ + 1024 + 1;
  if (timers_.capacity() > 2 * next_bound) {
    std::vector<TimerEntry> v;
    v.reserve(next_bound);
    v.assign(timers_.begin(), timers_.end());
    timers_.swap(v);
  }
  // Only now may a free slot go back to malloc: no entry refers to one any more. What a
  // burst of connections left behind is trimmed here, at the next churn: slots and spare
  // rings are kept for the largest live population seen since the last compaction (at
  // least kMinSpare, at most the fixed bounds), and the connection table's array for it
  // too, so an overload's storage is returned once the load drops instead of being held
  // for ever.
  // The oldest free slots go: the newest are the ones still in cache.
  const size_t live = conns_.size();
  conns_.shrink_for(peak_live_);
  const size_t want = std::max(kMinSpare, peak_live_);
  const size_t keep = want > live ? want - live : 0;
  peak_live_ = live;
  const size_t keep_slots = std::min(kMaxFreeSlots, keep);
  if (free_slots_.size() > keep_slots) {
    size_t excess = free_slots_.size() - keep_slots;
    for (size_t i = 0; i < excess; ++i) delete free_slots_[i];
    free_slots_.erase(free_slots_.begin(), free_slots_.begin() + static_cast<ptrdiff_t>(excess));
    slot_count_ -= excess;
  }
  const size_t keep_rings = std::min(kMaxSpareRings, keep);
  for (SparePool* pool : {&spare_rcv_, &spare_snd_}) {
    auto& b = pool->buffers;
    if (b.size() <= keep_rings) continue;
    const size_t excess = b.size() - keep_rings;
    b.erase(b.begin(), b.begin() + static_cast<ptrdiff_t>(excess));
    tally_.spare.capacity -= excess * pool->size;
    tally_.spare.allocated -= excess * pool->size;
  }
}

Instant TcpStack::poll(Instant now) {
  Guard g(*this);
  now_ = std::max(now_, now);
  rx_burst_open_ = false;  // a burst the caller did not end is over
  flush_burst_output();
  serve_tx_waiters(now_);
  expire_time_waits(now_);
  // Each entry due now runs once per call: one that a handler pushes back due (a deadline
  // it left in the past, which is a bug) waits for the next poll, so such a bug costs a
  // busy core, not a core stuck in this loop.
  for (size_t n = timers_.size(); n > 0 && !timers_.empty() && timers_.front().at <= now_; --n) {
    TimerEntry e = timers_.front();
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<TimerEntry>());
    timers_.pop_back();
    if (e.at == e.slot->sched_at) e.slot->sched_at = Instant::never();
    if (e.slot->id == 0) continue;  // a free slot: a stale entry
    Tcb* c = std::launder(reinterpret_cast<Tcb*>(e.slot->mem));
    if (c->released) continue;
    if (c->next_deadline() <= now_) c->on_timers(now_);
    schedule(c);
  }
  return std::min(timers_.empty() ? Instant::never() : timers_.front().at,
                  time_waits_.next_deadline());
}

void TcpStack::shutdown_all(Instant now) {
  Guard g(*this);
  now_ = std::max(now_, now);
  std::vector<Tcb*> list;
  conns_.for_each([&list](Tcb* c) { list.push_back(c); });
  for (Tcb* c : list) {
    if (c->released) continue;
    if (c->state != TcpState::kTimeWait) c->send_rst(now_);
    c->finish(CloseReason::kStackShutdown);
  }
  while (TimeWaitRecord* w = time_waits_.oldest()) drop_time_wait(*w);
}

TcpTableSizes TcpStack::table_sizes() const {
  TcpTableSizes z;
  z.connections = conns_.size();
  z.time_wait = time_waits_.size();
  z.table_buckets = conns_.capacity();
  z.timer_entries = timers_.size();
  z.timer_capacity = timers_.capacity();
  z.graveyard = graveyard_.size();
  z.slots = slot_count_;
  z.free_slots = free_slots_.size();
  z.spare_rings = spare_rcv_.buffers.size() + spare_snd_.buffers.size();
  return z;
}

// The totals of the per-family counters.
static void sum_families(TcpCounters& c) {
  const TcpFamilyCounters& f = c.family;
  c.segments_in = family_total(f.segments_in);
  c.segments_out = family_total(f.segments_out);
  c.resets_sent = family_total(f.resets_sent);
  c.resets_received = family_total(f.resets_received);
  c.connections_opened = family_total(f.connections_opened);
  c.connections_accepted = family_total(f.connections_accepted);
}

TcpCounters TcpStack::counters() const {
  TcpCounters c = ctr_;
  sum_families(c);
  c.rx_held_pieces = held_pool_.in_use();
  c.rcv_buffer_sum = tally_.rcv.capacity;
  c.snd_buffer_sum = tally_.snd_limit;
  c.bytes_buffered = tally_.rcv.bytes + tally_.snd.bytes + tally_.held;
  c.memory_bytes = tally_.rcv.allocated + tally_.snd.allocated + tally_.heap;
  // Slots (live and free), the spare rings, the connection table and the TIME-WAIT
  // records are memory the stack holds as well.
  c.memory_bytes += slot_count_ * sizeof(TcbSlot) + conns_.memory_bytes() +
                    time_waits_.memory_bytes() + tally_.spare.allocated;
  return c;
}

TcpCounters TcpStack::counters_walked() const {
  TcpCounters c = ctr_;
  sum_families(c);
  c.family.state = {};
  c.state = {};
  conns_.for_each([&c](const Tcb* t) {
    ++c.state[static_cast<size_t>(t->state)];
    ++c.family.state[static_cast<size_t>(t->state)][family_index(t->t.raddr)];
    c.rcv_buffer_sum += t->rcvbuf.capacity();
    c.snd_buffer_sum += t->snd_buf_limit;
    c.bytes_buffered += t->rcv_queued() + t->sndbuf.size();
    c.memory_bytes += t->rcvbuf.allocated() + t->sndbuf.allocated();
    c.memory_bytes += t->txlog.heap_bytes() + t->ooo.heap_bytes();
  });
  time_waits_.for_each([&c](const TimeWaitRecord* w) {
    ++c.state[static_cast<size_t>(TcpState::kTimeWait)];
    ++c.family.state[static_cast<size_t>(TcpState::kTimeWait)][w->fam];
  });
  c.rx_held_pieces = held_pool_.in_use();
  c.memory_bytes +=
      slot_count_ * sizeof(TcbSlot) + conns_.memory_bytes() + time_waits_.memory_bytes();
  for (const SparePool* pool : {&spare_rcv_, &spare_snd_})
    c.memory_bytes += pool->buffers.size() * pool->size;
  return c;
}

}  // namespace ws::tcp
