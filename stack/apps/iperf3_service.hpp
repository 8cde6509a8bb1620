// An iperf3 server (`kind: iperf3`) on the stack's own TCP and UDP: the unmodified
// iperf3 client runs its tests against it (see iperf3_protocol.hpp for the exchange).
//
// One test at a time, as iperf3 -s: a second client is answered ACCESS_DENIED. Every
// connection to the port first sends a 37-byte cookie; the cookie decides what it is:
// with no test running, a new control connection; during stream creation, a data
// stream of the running test when the cookie matches; anything else is denied.
// UDP streams use the same port number over UDP: the socket is bound only while a UDP
// test runs. A test ends when the client says TEST_END; a client that goes away (its
// control connection closes or resets, or nothing moves for `idle_timeout`) ends the
// test at once: connections are reset, the UDP socket unbound, the state freed.
//
// Counters (Service::counters): rx_bytes/tx_bytes are test data only (what the
// results report, including any --omit period), rx/tx_messages UDP datagrams,
// connections the TCP connections accepted (control and data).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stack/apps/iperf3_protocol.hpp"
#include "stack/apps/iperf3_udp.hpp"
#include "stack/apps/service.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws {

class UdpSocket;
struct UdpDatagram;

// CPU time the calling thread has used so far. The data plane supplies it (the core's
// thread clock); the service reads it at the start and end of a test, never per packet.
struct CpuTimes {
  Duration user;
  Duration system;
};
using CpuClock = std::function<CpuTimes()>;

struct Iperf3Limits {
  // A connection must send its cookie, and a client must move through each handshake
  // step, within this time.
  Duration handshake_timeout = Duration::seconds(10);
  // A test in which no byte moves (control or data) for this long is abandoned.
  Duration idle_timeout = Duration::seconds(30);
  // A timed test (-t) is abandoned this long after its planned end (iperf3 uses 5 s).
  Duration overrun = Duration::seconds(10);
  // Connections that have not yet sent a cookie; more are refused.
  uint32_t max_pending = 32;
  // A connection closed by the server after its test is reset if the client has not
  // closed its side within this time (FIN_WAIT_2 would otherwise hold it forever).
  Duration linger = Duration::seconds(10);
  // Datagrams one rate-limited UDP stream may send per poll (bounds the time spent).
  uint32_t udp_burst = 256;
};

// Why tests ended and what was turned away (not all of these are drops of packets:
// the stack counts those).
struct Iperf3Stats {
  uint64_t tests_started = 0;    // a parameter exchange began
  uint64_t tests_completed = 0;  // IPERF_DONE received
  uint64_t tests_aborted = 0;    // the client vanished, terminated, or broke the protocol
  uint64_t server_errors = 0;    // SERVER_ERROR sent (bad or unsupported parameters)
  uint64_t access_denied = 0;    // busy, or a data stream with a wrong cookie
  uint64_t timeouts = 0;         // handshake, idle or overrun timeouts (also counted above)
  uint64_t refused = 0;          // connections refused: too many without a cookie
  uint64_t lingered = 0;         // closed connections reset after `linger`
  uint64_t udp_stray = 0;        // datagrams not belonging to a running UDP stream
  uint64_t udp_short = 0;        // datagrams shorter than the iperf3 header
};

class Iperf3Service final : public Service {
 public:
  Iperf3Service(std::string name, uint16_t port, tcp::TcpStack& tcp, Iperf3Limits limits = {});
  ~Iperf3Service() override;
  bool start(Stack& stack, Instant now) override;
  void stop(Instant now) override;
  Instant poll(Instant now) override;

  const Iperf3Stats& stats() const { return stats_; }
  bool busy() const { return session_ != nullptr; }
  // Connections the service still holds (including ones closing after their test).
  size_t open_connections() const { return open_; }
  bool udp_bound() const;
  // Fills cpu_util_* of the results (iperf3 reports the server's CPU use as a
  // percentage of the test's wall time). Without a clock they are 0.
  void set_cpu_clock(CpuClock clock) { cpu_clock_ = std::move(clock); }

 private:
  struct Conn;
  struct Stream;
  struct Session;
  enum class Phase : uint8_t { kParams, kCreateStreams, kRunning, kResults, kDisplay };

  void accept(tcp::Connection& c);
  size_t on_data(Conn& k, std::span<const uint8_t> data);
  void on_writable(Conn& k);
  void on_peer_closed(Conn& k);
  void on_closed(Conn& k, tcp::CloseReason r);
  // A complete cookie arrived on a new connection; `rest` follows it.
  void classify(Conn& k, std::span<const uint8_t> rest);
  void deny(Conn& k);
  // Detaches a connection from its test; it may linger, closing, for `linger`.
  void retire(Conn& k);

  // Control channel.
  void control_input(Session& s);
  bool handle_params(Session& s, std::string_view json);
  void handle_state(Session& s, int8_t state);
  void send_control(Session& s, std::string_view bytes);
  void send_state(Session& s, int8_t state) {
    const char b = static_cast<char>(state);
    send_control(s, std::string_view(&b, 1));
  }
  void flush_control(Session& s);
  void server_error(Session& s, int32_t code);

  // Streams.
  void add_stream(Session& s, Conn* k, Endpoint udp_peer);
  void begin_test(Session& s, Instant now);
  void end_test(Session& s, Instant now);
  void send_results(Session& s);
  void pump_tcp(Session& s, Stream& st, Instant now);
  void pump_udp(Session& s, Stream& st, Instant now);
  uint64_t send_budget(const Session& s) const;
  void udp_input(const UdpDatagram& d, Instant now);

  // Ends the test and frees its state. Completed (after IPERF_DONE) and rejected
  // (SERVER_ERROR sent) tests close their connections; aborted ones reset them.
  enum class End : uint8_t { kCompleted, kRejected, kAborted };
  void finish(End how);
  // Ends the test and resets every connection the service still holds.
  void reset_all();

  uint16_t port_;
  tcp::TcpStack& tcp_;
  Iperf3Limits limits_;
  Stack* stack_ = nullptr;
  bool listening_ = false;
  std::unique_ptr<Session> session_;
  std::vector<Conn*> pending_;              // connections without a cookie yet
  Conn* conns_ = nullptr;                   // every connection we hold, linked through Conn
  Instant linger_next_ = Instant::never();  // earliest deadline of a retired connection
  size_t open_ = 0;
  std::vector<uint8_t> pattern_;   // payload of the data we send
  std::vector<uint8_t> datagram_;  // scratch for one UDP datagram
  Iperf3Stats stats_;
  CpuClock cpu_clock_;
};

}  // namespace ws
