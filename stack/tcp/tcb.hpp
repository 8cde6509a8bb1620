// The transmission control block (RFC 9293 section 3.3.1) and the per-segment
// context. Logic is split by concern: tcp_input.cpp (segment arrival),
// tcp_output.cpp (building segments), timers.cpp, recovery.cpp (SACK scoreboard,
// PRR, undo; NewReno, RFC 6582), rack.cpp (RACK-TLP, RFC 8985), autotune.cpp (buffer
// right-sizing).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>

#include "stack/core/packet_view.hpp"
#include "stack/core/seqnum.hpp"
#include "stack/core/time.hpp"
#include "stack/tcp/api.hpp"
#include "stack/tcp/congestion/congestion.hpp"
#include "stack/tcp/mss.hpp"
#include "stack/tcp/pmtu.hpp"
#include "stack/tcp/reply_limit.hpp"
#include "stack/tcp/ring_buffer.hpp"
#include "stack/tcp/rx_held.hpp"
#include "stack/tcp/seq_ranges.hpp"
#include "stack/tcp/tx_log.hpp"
#include "stack/wire/tcp.hpp"

namespace ws::tcp {

class TcpStack;
struct Listener;
struct TcbSlot;

// The states in which the peer's data is still accepted (RFC 9293 3.10.7.4, the seventh
// step: ESTABLISHED, FIN-WAIT-1, FIN-WAIT-2).
constexpr bool receives_data(TcpState s) {
  return s == TcpState::kEstablished || s == TcpState::kFinWait1 || s == TcpState::kFinWait2;
}

struct FourTuple {
  IpAddr laddr;
  IpAddr raddr;
  uint16_t lport = 0;
  uint16_t rport = 0;
  bool operator==(const FourTuple&) const = default;
};

// One arriving segment, parsed once (no statics, unlike lwIP's global current-segment state).
struct Segment {
  // Every field but the options from the header; the options from their defaults, for
  // parse_options. A constructor: aggregate initialisation clears the whole segment (136
  // bytes, for every segment received) before it fills it.
  Segment(const wire::TcpView& v, const PacketView& p, uint32_t seq_len)
      : view(v),
        seq(v.seq()),
        ack(v.ack()),
        flags(v.flags()),
        wnd(v.window()),
        payload(p),
        len(seq_len) {}
  wire::TcpView view;
  wire::TcpOptions opts;
  SeqNum seq;
  SeqNum ack;
  uint8_t flags = 0;
  uint32_t wnd = 0;    // raw 16-bit window field
  PacketView payload;  // in the received buffers, possibly several
  uint32_t len = 0;    // sequence space: payload + SYN + FIN
  bool syn() const { return flags & wire::tcpflag::kSyn; }
  bool fin() const { return flags & wire::tcpflag::kFin; }
  bool rst() const { return flags & wire::tcpflag::kRst; }
  bool has_ack() const { return flags & wire::tcpflag::kAck; }
};

class Tcb final : public Connection {
 public:
  Tcb(TcpStack& stack, const FourTuple& t);
  ~Tcb() = default;

  // --- tcp_input.cpp
  // True when header prediction took the segment (in-order data, nothing in flight): all
  // it may leave to send is the ACK of that data, and the caller runs
  // note_window_opened() before the output() that sends it (TcpStack::input, at the end
  // of the receive burst within one: the window check is done once, for the last state).
  bool input(Segment& s, Instant now);
  // The header-predicted cases of input(): in-order data, nothing in flight; in-order data
  // acknowledging everything in flight (the request/response case).
  void input_predicted(Segment& s, Instant now);
  void input_predicted_ack(Segment& s, Instant now);
  // A FIN without data that acknowledges everything in flight (ESTABLISHED, FIN-WAIT).
  void input_predicted_fin(Segment& s, Instant now);
  // Every other segment: RFC 9293 3.10.7 step by step.
  void input_general(Segment& s, Instant now);
  // --- tcp_output.cpp
  // Sends whatever the windows allow plus any pending ACK.
  void output(Instant now);
  void send_syn(Instant now);
  void send_ack(Instant now);
  void send_ack_when_room(Instant now);
  void send_rst(Instant now);
  // A keepalive / zero-window probe: SEG.SEQ = SND.UNA - 1, no data (RFC 1122 4.2.3.6).
  void send_probe(Instant now);
  // --- timers.cpp
  void on_timers(Instant now);
  // Output, then the writer woken when buffers came back: a timer's turn or a turn at
  // the transmit queue (TcpStack::serve_tx_waiters).
  void resume_output(Instant now);
  // Inline: every output() asks for it (TcpStack::schedule).
  Instant next_deadline() const;
  void arm_rto(Instant now) {
    if (rto_at.is_never()) rto_at = now + rto;
  }
  void rtt_sample(Duration r);  // inline (tcp_stack.hpp)
  // --- recovery.cpp
  // Every data transmission (from emit): the transmit log, PRR's count. Inline: once per
  // segment sent, and mostly one new entry for the log (no TSO, nothing sent again).
  void on_transmit(SeqNum seq, uint32_t seqlen, uint32_t tso_segment, Instant now) {
    const uint32_t again = tso_segment == 0 ? txlog.sent(seq, seqlen, now)
                                            : log_tso_pieces(seq, seqlen, tso_segment, now);
    if (again > 0) note_sent_again(seq + seqlen, again);
    if (in_recovery) prr_out += seqlen;
  }
  // A TSO super-segment logged piece by piece; returns the bytes sent before.
  uint32_t log_tso_pieces(SeqNum seq, uint32_t seqlen, uint32_t tso, Instant now);
  // `again` bytes below `end` went out a second time: RACK's and the undo's records.
  void note_sent_again(SeqNum end, uint32_t again);
  // An arriving ACK's SACK blocks, before SND.UNA moves: marks the log, feeds RACK.
  // Returns true when the first block was a D-SACK (RFC 2883).
  bool sack_update(const Segment& s, Instant now);
  void on_dsack(SeqNum l, SeqNum r);
  // An ACK that advances SND.UNA: drops the acknowledged log entries, feeds RACK and
  // the RTT estimator (in rack.cpp, beside RACK's step, which it inlines).
  void log_ack(const Segment& s, Instant now);
  // After the ACK is processed: TLP, RACK loss detection, recovery entry, PRR.
  // `delivered` is RFC 6937's DeliveredData.
  void after_ack(uint32_t acked, uint32_t delivered, bool dupack, bool dsack, const Segment& s,
                 Instant now);
  void frto_on_ack(uint32_t acked, bool dupack);
  void on_dupack_nosack(Instant now);
  void on_new_ack_in_recovery(uint32_t acked, Instant now);
  void enter_recovery(bool by_rack, Instant now);
  void enter_rto_recovery(Instant now);  // marks what the timeout says is lost
  void prr_update(uint32_t delivered);
  void exit_recovery();
  void undo_recovery();
  // Eifel detection on an ACK that advances SND.UNA; true if the recovery was undone.
  bool detect_spurious(const Segment& s);
  uint32_t pipe() const;
  bool recovery_output(Instant now);
  // Retransmits up to one segment of log entry i; false when nothing went out.
  bool retransmit_entry(size_t i, Instant now);
  // --- rack.cpp (RFC 8985)
  void rack_on_delivered(const TxSeg& g, const Segment& s, Instant now);
  void rack_on_dsack();
  Duration rack_reo_wnd() const;
  // Marks lost what RACK deems lost; arms the reordering timer. True if any newly lost.
  bool rack_detect_loss(Instant now);
  // RACK's verdict acted on: a recovery starts when segments are newly lost.
  void rack_check(Instant now);
  void tlp_rearm(Instant now);  // inline, below
  void tlp_fire(Instant now);
  void tlp_on_ack(const Segment& s, bool dupack, bool dsack, Instant now);
  // --- autotune.cpp
  // The application consumed n bytes: counted, and once per receiver RTT the receive
  // buffer is sized after them (autotune_rcv_space). Inline: it runs per segment.
  void autotune_on_consume(size_t n, Instant now) {
    copied += n;
    if (now - rcv_space_time >= rcv_space_rtt()) autotune_rcv_space(now);
  }
  // The round trip autotuning measures over.
  Duration rcv_space_rtt() const {
    return have_rtt ? std::max(srtt, Duration::micros(100)) : Duration::millis(100);
  }
  void autotune_rcv_space(Instant now);
  void autotune_send(Instant now);  // inline (tcp_stack.hpp)
  // Bytes we can advertise from rcv_nxt. Inline: each segment sent asks for it.
  uint32_t rcv_window_now() const;
  uint32_t max_window() const { return 65535u << (ws_ok ? rcv_wscale : 0); }
  // What is left of the window last advertised: RCV.ADV - RCV.NXT, 0 when passed.
  uint32_t offered_window() const {
    const int32_t w = rcv_adv - rcv_nxt;
    return w > 0 ? static_cast<uint32_t>(w) : 0;
  }
  // --- pmtu.cpp (path MTU: RFC 1191, RFC 4821, RFC 8899)
  uint32_t pmtu_ceiling() const;  // the interface's and the peer's MSS
  void pmtu_set(uint32_t mss, Instant now);
  void pmtu_lower(uint32_t mss, PmtuLoweredBy by, Instant now);
  // A validated "fragmentation needed" quoting sequence number `seq`.
  IcmpVerdict pmtu_frag_needed(uint32_t mtu, SeqNum seq, Instant now);
  // From output(): sends a probe segment of new data when one is due.
  ProbeStep mtu_probe(uint32_t pending, int64_t usable, Instant now);
  void pmtu_on_ack(Instant now);      // SND.UNA advanced
  bool pmtu_probe_lost(Instant now);  // duplicate ACKs / SACK: true if handled
  void pmtu_on_rto(Instant now);      // the retransmission timer fired
  void pmtu_timer(Instant now);       // raise_at reached
  void pmtu_probe_failed(uint32_t high, bool resend, Instant now);
  void pmtu_probe_loss(bool resend, Instant now);  // lost, not refused by ICMP
  void pmtu_search_state(Instant now);
  void pmtu_remember(Instant now);  // into the stack's per-destination cache
  // --- lifecycle (tcp_stack.cpp)
  // Inline (tcp_stack.hpp, after the counters it keeps): about eleven state changes per
  // connection.
  inline void set_state(TcpState s);
  void become_established(Instant now);
  // Transmit buffers ran short towards the peer: send() takes nothing and the window
  // stops opening until a re-check 1 ms on finds them back (tcp_output.cpp).
  void set_pressured(Instant now);
  void enter_time_wait(Instant now);
  void finish(CloseReason r);  // to CLOSED, notify the app, schedule release
  void deliver(Instant now);   // hand in-order data to on_data
  // The end of deliver(): ack_now when the window opened by enough to tell the peer.
  // Inline: the end of every input asks, and it mostly finds nothing to tell.
  inline void note_window_opened();
  // Received data kept by reference (rx_held.hpp, rx_held.cpp): hold_rx keeps `p`,
  // in-order bytes that follow everything queued, when the ring and the
  // out-of-order queue are empty; false means copy it. compact_held copies what is
  // held to the front of the ring and gives the buffers back; drop_held gives them
  // back unread.
  bool hold_rx(const PacketView& p);
  void compact_held();
  // Inline: every connection's end asks (recycle_rings), and almost none holds anything.
  void drop_held() {
    if (held_first != kNoPiece || held_bytes != 0) drop_held_pieces();
  }
  void drop_held_pieces();
  // Bytes queued for the application: held, then in the ring.
  size_t rcv_queued() const { return held_bytes + rcvbuf.size(); }

  // Segment emission helper (tcp_output.cpp): seq, payload bytes from the send
  // buffer at `seq`, flags. Returns false when no buffer was available.
  // `tso_segment`: when non-zero, `len` is a whole multiple of it and the port
  // cuts the segment into pieces of that payload size (TSO).
  bool emit(SeqNum seq, uint32_t len, uint8_t flags, Instant now, bool with_syn_opts = false,
            uint32_t tso_segment = 0);
  // pmtu.mss is our interface's MSS lowered to what the path carries (pmtu.cpp). Inline:
  // output, the TX pipeline's MSS, RACK and TLP ask for it several times per segment.
  uint32_t max_payload(bool) const { return effective_send_mss(pmtu.mss, peer_mss, ts_ok); }
  // The window of a segment sent (tcp_output.cpp: emit() alone calls it, inlined there).
  uint16_t window_field();
  SeqNum data_end() const { return snd_buf_seq + static_cast<uint32_t>(sndbuf.size()); }
  uint32_t flight() const { return static_cast<uint32_t>(snd_max - snd_una); }
  // Whether an ACK may grow cwnd: the sender ran into cwnd over the last window, or it is
  // in slow start below twice its largest flight then (so that a window the peer or the
  // application keeps small still lets slow start double what it used). A cwnd the sender
  // never filled is not known to be safe (RFC 9438 section 5.8, RFC 7661 section 4).
  bool cwnd_in_use() const {
    return cwnd_limited || (cc->cwnd() < cc->ssthresh() && cc->cwnd() < 2 * cwnd_max_flight);
  }
  bool fin_acked() const { return fin_sent && snd_una == fin_seq + 1; }
  uint32_t ts_now(Instant now) const {
    return static_cast<uint32_t>(now.ns() / 1000000) + ts_offset;
  }

  TcpStack& stack;
  FourTuple t;
  uint64_t id = 0;          // never 0: its slot's id while it lives there (TcbSlot)
  TcbSlot* slot = nullptr;  // where the stack keeps this Tcb
  uint64_t table_hash = 0;  // the connection table's hash of `t` (ConnTable::insert)
  TcpState state = TcpState::kClosed;
  // family_index(t.raddr), kept so that the per-family counters (TcpCounters::family)
  // cost the segment paths one byte load, not a comparison of the address.
  uint8_t fam = 0;
  ConnCallbacks cb;
  Listener* listener = nullptr;  // passive open not yet accepted
  bool passive = false;
  bool app_visible = false;  // the app holds a handle (connect, or accepted)
  bool notified = false;     // on_closed has run
  bool released = false;     // queued for deletion
  bool app_closed = false;   // close(): discard further input
  bool peer_fin_notified = false;
  bool want_writable = false;
  size_t send_reserved = 0;  // bytes the last Connection::send_reserve() offered
  bool pressured = false;    // under transmit-buffer pressure
  bool tx_waiting = false;   // queued for a turn at the transmit queue (TcpStack::tx_blocked)
  bool delivering = false;
  bool burst_output = false;   // output held for the end of the receive burst (TcpStack)
  bool output_queued = false;  // in TcpStack::pending_output_, no output() since
  // While on_data reads a segment's payload in place (tcp_input.cpp): its bytes
  // not consumed yet, counted by readable() as if they were buffered.
  size_t direct_unread = 0;

  // Send sequence space (RFC 9293 3.3.1).
  SeqNum iss, snd_una, snd_nxt, snd_max;
  SeqNum snd_wl1, snd_wl2;
  uint32_t snd_wnd = 0;      // peer's window in bytes (already scaled)
  uint32_t max_snd_wnd = 0;  // RFC 5961 section 5.2
  ByteRing sndbuf;           // data from snd_buf_seq on
  SeqNum snd_buf_seq;
  uint32_t snd_buf_limit = 0;
  bool fin_queued = false;
  bool fin_sent = false;
  SeqNum fin_seq;

  // Receive sequence space.
  SeqNum irs, rcv_nxt;
  SeqNum rcv_adv;  // right edge last advertised
  // In-order unread bytes: first the held pieces (held_first..held_last, from the
  // stack's HeldPool), then the ring; out-of-order bytes lie beyond the ring's size().
  uint32_t held_first = kNoPiece;
  uint32_t held_last = kNoPiece;
  size_t held_bytes = 0;
  uint32_t holder_index = kNoPiece;  // place in TcpStack::holders_ while anything is held
  ByteRing rcvbuf;
  GrowingSeqRanges ooo;  // out-of-order data: one range per hole above RCV.NXT
  // Out-of-order segments received lately, newest first: their blocks lead the SACK
  // option in that order (RFC 2018 section 4), so a block survives lost ACKs.
  std::array<SeqNum, 4> sack_recent{};
  uint8_t sack_recent_n = 0;
  void note_ooo_segment(SeqNum seq);
  void ack_out_of_order(bool blocks_changed, Instant now);
  size_t fill_sack_blocks(std::array<wire::SackBlock, 4>& out, size_t k) const;
  std::optional<SeqNum> ooo_fin;
  bool fin_received = false;

  // Options (RFC 7323, RFC 2018).
  uint32_t our_mss = 536;  // advertised
  uint32_t peer_mss = 536;
  uint8_t snd_wscale = 0;
  uint8_t rcv_wscale = 0;
  bool ws_ok = false;
  bool ts_ok = false;
  bool sack_ok = false;
  uint32_t ts_offset = 0;
  uint32_t isn_f = 0;  // F of RFC 6528 for this tuple (IsnGenerator::Initial::f)
  uint32_t ts_recent = 0;
  Instant ts_recent_time;
  UnacceptableReplyLimit unacceptable_replies;  // reply_unacceptable, tcp_input.cpp
  SeqNum last_ack_sent;

  // RTT and retransmission (RFC 6298).
  Duration srtt, rttvar, rto;
  bool have_rtt = false;
  bool rtt_timing = false;
  SeqNum rtt_seq;
  Instant rtt_time;
  uint32_t retries = 0;
  bool syn_retransmitted = false;
  Instant rto_at = Instant::never();
  Instant delack_at = Instant::never();
  Instant persist_at = Instant::never();
  uint32_t persist_backoff = 0;
  uint32_t persist_unanswered = 0;  // zero-window probes since the peer's last ACK
  Instant keepalive_at = Instant::never();
  uint32_t keepalive_sent = 0;
  Instant tw_at = Instant::never();
  Instant retry_at = Instant::never();  // no buffer at last output: try again
  // While `pressured`: when to look at the transmit buffers again (a fixed instant, not
  // "now + 1 ms" recomputed at every look, which a timer can never reach).
  Instant pressure_at = Instant::never();
  Instant last_rx;
  Duration rx_gap;  // between the last two acceptable segments (note_arrival)

  // Congestion control and loss recovery (recovery.cpp, rack.cpp).
  CongestionSlot cc;  // inside the Tcb: no allocation per connection
  TxLog txlog;        // every segment in flight: the SACK scoreboard, RACK's xmit times
  bool in_recovery = false;
  bool rto_recovery = false;  // after a timeout: slow start through the lost segments
  // F-RTO (RFC 5682 section 3) after a first timeout without timestamps: 1 waits for the
  // first ACK, 2 for the second; retransmissions other than the first wait meanwhile.
  uint8_t frto = 0;
  SeqNum recover;      // RecoveryPoint (RFC 6675) / recover (RFC 6582)
  SeqNum high_rxt;     // NewReno and path MTU probes: highest byte resent
  SeqNum rexmit_high;  // no entry above this in the log was ever retransmitted
  uint32_t dupacks = 0;
  // Reordering tolerance of the duplicate-ACK threshold (connections without SACK).
  uint32_t dupthresh = 3;
  // Whether the sender uses cwnd (RFC 9438 section 5.8; the bookkeeping is Linux's
  // tcp_cwnd_validate): over a window of data, was it held by cwnd, and how much did it
  // have in flight at most. cwnd grows only then (cwnd_in_use).
  SeqNum cwnd_window_end;        // the window observed ends when SND.UNA passes this
  uint32_t cwnd_max_flight = 0;  // bytes
  bool cwnd_limited = false;
  // Proportional Rate Reduction (RFC 6937 section 3).
  uint32_t prr_delivered = 0;
  uint32_t prr_out = 0;
  uint32_t recover_fs = 0;
  // RACK (RFC 8985 section 6.1).
  struct Rack {
    Instant xmit;  // RACK.xmit_ts: latest transmission delivered
    SeqNum end;    // RACK.end_seq
    SeqNum fack;   // highest end delivered (RACK.fack)
    Duration rtt;  // RACK.rtt
    Duration min_rtt = Duration::max();
    bool valid = false;  // xmit/end hold a delivered segment
    bool reordering_seen = false;
    uint32_t reo_wnd_mult = 1;
    uint32_t reo_wnd_persist = 0;
    SeqNum dsack_round;  // no second increase of the multiplier before this is ACKed
    bool dsack_round_on = false;
    Instant reo_at = Instant::never();  // the reordering timer
  } rack;
  // Tail loss probe (RFC 8985 section 7).
  Instant tlp_at = Instant::never();
  bool tlp_out = false;      // a probe awaits its acknowledgment (TLP.end_seq valid)
  bool tlp_retrans = false;  // it was a retransmission
  SeqNum tlp_end;
  // Undo of a reduction found spurious: Eifel with timestamps (RFC 3522, RFC 4015) and
  // D-SACK (RFC 2883 section 4 / RFC 3708): every retransmission of the episode reported
  // as a duplicate.
  bool undo_valid = false;  // an episode's state is saved
  bool undo_eifel = false;  // ... and its first retransmission can be told by timestamp
  uint32_t undo_cwnd = 0;
  uint32_t undo_ssthresh = 0;
  uint32_t undo_ts = 0;
  uint32_t undo_retrans = 0;  // bytes retransmitted in the episode not yet D-SACKed
  SeqNum undo_seq;
  Instant undo_rack_xmit;  // RACK.xmit_ts and end_seq when the episode began
  SeqNum undo_rack_end;
  // D-SACK to send (RFC 2883): a duplicate segment arrived below RCV.NXT.
  bool dsack_pending = false;
  SeqNum dsack_left, dsack_right;

  // Path MTU (pmtu.hpp).
  PmtuState pmtu;

  // Delayed ACK.
  bool ack_pending = false;
  bool ack_now = false;
  uint32_t unacked_bytes = 0;
  uint32_t last_emit_len = 0;
  uint32_t rcv_mss = 536;  // largest segment seen from the peer
  // When a delayed ACK is due (tcp_output.cpp).
  Instant delack_due(Instant now) const;
  // A pure ACK sent while loss is about goes out once more if a silence follows it
  // (arm_ack_repeat, tcp_output.cpp): armed, its timer is delack_at; fired, no other
  // repeat until a segment arrives (note_arrival).
  enum class AckRepeat : uint8_t { kIdle, kArmed, kFired };
  AckRepeat ack_repeat = AckRepeat::kIdle;
  void arm_ack_repeat(Instant now);
  // Segments to ACK at once: at the start, and after a silence longer than the RTO
  // (note_arrival); cf. Linux's quick-ACK mode.
  static constexpr uint32_t kQuickAcks = 16;
  uint32_t quickack = kQuickAcks;
  // Until then, in-order data is ACKed as it arrives (at least every second segment), not
  // once per receive burst (TcpStack::input): for an RTO after a sign of loss on the path
  // (note_loss_sign: data out of order or twice, data after a silence longer than the RTO).
  Instant ack_each_until;
  void note_loss_sign(Instant now) { ack_each_until = now + rto; }
  // SACK compression while data arrives out of order (ack_out_of_order).
  SeqNum comp_rcv_nxt;
  uint8_t comp_dupacks = 0;  // duplicate ACKs sent at once for comp_rcv_nxt
  uint8_t comp_held = 0;     // out-of-order segments whose ACK is held

  // Autotuning (Linux dynamic right-sizing, cf. tcp_rcv_space_adjust).
  uint32_t rcv_space = 0;
  uint64_t copied = 0;
  Instant rcv_space_time;
  uint32_t rcv_buf_target = 0;
  // Until then the receive buffer is growing (its last step enlarged it): in-order data is
  // ACKed at once, none held for a delayed ACK (ack_in_order, tcp_input.cpp).
  Instant rcv_growing_until;

  // Statistics.
  uint64_t stat_retrans = 0;
  uint64_t stat_sent = 0;
  uint64_t stat_recv = 0;
};

// Offers held received bytes to on_data in order (rx_held.cpp); false when the
// application left some unread.
bool deliver_held(Tcb& t, Instant now);

inline Instant Tcb::next_deadline() const {
  Instant d = earliest(earliest(rto_at, delack_at), earliest(persist_at, keepalive_at));
  d = earliest(d, earliest(tw_at, retry_at));
  d = earliest(d, pmtu.raise_at);
  d = earliest(d, earliest(rack.reo_at, tlp_at));
  d = earliest(d, pressure_at);
  return d;
}

inline uint32_t Tcb::rcv_window_now() const {
  uint32_t cap = static_cast<uint32_t>(rcvbuf.capacity());
  // What the window field can express (RFC 7323 2.3): 65535 << our shift.
  // Held bytes (rx_held.hpp) count like those in the ring: they are unread data.
  uint32_t free = std::min<uint32_t>(
      cap - static_cast<uint32_t>(std::min<size_t>(rcv_queued(), cap)), max_window());
  const uint32_t cur = offered_window();
  // Under transmit-buffer pressure the right edge stops moving: the window closes as
  // data arrives instead of the stack freezing (recovers when buffers return).
  if (pressured) return std::min(cur, free);
  // Receiver SWS avoidance (RFC 9293 3.8.6.2.2): move the edge in steps of at least
  // min(buffer/2, MSS).
  SeqNum edge = rcv_nxt + free;
  if (edge - rcv_adv < static_cast<int32_t>(std::min(cap / 2, our_mss))) return std::min(cur, free);
  return free;
}

// Tell the peer when the window opened noticeably (RFC 9293 3.8.6.2.2: only in steps of
// min(buffer/2, MSS), which also avoids silly window syndrome).
inline void Tcb::note_window_opened() {
  if (!receives_data(state)) return;
  const uint32_t cap = static_cast<uint32_t>(rcvbuf.capacity());
  const int32_t step = static_cast<int32_t>(std::min<uint32_t>(cap / 2, 2 * our_mss));
  // The free space bounds the window from above: when even it would not move the edge by a
  // step, the window (its SWS rules, its scale) need not be worked out. It does not on
  // nearly every call, after data that the application took at once.
  const uint32_t free = cap - static_cast<uint32_t>(std::min<size_t>(rcv_queued(), cap));
  if ((rcv_nxt + free) - rcv_adv < step) return;
  if ((rcv_nxt + rcv_window_now()) - rcv_adv >= step) ack_now = true;
}

// RFC 8985 section 7.2: a probe timeout after new data goes out or an ACK arrives,
// unless recovering or already holding SACKed data (RACK covers those). Inline: every
// output() that leaves data in flight rearms it.
inline void Tcb::tlp_rearm(Instant now) {
  // RFC 8985 section 7.2: the worst-case delayed-ACK time, added to the PTO when only one
  // segment is in flight; the slack otherwise; the floor.
  constexpr Duration kWcDelAckT = Duration::millis(200);
  constexpr Duration kPtoSlack = Duration::millis(2);
  constexpr Duration kPtoMin = Duration::millis(10);
  tlp_at = Instant::never();
  if (!sack_ok || in_recovery || tlp_out || snd_una == snd_max || txlog.sacked_bytes() > 0) return;
  Duration pto = have_rtt ? srtt * 2 : Duration::seconds(1);
  // A single segment may wait for the peer's delayed ACK; otherwise a little slack for
  // ACK scheduling, and a floor (as Linux) where the RTT is tiny.
  pto += flight() <= max_payload(false) ? kWcDelAckT : kPtoSlack;
  pto = std::max(pto, kPtoMin);
  // Never later than the timeout it stands in for (on_timers runs the probe first).
  tlp_at = earliest(now + pto, rto_at);
}

}  // namespace ws::tcp
