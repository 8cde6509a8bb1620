// The transmission control block (RFC 9293 section 3.3.1) and the per-segment
// context. Logic is split by concern: tcp_input.cpp (segment arrival),
// tcp_output.cpp (building segments), timers.cpp, recovery.cpp (SACK scoreboard,
// RFC 6675; NewReno, RFC 6582), autotune.cpp (buffer right-sizing).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "stack/core/packet_view.hpp"
#include "stack/core/seqnum.hpp"
#include "stack/core/time.hpp"
#include "stack/tcp/api.hpp"
#include "stack/tcp/congestion/congestion.hpp"
#include "stack/tcp/pmtu.hpp"
#include "stack/tcp/ring_buffer.hpp"
#include "stack/tcp/rx_held.hpp"
#include "stack/tcp/seq_ranges.hpp"
#include "stack/wire/tcp.hpp"

namespace ws::tcp {

class TcpStack;
struct Listener;
struct TcbSlot;

struct FourTuple {
  Ipv4Addr laddr;
  uint16_t lport = 0;
  Ipv4Addr raddr;
  uint16_t rport = 0;
  bool operator==(const FourTuple&) const = default;
};

struct FourTupleHash {
  size_t operator()(const FourTuple& t) const {
    uint64_t x = (uint64_t{t.laddr.v} << 32 | t.raddr.v) ^
                 (uint64_t{t.lport} << 16 | t.rport) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return static_cast<size_t>(x);
  }
};

// One arriving segment, parsed once (no statics, unlike lwIP's global current-segment state).
struct Segment {
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
  void input(Segment& s, Instant now);
  // --- tcp_output.cpp
  // Sends whatever the windows allow plus any pending ACK.
  void output(Instant now);
  void send_syn(Instant now);
  void send_ack(Instant now);
  void send_rst(Instant now);
  // A keepalive / zero-window probe: SEG.SEQ = SND.UNA - 1, no data (RFC 1122 4.2.3.6).
  void send_probe(Instant now);
  // --- timers.cpp
  void on_timers(Instant now);
  Instant next_deadline() const;
  void arm_rto(Instant now);
  void rtt_sample(Duration r);
  // --- recovery.cpp
  void sack_update(const wire::TcpOptions& o);
  // Returns true when the segment was handled as part of loss recovery.
  void on_dupack_or_sack(Instant now);
  void on_new_ack_in_recovery(uint32_t acked, Instant now);
  // Eifel detection on an ACK that advances SND.UNA; true if the recovery was undone.
  bool detect_spurious(const Segment& s);
  uint32_t pipe() const;
  SeqNum lost_boundary() const;
  bool recovery_output(Instant now);
  // --- autotune.cpp
  void autotune_on_consume(size_t n, Instant now);
  void autotune_send(Instant now);
  uint32_t rcv_window_now() const;  // bytes we can advertise from rcv_nxt
  uint32_t max_window() const { return 65535u << (ws_ok ? rcv_wscale : 0); }
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
  void pmtu_search_state(Instant now);
  void pmtu_remember(Instant now);  // into the stack's per-destination cache
  // --- lifecycle (tcp_stack.cpp)
  void set_state(TcpState s);
  void become_established(Instant now);
  void enter_time_wait(Instant now);
  void finish(CloseReason r);  // to CLOSED, notify the app, schedule release
  void deliver(Instant now);   // hand in-order data to on_data
  // Received data kept by reference (rx_held.hpp, rx_held.cpp): hold_rx keeps `p`,
  // in-order bytes that follow everything queued, when the ring and the
  // out-of-order queue are empty; false means copy it. compact_held copies what is
  // held to the front of the ring and gives the buffers back; drop_held gives them
  // back unread.
  bool hold_rx(const PacketView& p);
  void compact_held();
  void drop_held();
  // Bytes queued for the application: held, then in the ring.
  size_t rcv_queued() const { return held_bytes + rcvbuf.size(); }

  // Segment emission helper (tcp_output.cpp): seq, payload bytes from the send
  // buffer at `seq`, flags. Returns false when no buffer was available.
  // `tso_segment`: when non-zero, `len` is a whole multiple of it and the port
  // cuts the segment into pieces of that payload size (TSO).
  bool emit(SeqNum seq, uint32_t len, uint8_t flags, Instant now, bool with_syn_opts = false,
            uint32_t tso_segment = 0);
  uint32_t max_payload(bool sack_blocks) const;
  uint16_t window_field();
  SeqNum data_end() const { return snd_buf_seq + static_cast<uint32_t>(sndbuf.size()); }
  uint32_t flight() const { return static_cast<uint32_t>(snd_max - snd_una); }
  bool fin_acked() const { return fin_sent && snd_una == fin_seq + 1; }
  uint32_t ts_now(Instant now) const {
    return static_cast<uint32_t>(now.ns() / 1000000) + ts_offset;
  }

  TcpStack& stack;
  FourTuple t;
  uint64_t id = 0;                      // key of the timer queue
  TcbSlot* slot = nullptr;              // where the stack keeps this Tcb
  Instant sched_at = Instant::never();  // earliest queued timer entry
  TcpState state = TcpState::kClosed;
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
  bool delivering = false;
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
  SeqRanges<8> ooo;
  SeqNum last_ooo_left;  // most recent out-of-order block (RFC 2018 section 4)
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
  uint32_t ts_recent = 0;
  Instant ts_recent_time;
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
  Instant keepalive_at = Instant::never();
  uint32_t keepalive_sent = 0;
  Instant tw_at = Instant::never();
  Instant retry_at = Instant::never();  // no buffer at last output: try again
  Instant last_rx;

  // Congestion control and loss recovery.
  CongestionSlot cc;  // inside the Tcb: no allocation per connection
  bool in_recovery = false;
  SeqNum recover;  // RecoveryPoint (RFC 6675) / recover (RFC 6582)
  SeqNum high_rxt;
  uint32_t dupacks = 0;
  SeqRanges<32> scoreboard;
  // Reordering tolerance: DupThresh grows when a recovery proves spurious.
  uint32_t dupthresh = 3;
  // Spurious retransmission detection with timestamps (Eifel, RFC 3522) and the
  // undo of the window reduction (RFC 4015).
  bool undo_valid = false;
  uint32_t undo_cwnd = 0;
  uint32_t undo_ssthresh = 0;
  uint32_t undo_ts = 0;
  SeqNum undo_seq;

  // Path MTU (pmtu.hpp).
  PmtuState pmtu;

  // Delayed ACK.
  bool ack_pending = false;
  bool ack_now = false;
  uint32_t unacked_bytes = 0;
  uint32_t last_emit_len = 0;
  uint32_t rcv_mss = 536;  // largest segment seen from the peer
  uint32_t quickack = 16;  // segments to ACK at once at start (cf. Linux quickack)

  // Autotuning (Linux dynamic right-sizing, cf. tcp_rcv_space_adjust).
  uint32_t rcv_space = 0;
  uint64_t copied = 0;
  Instant rcv_space_time;
  uint32_t rcv_buf_target = 0;

  // Statistics.
  uint64_t stat_retrans = 0;
  uint64_t stat_sent = 0;
  uint64_t stat_recv = 0;
};

// Offers held received bytes to on_data in order (rx_held.cpp); false when the
// application left some unread.
bool deliver_held(Tcb& t, Instant now);

}  // namespace ws::tcp
