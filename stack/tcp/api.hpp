// The application's view of TCP: configuration, callbacks and connection handles.
//
// Lifetimes (read before holding a Connection*):
// - A Connection* given by ListenCallbacks::on_accept or returned by TcpStack::connect
//   stays valid until its on_closed callback has returned. After that the stack frees it
//   (at the end of the current input()/poll() call); never touch it again.
// - on_closed runs exactly once per connection that reached the application, whatever
//   the cause (orderly close, reset, timeout, abort()).
// - Callbacks run on the stack's core, inside input()/poll()/connect(). They may call
//   send(), shutdown_write(), close() and abort() on any connection; output those calls
//   produce is sent before the stack call returns.
// - Callbacks are set once per connection (std::function; no allocation per segment).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "stack/core/addr.hpp"
#include "stack/core/time.hpp"

namespace ws::tcp {

enum class CongestionAlgo : uint8_t { kCubic, kNewReno };

// A buffer size: 0 means "auto" (autotuned up to TcpConfig::buffer_max).
enum class SynCookieMode : uint8_t { kAuto, kAlways, kNever };

struct TcpConfig {
  CongestionAlgo congestion = CongestionAlgo::kCubic;
  Duration time_wait = Duration::seconds(60);  // 2*MSL (RFC 9293 3.6.1; Linux uses 60 s)
  // An opening connection may take over a TIME_WAIT tuple (ours, timestamps on) once this
  // long has passed since the peer's last timestamp: PAWS (RFC 7323 5) then rejects old
  // duplicates in both directions, provided both timestamp clocks ticked in between. Ours
  // ticks every 1 ms; Linux's too. 1 s is Linux's tcp_tw_reuse choice, safe for any peer
  // clock that RFC 7323 allows (1 ms to 1 s per tick).
  Duration time_wait_reuse = Duration::seconds(1);
  Duration rto_min = Duration::millis(200);     // G of RFC 6298 (2.3), and so the (2.4) minimum
  Duration rto_initial = Duration::seconds(1);  // RFC 6298 (2.1)
  Duration rto_max = Duration::seconds(120);    // RFC 6298 (2.5): at least 60 s
  Duration delayed_ack = Duration::millis(40);
  bool nagle = false;
  bool keepalive = false;
  Duration keepalive_idle = Duration::seconds(7200);  // RFC 1122 4.2.3.6
  Duration keepalive_interval = Duration::seconds(75);
  uint32_t keepalive_probes = 9;
  uint32_t recv_buffer = 0;               // 0 = autotune; otherwise a fixed size in bytes
  uint32_t send_buffer = 0;               // 0 = autotune; otherwise a fixed size in bytes
  uint32_t buffer_initial = 64 * 1024;    // starting size of autotuned buffers
  uint32_t buffer_max = 6 * 1024 * 1024;  // ceiling of autotuned buffers (tcp_rmem[2])
  uint32_t syn_backlog = 256;             // SYN_RECEIVED connections per listener
  uint32_t accept_backlog = 128;          // established, not yet accepted, per listener
  // New connections (SYNs to a listener) admitted per receive burst while bursts keep coming
  // back full (the core is behind: TcpStack::rx_burst); the rest are dropped at once
  // (kTcpSynShed). 0: no limit.
  uint32_t syn_burst_budget = 8;
  // ...unless the listener has fewer half-open connections than this, or no more than it
  // completed in the last 100 ms or so (HandshakeRate): handshakes still complete as fast as
  // they start, so the core copes and a shed SYN would only cost its peer a SYN timeout.
  // 0: the budget alone.
  uint32_t syn_shed_half_open = 64;
  // Connections with a Tcb; those in TIME_WAIT leave it once they are records.
  uint32_t max_connections = 65536;
  // Connections in TIME_WAIT kept at most (records, time_wait.hpp: 112 bytes each); a
  // connection that would enter TIME_WAIT beyond it acknowledges the peer's FIN and
  // closes at once (counted, as Linux's tcp_max_tw_buckets overflow). A server that
  // closes first holds one per connection for `time_wait`.
  uint32_t time_wait_max = 32768;
  uint32_t max_syn_retries = 6;
  uint32_t max_retries = 15;  // RTO retransmissions of one segment before giving up
  bool timestamps = true;
  bool sack = true;
  bool window_scaling = true;
  // Packetization-layer path MTU discovery (RFC 4821 / RFC 8899): black-hole detection
  // and probing upward, for paths that filter ICMP "fragmentation needed".
  bool mtu_probing = true;
  // A path MTU lowered by ICMP (or a search that ended below the interface MTU) is tried
  // again after this long (RFC 1191 section 6.3 suggests 10 minutes).
  Duration pmtu_recovery = Duration::seconds(600);
  // Free transmit buffers below which the stack applies backpressure (and above twice
  // which it recovers).
  uint32_t low_buffers = 64;
  // Challenge ACKs per second, all connections together (RFC 5961 section 7); each
  // second's budget is drawn at random from [limit/2, limit*3/2) so that an attacker
  // cannot count them to learn sequence numbers (CVE-2016-5696).
  uint32_t challenge_ack_limit = 1000;
  // RSTs per second answering segments to no connection (RFC 5961 section 7 allows a
  // limit; FreeBSD's bandlim does alike), with up to a tenth of it in one burst.
  uint32_t rst_rate_limit = 1000;
  // SYN cookies (RFC 4987 section 3.6, stack/tcp/syncookie.hpp): kAuto when a listener's
  // SYN queue is full, kAlways for every SYN, kNever (SYNs beyond the queue are dropped).
  SynCookieMode syncookies = SynCookieMode::kAuto;
  std::array<uint8_t, 32> isn_secret{};  // RFC 6528 key; fill from a random source
  uint16_t ephemeral_low = 32768;
  uint16_t ephemeral_high = 60999;
  // Whether a local port would bring the remote's packets back to this core (RSS).
  // Empty: every port in the range is fine.
  std::function<bool(uint16_t local_port, Endpoint remote)> port_ok;
};

enum class CloseReason : uint8_t {
  kNormal,     // both sides closed in order
  kReset,      // the peer sent RST
  kTimeout,    // retransmissions or SYN retries exhausted
  kKeepalive,  // keepalive probes unanswered
  kRefused,    // RST in answer to our SYN
  kAborted,    // the application called abort()
  kStackShutdown,
};

const char* close_reason_name(CloseReason r);

class Connection;

struct ConnCallbacks {
  // Active open completed (ESTABLISHED).
  std::function<void(Connection&)> on_connected;
  // In-order bytes. Return how many were consumed; bytes not consumed stay in the
  // receive buffer (shrinking the advertised window) and are offered again when more
  // data arrives or after resume_read().
  std::function<size_t(Connection&, std::span<const uint8_t>)> on_data;
  // The peer sent FIN: no more data will arrive.
  std::function<void(Connection&)> on_peer_closed;
  // send_space() grew from zero (or from below the low mark) after a send() fell short.
  std::function<void(Connection&)> on_writable;
  std::function<void(Connection&, CloseReason)> on_closed;

  // Exchanges every callback with `o`'s: a few words each, nothing constructed or
  // destroyed (what the stack does to hand callbacks over; a move-assignment of the
  // struct builds and destroys a temporary of each).
  void swap(ConnCallbacks& o) noexcept {
    on_connected.swap(o.on_connected);
    on_data.swap(o.on_data);
    on_peer_closed.swap(o.on_peer_closed);
    on_writable.swap(o.on_writable);
    on_closed.swap(o.on_closed);
  }
  // Drops every callback: `= {}` without the temporaries.
  void clear() noexcept {
    on_connected = nullptr;
    on_data = nullptr;
    on_peer_closed = nullptr;
    on_writable = nullptr;
    on_closed = nullptr;
  }
};

struct ListenCallbacks {
  // A passive open completed. Set the connection's callbacks with set_callbacks()
  // and return true; false refuses it (RST).
  std::function<bool(Connection&)> on_accept;
};

enum class TcpState : uint8_t {
  kClosed,
  kListen,
  kSynSent,
  kSynReceived,
  kEstablished,
  kFinWait1,
  kFinWait2,
  kCloseWait,
  kClosing,
  kLastAck,
  kTimeWait,
  kCount
};
inline constexpr size_t kTcpStateCount = static_cast<size_t>(TcpState::kCount);
const char* tcp_state_name(TcpState s);

// Per-connection information for status displays.
struct ConnInfo {
  TcpState state = TcpState::kClosed;
  uint32_t send_mss = 0;
  uint32_t cwnd = 0;
  uint32_t ssthresh = 0;
  uint32_t snd_wnd = 0;    // peer's window, unscaled bytes
  uint32_t rcv_wnd = 0;    // what we advertise, bytes
  uint32_t rcv_buf = 0;    // current receive buffer size
  uint32_t snd_buf = 0;    // current send buffer limit
  uint8_t snd_wscale = 0;  // shift applied to the peer's window
  uint8_t rcv_wscale = 0;  // shift we apply to ours
  bool timestamps = false;
  bool sack = false;
  Duration srtt;
  Duration rto;
  uint64_t retransmits = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

// A connection handle; the object belongs to the stack (see lifetimes above).
class Connection {
 public:
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Takes the callbacks of `cbs` by exchange (a move would build and destroy a parameter of
  // five std::functions, twice per connection); `cbs` is left with the former ones.
  void set_callbacks(ConnCallbacks&& cbs);
  // Queues bytes for sending; returns how many were accepted (0 when the send buffer
  // is full or transmit buffers are short). on_writable follows a short send.
  size_t send(std::span<const uint8_t> data);
  // send() without the copy from the caller's buffer: room for up to `max` bytes at
  // the end of the send buffer, to be written in place (two runs where the ring
  // wraps), then queued with send_commit(). A caller that would build data in its
  // own buffer only to send() it whole (a TX pipeline's batch) writes it here
  // instead. The space is what send() would accept now (empty under the same
  // conditions, and then on_writable follows); it stays valid until send_commit()
  // or the next call into the connection or the stack.
  struct SendSpace {
    std::span<uint8_t> first;
    std::span<uint8_t> second;
    size_t size() const { return first.size() + second.size(); }
  };
  SendSpace send_reserve(size_t max);
  // Queues the first `n` bytes of the last send_reserve() (at most its size) as
  // send() would; returns how many were queued.
  size_t send_commit(size_t n);
  size_t send_space() const;
  // Bytes queued in the send buffer and not yet acknowledged (sent or not): what a TX
  // pipeline counts as "in flight" (docs/pipeline.md).
  size_t send_queued() const;
  // The current send MSS (payload bytes per segment, options accounted): the smaller of
  // both sides' MSS and the path MTU less 40 (stack/tcp/pmtu.cpp). It changes with
  // negotiation and path MTU (ICMP "fragmentation needed", black-hole detection,
  // probing, recovery), so callers read it each time.
  uint32_t send_mss() const;
  // FIN after all queued data (half-close: data can still arrive).
  void shutdown_write();
  // shutdown_write(); data arriving afterwards is discarded (and answered with RST
  // per RFC 9293 3.6 / RFC 1122 4.2.2.13 if unread data is present).
  void close();
  // Sends RST and releases at once; on_closed(kAborted) runs before abort returns.
  void abort();
  // Offer buffered received bytes to on_data again.
  void resume_read();
  // Bytes received in order, not yet consumed by on_data.
  size_t readable() const;

  Endpoint local() const;
  Endpoint remote() const;
  TcpState state() const;
  ConnInfo info() const;
  // Free for the application's own use.
  void* user = nullptr;

 protected:
  Connection() = default;
  ~Connection() = default;
};

}  // namespace ws::tcp
