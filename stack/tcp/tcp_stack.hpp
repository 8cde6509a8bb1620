// One TcpStack per data-plane core (shared-nothing): its connection table, listen
// sockets, port allocation and timers. Only that core calls into it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/l4_output.hpp"
#include "stack/core/time.hpp"
#include "stack/core/token_bucket.hpp"
#include "stack/tcp/api.hpp"
#include "stack/tcp/buffer_tally.hpp"
#include "stack/tcp/conn_table.hpp"
#include "stack/tcp/isn.hpp"
#include "stack/tcp/overload.hpp"
#include "stack/tcp/pmtu_cache.hpp"
#include "stack/tcp/syncookie.hpp"
#include "stack/tcp/tcb.hpp"
#include "stack/tcp/time_wait.hpp"

namespace ws::tcp {

// Loss recovery events by kind (wirespeed_tcp_recovery_total{kind}): a recovery entered
// on the duplicate-ACK threshold (no SACK), one entered because RACK deemed segments lost
// by time, a tail loss probe sent, a retransmission timeout, a reduction undone as
// spurious (Eifel timestamps or D-SACK).
enum class RecoveryKind : uint8_t { kFast, kRack, kTlp, kRto, kSpurious };
inline constexpr size_t kRecoveryKinds = 5;

// The TCP counters kept per address family, each indexed by family_index() of the
// segment's or connection's remote address.
struct TcpFamilyCounters {
  FamilyCount segments_in{};
  FamilyCount segments_out{};
  FamilyCount resets_sent{};
  FamilyCount resets_received{};
  FamilyCount connections_opened{};       // active opens started
  FamilyCount connections_accepted{};     // passive opens handed to the app
  FamilyCount connections_established{};  // connections that reached ESTABLISHED
  // Gauge: connections in the table by TcpState (kept up to date by every state change).
  std::array<FamilyCount, kTcpStateCount> state{};
};

struct TcpCounters {
  // The totals of the family counters below, filled by counters(): TCP counts into
  // `family` only (a connection indexes it by its Tcb::fam byte), never twice.
  uint64_t segments_in = 0;
  uint64_t segments_out = 0;
  uint64_t retransmits = 0;
  uint64_t resets_sent = 0;
  uint64_t resets_received = 0;
  uint64_t challenge_acks = 0;
  uint64_t challenge_acks_limited = 0;     // not sent: over the second's budget
  uint64_t unacceptable_acks_limited = 0;  // replies to data-less segments not sent
  uint64_t connections_opened = 0;         // active opens started
  uint64_t connections_accepted = 0;       // passive opens handed to the app
  uint64_t connections_closed = 0;
  uint64_t connect_failed = 0;
  uint64_t timeouts = 0;
  uint64_t fast_retransmits = 0;
  uint64_t spurious_recoveries = 0;  // undone by Eifel detection (RFC 3522/4015)
  uint64_t rto_fired = 0;
  uint64_t acks_repeated = 0;            // pure ACKs sent again after a silence (arm_ack_repeat)
  uint64_t paws_reordered_accepted = 0;  // PAWS-old new data let through (paws.hpp)
  std::array<uint64_t, kRecoveryKinds> recovery{};  // by RecoveryKind
  uint64_t zero_window_probes = 0;
  uint64_t keepalive_probes = 0;
  uint64_t time_wait_reused = 0;
  uint64_t time_wait_overflow = 0;  // closed at once: time_wait_max TIME_WAIT blocks held
  uint64_t output_no_buffer = 0;
  uint64_t icmp_accepted = 0;               // ICMP errors that matched a connection
  uint64_t icmp_ignored = 0;                // the sum of the four reasons below
  uint64_t icmp_ignored_short = 0;          // fewer than 8 bytes of TCP header quoted
  uint64_t icmp_ignored_no_connection = 0;  // quoted 4-tuple matches no connection
  uint64_t icmp_ignored_sequence = 0;       // quoted SEQ outside SND.UNA..SND.MAX (RFC 5927)
  uint64_t icmp_ignored_mtu = 0;            // frag-needed MTU not below the current one, or not
                                            // below the quoted datagram's length
  // Path MTU (RFC 1191, RFC 4821 / RFC 8899; stack/tcp/pmtu.cpp).
  uint64_t pmtu_reductions = 0;   // ICMP or black-hole detection lowered a send MSS
  uint64_t pmtu_increases = 0;    // a probe succeeded or the recovery timer raised it
  uint64_t pmtu_black_holes = 0;  // repeated timeouts of full-sized segments
  uint64_t pmtu_probes_sent = 0;
  uint64_t pmtu_probes_succeeded = 0;
  uint64_t pmtu_probes_failed = 0;
  uint64_t pmtu_cache_hits = 0;     // connections that started from a remembered path MTU
  uint64_t tso_super_segments = 0;  // segments handed to the port to cut (TSO)
  // SYN cookies (syncookie.hpp): SYN,ACKs sent with a cookie, ACKs that returned a valid
  // one (connections made), ACKs whose cookie was forged, damaged or expired.
  uint64_t syncookies_sent = 0;
  uint64_t syncookies_valid = 0;
  uint64_t syncookies_invalid = 0;
  // Receive path (tcp_input.cpp): TCP headers that straddled buffers and were
  // pulled up; in-order payload bytes on_data consumed straight from the packet;
  // payload bytes copied into receive buffers (unconsumed or out of order).
  uint64_t rx_header_pullups = 0;
  uint64_t rx_predicted = 0;  // segments taken by header prediction (tcp_input.cpp)
  uint64_t rx_bytes_direct = 0;
  uint64_t rx_bytes_buffered = 0;
  uint64_t rx_bytes_held = 0;      // kept in the received buffers (rx_held.hpp)
  uint64_t rx_held_compacted = 0;  // of those, copied into rings when the owner ran low
  uint64_t rx_hold_refused = 0;    // holds the owner refused (its pool was low): copied
  uint64_t rx_held_pieces = 0;     // gauge: pieces held now (counters() fills it)
  std::array<uint64_t, kTcpStateCount> state{};  // gauge: the totals of family.state
  // Gauges, read by counters() from running sums (BufferTally), not by a walk.
  uint64_t rcv_buffer_sum = 0;  // current (autotuned) receive buffer sizes
  uint64_t snd_buffer_sum = 0;  // current send buffer limits
  uint64_t bytes_buffered = 0;  // payload bytes held in send and receive buffers
  uint64_t memory_bytes = 0;    // buffer storage allocated
  TcpFamilyCounters family;
};

// Sizes of the stack's own tables, for tests and benchmarks that check that they return
// to a baseline under connection churn (docs/tcp.md, "Memory and timers").
struct TcpTableSizes {
  size_t connections = 0;    // entries in the connection table
  size_t time_wait = 0;      // TIME-WAIT records (TimeWaitTable), not in the table
  size_t table_buckets = 0;  // entries of the connection table's array (ConnTable)
  size_t timer_entries = 0;  // queued timer entries, stale ones included
  size_t timer_capacity = 0;
  size_t graveyard = 0;  // connections released during the current call
  size_t slots = 0;      // Tcb slots allocated (live + free)
  size_t free_slots = 0;
  size_t spare_rings = 0;  // empty ring buffers kept for the next connections
};

// ICMP errors the IP layer passes up (RFC 1122 4.2.3.9, RFC 5461).
enum class IcmpError : uint8_t {
  kFragNeeded,        // type 3 code 4: Path MTU discovery (RFC 1191)
  kPortUnreachable,   // type 3 code 3 / protocol unreachable: hard in SYN_SENT
  kOtherUnreachable,  // soft errors: net/host unreachable, time exceeded
};

struct Listener {
  uint16_t port = 0;
  ListenCallbacks cb;
  uint32_t syn_queue = 0;    // connections in SYN_RECEIVED
  HandshakeRate handshakes;  // completed recently: no shedding while they keep pace
  // In auto mode, ACKs are checked for a cookie until then (two key periods after the
  // last cookie sent); before, an ACK to the listener is answered with RST as usual.
  Instant cookies_until;
};

// Storage for one Tcb, reused by later connections. `id` names the Tcb living in it (0
// while free or released). Timer entries belong to the slot, not to one connection:
// `sched_at` is its earliest queued entry, and it wakes whichever connection lives there
// then. A connection in a slot whose entry is queued no later than its own deadline (its
// predecessor's SYN timeout or probe, under churn) pushes none.
struct TcbSlot {
  uint64_t id = 0;
  Instant sched_at = Instant::never();
  alignas(Tcb) std::byte mem[sizeof(Tcb)]{};  // zeroed once, when the slot is made
};

class TcpStack {
 public:
  // Received buffers held at once per stack (per core); beyond that, bytes are copied.
  static constexpr size_t kHeldPieces = 4096;
  TcpStack(L4Output& out, DropCounters& drops, TcpConfig cfg);
  ~TcpStack();
  TcpStack(const TcpStack&) = delete;
  TcpStack& operator=(const TcpStack&) = delete;

  // Every IPv4 packet with protocol 6 addressed to us (header already validated).
  // The segment may span several buffers; in-order payload is offered to the
  // application straight from them (tcp_input.cpp, receive_data).
  void input(IpAddr src, IpAddr dst, const PacketView& tcp_segment, bool csum_verified,
             Instant now);
  void input(IpAddr src, IpAddr dst, std::span<const uint8_t> tcp_segment, bool csum_verified,
             Instant now) {
    input(src, dst, PacketView(tcp_segment), csum_verified, now);
  }
  // Runs due timers and pending output; returns the next deadline (never() if none).
  Instant poll(Instant now);
  // The earliest timer armed now (never() if none), without running any: what poll() would
  // return. Timers armed since the last poll() (a send arms the retransmission timer)
  // are included; a lazily deleted entry can make it early, never late.
  Instant next_due() const { return timers_.empty() ? Instant::never() : timers_.front().at; }
  // Gives the connections waiting behind the transmit-pressure mark their turns, oldest
  // first, on every port that has buffers again (tx_blocked). The data plane calls it once
  // per loop iteration, before it hands queued frames to the rings; poll() calls it too.
  void serve_tx_waiters(Instant now) {
    if (!tx_waiters_.empty()) serve_tx_turns(now);  // inline: called every loop iteration
  }
  // The data plane's word before each receive burst is processed: it got `got` frames of
  // at most `burst` from a queue of `ring` descriptors. Once the core is behind
  // (OverloadGate: bursts full for long, over several rings of frames), new SYNs get
  // TcpConfig::syn_burst_budget per burst until a burst is not full.
  void rx_burst(uint32_t got, uint32_t burst, uint32_t ring, Instant now) {
    overload_.burst(got, burst, ring, now);
    const bool behind = cfg_.syn_burst_budget != 0 && overload_.behind(now);
    syn_budget_ = behind ? cfg_.syn_burst_budget : UINT32_MAX;
  }

  // A receive burst of the data plane (Stack::begin_rx_burst .. end_rx_burst). Within it,
  // a connection that got in-order data by header prediction sends nothing until the
  // burst ends; then one output() sends the ACK for all of it and arms the timers once,
  // as Linux does for a GRO super-segment: the ACK is as prompt as the burst is short,
  // and every other segment (out of order, a hole filled, a FIN, a duplicate, ...) is
  // still answered at once (RFC 9293 3.8.6.3, RFC 5681 4.2). Not for an RTO after a sign of
  // loss (Tcb::ack_each_until, note_loss_sign): a sender recovering from loss
  // has a few segments in flight, often a whole window in one burst here, and the one
  // ACK for all of them, lost on a lossy path, left it nothing but its timer; then the
  // data is ACKed at least every second segment, as a receiver without GRO does.
  void begin_rx_burst() { rx_burst_open_ = true; }
  void end_rx_burst(Instant now);

  // An ICMP error about a segment we sent. `quoted` is the start of our TCP header as
  // quoted in the ICMP message (at least 8 bytes: ports and sequence number);
  // `local`/`remote` are the quoted IPv4 source/destination, `quoted_len` the quoted
  // datagram's total length (0: unknown). The sequence number must lie in
  // [SND.UNA, SND.MAX) (RFC 5927 4.1), otherwise the message is ignored and counted.
  // kFragNeeded lowers the send MSS to max(MTU, 576) - 40 and resends at once
  // (RFC 1191; a zero MTU is estimated from the plateau table below quoted_len), unless
  // the MTU is not below the current path MTU or the quoted length (ignored, counted);
  // kPortUnreachable aborts a connection in SYN_SENT (RFC 5461).
  // Returns false when the quote is too short or names no connection.
  bool icmp_error(IpAddr local, IpAddr remote, std::span<const uint8_t> quoted, IcmpError e,
                  uint16_t next_hop_mtu, Instant now, uint16_t quoted_len = 0);

  // Passive open on `port` (any local address). False if already listening.
  bool listen(uint16_t port, ListenCallbacks cbs);
  void unlisten(uint16_t port);
  // Connections to `port` from the other family are refused as if nobody listened
  // (RST); kAny lifts it. Kept across listen() and unlisten().
  void restrict_family(uint16_t port, AddrFamily f);
  // Active open; the SYN leaves at once (time of the last input()/poll() call, or
  // `now` when given). local_port 0 picks an ephemeral port that port_ok accepts.
  // Returns nullptr when no port/route/connection slot is available. The callbacks are
  // taken by exchange (set_callbacks): `cbs` is left empty when it opens.
  Connection* connect(Endpoint remote, ConnCallbacks&& cbs, uint16_t local_port = 0);
  Connection* connect(Endpoint remote, ConnCallbacks&& cbs, uint16_t local_port, Instant now);
  // Aborts every connection (RST) and notifies the application.
  void shutdown_all(Instant now);

  // O(1): every value is a running count or sum (BufferTally), whatever the number of
  // connections.
  TcpCounters counters() const;
  // For tests: counters() with the gauges (connections by state and family, buffer and
  // memory sums) recomputed by a walk over every connection: the independent count the
  // running sums are checked against.
  TcpCounters counters_walked() const;
  const TcpConfig& config() const { return cfg_; }
  // Connections held, those in TIME-WAIT (records) included.
  size_t connection_count() const { return conns_.size() + time_waits_.size(); }
  // Connections in state `s` now (kept up to date by every state change: no walk).
  uint64_t count_in(TcpState s) const { return ctr_.state[static_cast<size_t>(s)]; }
  // Receive-burst prefetch (prefetch.cpp): which tables have outgrown the caches (the
  // connection table, the TIME-WAIT records); the table slot of a received Ethernet frame's
  // TCP flow started into them (for a bare SYN, the TIME-WAIT index slot); and, a few
  // frames later (the slot arrived meanwhile), the first lines of its connection (for a
  // bare SYN, the record it may take over).
  struct PrefetchPlan {
    bool conns = false;
    bool time_waits = false;
    bool any() const { return conns || time_waits; }
  };
  PrefetchPlan prefetch_plan() const;
  // What the first step learnt of a frame, for the second: its flow's hash and whether it
  // is a bare SYN (the frame is not parsed twice). No member initializers: a burst's array
  // of them is filled before it is read, and is not cleared when no prefetch runs.
  struct FlowHint {
    enum class Kind : uint8_t { kNone, kSegment, kSyn };
    uint64_t hash;
    Kind kind;
  };
  FlowHint prefetch_frame(std::span<const uint8_t> frame, PrefetchPlan plan) const;
  void prefetch_conn(FlowHint hint, PrefetchPlan plan) const;
  // After pick_port: the TIME-WAIT record of port `next` and the index slot of port
  // `after`, the cursor's next two, toward `remote` (a client connecting to one server over
  // and over).
  void prefetch_ports(IpAddr laddr, Endpoint remote, uint16_t next, uint16_t after) const;
  // The TIME-WAIT records outgrow a core's share of the caches: worth loading ahead.
  bool time_waits_beyond_cache() const;
  // Handshakes completed so far (no walk).
  uint64_t established_total() const { return family_total(ctr_.family.connections_established); }
  // True while the address a connection to `dst` would be sent from is still tentative
  // (duplicate address detection): clients wait rather than fail their connects.
  bool source_pending(IpAddr dst) const { return out_.source_pending(dst); }
  TcpTableSizes table_sizes() const;

  // --- for the protocol engine (tcb and tcp_*.cpp)
  L4Output& out() { return out_; }
  DropCounters& drops() { return drops_; }
  TcpCounters& ctr() { return ctr_; }
  BufferTally& tally() { return tally_; }
  void count_recovery(RecoveryKind k) { ++ctr_.recovery[static_cast<size_t>(k)]; }
  const IsnGenerator& isn() const { return isn_; }
  PmtuCache& pmtu_cache() { return pmtu_cache_; }
  Instant last_now() const { return now_; }
  bool in_stack() const { return depth_ > 0; }
  void release(Tcb* t);  // remove from the table; freed at the end of the call
  // `c`, in TIME-WAIT with its last ACK sent, goes on as a record and its Tcb is released
  // (time_wait_input.cpp).
  void park_time_wait(Tcb& c);
  // Makes sure a timer entry exists no later than t's next deadline. Inline: every
  // output() ends here, and mostly an entry early enough is queued already (half of the
  // calls under churn), which then costs no call.
  void schedule(Tcb* t) {
    if (t->released) return;
    const Instant d = t->next_deadline();
    if (!d.is_never() && d < t->slot->sched_at) push_timer(t, d);
  }
  bool challenge_ack_allowed(Instant now);  // RFC 5961 section 7 rate limit
  void send_reset_for(const FourTuple& t, const Segment& s, Instant now);
  // send_reset_for() for a segment to no connection (or to a listener), within
  // tcp.rst_rate_limit; over it the RST is not sent and counted.
  void reset_unknown(const FourTuple& t, const Segment& s, Instant now);
  bool tx_pressure(IpAddr dst) const { return out_.free_buffers_to(dst) < cfg_.low_buffers; }
  // The MSS we advertise to `raddr`: its route's MTU (the family's minimum when
  // unroutable) less the fixed IP and TCP headers of its family.
  uint32_t mss_to(IpAddr raddr) const;
  // May `c` put a frame (data or a pure ACK) on its port's transmit queue now? Not when
  // fewer than tcp.low_buffers are free (tx_pressure), nor, while other connections
  // wait for that port, until their turn came (serve_tx_waiters) or twice the mark is
  // free. A blocked connection joins the waiters, in arrival order. Without the queue,
  // the first to ask after a drain wins: ACK-clocked bulk senders and the pure ACKs of
  // busy receivers run on every received burst and took each slot the queue freed,
  // while a connection that sends now and then waited for good.
  // Inline, the common answer (buffers free, nobody waiting) costs no call and no saved
  // registers: TCP asks two or three times per segment.
  bool tx_blocked(Tcb& c) {
    const uint32_t free = out_.free_buffers_to(c.t.raddr);
    // Twice the mark free: the waiters (for this port, or for another that is short)
    // are not starved by this frame, and the queue is served at every iteration.
    if (free >= cfg_.low_buffers &&
        (tx_waiters_.empty() || &c == tx_serving_ || free >= 2 * cfg_.low_buffers))
      return false;
    join_tx_waiters(c);
    return true;
  }
  void join_tx_waiters(Tcb& c);
  void serve_tx_turns(Instant now);
  // Output at the end of the call, once per connection, and only if no output() ran
  // since the request (an input's own output() sends what a callback queued).
  void conn_output(Tcb* t) {
    if (t->output_queued) return;
    t->output_queued = true;
    pending_output_.push_back(t);
    ++end_work_;
  }
  // output() ran for t: its request, when the last one queued (a reply a callback queued
  // during the input that output() follows), leaves the queue, so that the end of the call
  // has nothing to walk.
  void conn_output_done(Tcb* t) {
    if (!pending_output_.empty() && pending_output_.back() == t) {
      pending_output_.pop_back();
      --end_work_;
    }
  }
  // Resizes t's send ring to `cap`; an empty ring's first step comes from the spares.
  void grow_send_ring(Tcb& t, size_t cap);
  // Empties t's rings, keeping their storage for later connections when of pooled sizes.
  void recycle_rings(Tcb& t);
  HeldPool& held_pool() { return held_pool_; }
  void note_holder(Tcb* t);
  void forget_holder(Tcb* t);

  // Copies every byte connections hold in received buffers into their rings and gives
  // the buffers back (rx_held.hpp): the data plane calls this when its buffer pool
  // runs low. Returns how many pieces were given back.
  size_t release_held();

 private:
  struct Guard {
    explicit Guard(TcpStack& s) : s(s) { ++s.depth_; }
    ~Guard() {
      // Inline: most calls (a received segment) leave nothing for end_of_call().
      if (--s.depth_ == 0 && s.end_work_ != 0) s.end_of_call();
    }
    TcpStack& s;
  };
  void end_of_call();
  // Tcb storage: slots and ring buffers are reused, not returned to malloc (docs/tcp.md,
  // "Memory and timers").
  TcbSlot* take_slot();
  void destroy(Tcb* t);
  // Storage of empty rings of one size, kept for the next connections (counted in
  // tally_.spare).
  struct SparePool {
    size_t size = 0;
    std::vector<std::unique_ptr<uint8_t[]>> buffers;
  };
  // A spare of `cap` bytes, or a new ring of that size (storage at its first byte), into
  // `into`, an empty ring.
  void take_ring(SparePool& pool, size_t cap, ByteRing& into);
  void give_ring(SparePool& pool, ByteRing& r);
  // Drops timer entries of connections that are gone; with no entry left pointing at a
  // free slot, frees the slots beyond the spare bound.
  void compact_timers();
  // Queues an entry for `t` at `d`, before its earliest one (schedule()).
  void push_timer(Tcb* t, Instant d);
  // `init` and `hash`: a TIME_WAIT record's values for `t` when it takes one over (the
  // ISN and offset without the SipHash, the table's hash), as for new_tcb.
  void listen_input(Listener& l, const FourTuple& t, Segment& s, Instant now,
                    const IsnGenerator::Initial* init = nullptr, uint64_t hash = 0);
  bool handshakes_piled_up(Listener& l, Instant now) const;
  // SYN cookies (syncookie_listen.cpp): whether this SYN gets a cookie, the SYN,ACK
  // that carries it, and the ACK that may return one (true: handled).
  bool cookie_wanted(const Listener& l) const;
  void send_syn_cookie(Listener& l, const FourTuple& t, const Segment& s, Instant now);
  bool accept_cookie(Listener& l, const FourTuple& t, Segment& s, Instant now);
  uint8_t offered_wscale() const { return offered_wscale_; }  // what our SYN,ACKs offer
  // A Tcb for `t` in a free slot, in the table; `init` as for init_tcb; `hash`, t's hash
  // when known (a TIME-WAIT record's: the same key), else 0.
  Tcb* new_tcb(const FourTuple& t, const IsnGenerator::Initial* init = nullptr, uint64_t hash = 0);
  // The set-up every new Tcb gets once it has its slot, id and table entry; `init`, the
  // ISN and timestamp offset (from its tuple's hash when not given).
  void init_tcb(Tcb& tcb, const IsnGenerator::Initial* init = nullptr);
  // A local port whose tuple is free, or held by a TIME-WAIT record that may be taken
  // over (left in `tw`, see reuse_time_wait); 0 when there is none.
  uint16_t pick_port(IpAddr laddr, Endpoint remote, Instant now, TimeWaitRecord*& tw);
  // Whether `t` may be used for a new connection: no Tcb holds it, and no TIME-WAIT record
  // or one that may be reused (timestamps, as Linux's tcp_tw_reuse), returned in `tw`.
  bool reuse_time_wait(const FourTuple& t, Instant now, TimeWaitRecord*& tw);
  // The new connection's Tcb for the tuple of `tw`, a record reuse_time_wait allowed,
  // with the tuple's ISN and timestamp offset worked out again from the record.
  Tcb* take_over_time_wait(TimeWaitRecord& tw);
  // TIME-WAIT as records (time_wait.hpp, time_wait_input.cpp).
  void time_wait_input(TimeWaitRecord& w, const FourTuple& t, Segment& s, Instant now);
  // A SYN to `tw`, a Tcb still in TIME-WAIT (its last ACK not out yet), that RFC 6191 lets
  // take the tuple over: true when it did (the Tcb released, the SYN given to the listener).
  bool syn_takes_over(Tcb& tw, const FourTuple& t, Segment& s, Instant now);
  void time_wait_reply(TimeWaitRecord& w, const Segment& s, Instant now);
  void time_wait_ack(const TimeWaitRecord& w, Instant now);
  void drop_time_wait(TimeWaitRecord& w);
  void expire_time_waits(Instant now);

  L4Output& out_;
  DropCounters& drops_;
  TcpConfig cfg_;
  IsnGenerator isn_;
  SynCookies cookies_;
  TokenBucket rst_bucket_;
  TcpCounters ctr_;
  // Before the rings and Tcbs that count into it: destroyed after them.
  BufferTally tally_;
  PmtuCache pmtu_cache_;
  ConnTable conns_;
  TimeWaitTable time_waits_;  // TIME-WAIT connections whose Tcb was released
  // The connection the last segment went to: the segments of a burst mostly belong to
  // one flow, and a tuple compare costs less than the table's hash and probe. Cleared
  // when that connection leaves the table (release()).
  Tcb* last_flow_ = nullptr;
  Tcb* find_conn(const FourTuple& t) {
    if (last_flow_ != nullptr && last_flow_->t == t) return last_flow_;
    Tcb* c = conns_.find(t);
    if (c != nullptr) last_flow_ = c;
    return c;
  }
  std::unordered_map<uint16_t, Listener> listeners_;
  std::unordered_map<uint16_t, AddrFamily> listen_family_;  // ports restricted to one family
  // The listener for `t`'s local port if it takes `t`'s family, or nullptr.
  Listener* listener_for(const FourTuple& t);
  std::vector<Tcb*> graveyard_;       // released during this call; destroyed at its end
  std::vector<TcbSlot*> free_slots_;  // owned; deleted beyond a bound by compact_timers()
  size_t slot_count_ = 0;             // slots allocated: live connections + free_slots_
  SparePool spare_rcv_;               // receive rings of the initial size
  SparePool spare_snd_;               // send rings of the first step's size
  std::vector<Tcb*> pending_output_;
  // Connections whose output waits for the end of the receive burst (Tcb::burst_output).
  std::vector<Tcb*> burst_output_;
  static constexpr size_t kBurstOutputReserve = 64;
  bool rx_burst_open_ = false;
  void flush_burst_output();
  // Connections blocked at the transmit-pressure mark, oldest first (tx_blocked), and
  // the one whose turn it is.
  std::vector<Tcb*> tx_waiters_;
  std::vector<Tcb*> tx_turns_;
  Tcb* tx_serving_ = nullptr;
  // Received-buffer pieces connections hold, and the connections that hold some
  // (reserved to the pool's size: never grows on the fast path).
  HeldPool held_pool_{kHeldPieces};
  std::vector<Tcb*> holders_;
  Instant now_;
  // Timer queue: a min-heap of (deadline, slot) with lazy deletion. A slot gets an entry
  // only when its connection's deadline moves before the slot's earliest queued one, so
  // re-arming a later RTO costs nothing; popped entries re-check the real deadline of the
  // connection in the slot and queue the next one. O(log n) per expiry instead of a scan
  // of every connection. An entry of a free slot is stale, and so is one later than its
  // slot's earliest (that one's expiry queues what is due next); compact_timers() bounds
  // how many stale entries stay.
  struct TimerEntry {
    Instant at;
    TcbSlot* slot = nullptr;
    bool operator>(const TimerEntry& o) const { return at > o.at; }
  };
  std::vector<TimerEntry> timers_;
  size_t timers_kept_ = 0;          // entries left by the last compact_timers()
  size_t freed_since_compact_ = 0;  // slots destroy() freed since then
  size_t peak_live_ = 0;            // most connections in the table since the last compact_timers()
  uint64_t next_id_ = 1;
  int depth_ = 0;
  // Entries of pending_output_ and graveyard_ together: the end of a call tests one word.
  size_t end_work_ = 0;
  uint16_t port_cursor_ = 0;
  uint8_t offered_wscale_ = 0;        // from the configuration, once (the constructor)
  uint32_t syn_budget_ = UINT32_MAX;  // SYNs still admitted in this receive burst (rx_burst)
  OverloadGate overload_;             // is the core behind its receive load (rx_burst)
  bool port_cursor_seeded_ = false;
  uint64_t challenge_second_ = ~uint64_t{0};  // none yet: the first call draws a budget
  uint32_t challenge_budget_ = 0;
};

inline void Tcb::set_state(TcpState s) {
  TcpCounters& c = stack.ctr();
  --c.state[static_cast<size_t>(state)];
  ++c.state[static_cast<size_t>(s)];
  --c.family.state[static_cast<size_t>(state)][fam];
  ++c.family.state[static_cast<size_t>(s)][fam];
  state = s;
}

// RFC 6298 section 2. Inline: every ACK that advances SND.UNA takes a sample (log_ack).
inline void Tcb::rtt_sample(Duration r) {
  const auto& cfg = stack.config();
  if (r < Duration::zero()) return;
  if (!have_rtt) {
    // RFC 6298 (2.2)
    srtt = r;
    rttvar = r / 2;
    have_rtt = true;
  } else {
    // RFC 6298 (2.3), alpha = 1/8, beta = 1/4
    Duration diff = srtt > r ? srtt - r : r - srtt;
    rttvar = (rttvar * 3 + diff) / 4;
    srtt = (srtt * 7 + r) / 8;
  }
  // RTO = SRTT + max(G, 4*RTTVAR) with rto_min standing for G, as Linux does: the floor
  // rides on top of SRTT, so on a long path the timer keeps rto_min of slack over the RTT
  // for a delayed ACK or a RACK repair to land first. Still at least rto_min (2.4).
  Duration k = std::max(cfg.rto_min, rttvar * 4);
  rto = std::min(srtt + k, cfg.rto_max);
}

// The send buffer's limit after an ACK that advanced SND.UNA. Inline: every such ACK asks.
inline void Tcb::autotune_send(Instant) {
  const auto& cfg = stack.config();
  if (cfg.send_buffer != 0) return;
  // Room for two congestion windows: one in flight, one queued behind it
  // (cf. Linux tcp_sndbuf_expand), and at least the peer's window.
  uint64_t want = std::max<uint64_t>(2ull * cc->cwnd(), snd_wnd);
  want = std::min<uint64_t>(want, cfg.buffer_max);
  if (want > snd_buf_limit) {
    stack.tally().snd_limit += want - snd_buf_limit;
    snd_buf_limit = static_cast<uint32_t>(want);
  }
}

}  // namespace ws::tcp
