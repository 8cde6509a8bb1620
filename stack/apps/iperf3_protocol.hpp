// The iperf3 control protocol as the reference implementation (esnet/iperf, 3.x)
// speaks it, server side:
//   client -> 37-byte cookie (36 printable characters and a NUL)
//   server -> PARAM_EXCHANGE;  client -> u32be length, JSON parameters
//   server -> CREATE_STREAMS;  client opens the data streams (TCP: connect and send the
//             cookie; UDP: one 4-byte datagram, answered with a 4-byte reply)
//   server -> TEST_START, TEST_RUNNING;  data flows;  client -> TEST_END
//   server -> EXCHANGE_RESULTS; client -> u32be length, JSON results;
//   server -> u32be length, JSON results;  server -> DISPLAY_RESULTS;  client -> IPERF_DONE
// Every state is one signed byte on the control connection. Errors: ACCESS_DENIED (a
// busy server or a wrong cookie), or SERVER_ERROR followed by two u32be: iperf3's error
// number and an errno.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stack/core/json.hpp"

namespace ws::iperf3 {

// State bytes (iperf_api.h).
enum State : int8_t {
  kTestStart = 1,
  kTestRunning = 2,
  kTestEnd = 4,
  kParamExchange = 9,
  kCreateStreams = 10,
  kServerTerminate = 11,
  kClientTerminate = 12,
  kExchangeResults = 13,
  kDisplayResults = 14,
  kIperfStart = 15,
  kIperfDone = 16,
  kAccessDenied = -1,
  kServerError = -2,
};

// iperf3 error numbers sent after SERVER_ERROR (iperf_api.h); the client prints its
// own text for them.
enum ErrorCode : int32_t {
  kErrNumStreams = 6,      // "number of parallel streams too large"
  kErrBlockSize = 7,       // "block size too large"
  kErrUnimplemented = 13,  // "not implemented yet" (SCTP, file transfers)
  kErrUdpBlockSize = 20,   // "block size invalid"
  kErrReverseBidir = 25,   // "cannot be both reverse and bidirectional"
  kErrRecvParams = 114,    // "unable to receive parameters from client"
  kErrStreamListen = 202,  // "unable to start stream listener"
};

inline constexpr size_t kCookieSize = 37;
inline constexpr size_t kMaxJsonBytes = size_t{64} * 1024;  // one control message
inline constexpr uint32_t kMaxStreams = 128;                // iperf.h MAX_STREAMS
inline constexpr uint32_t kDefaultTcpBlock = 128 * 1024;
inline constexpr uint32_t kDefaultUdpBlock = 1460;
inline constexpr uint32_t kMaxTcpBlock = 1024 * 1024;               // iperf.h MAX_BLOCKSIZE
inline constexpr uint32_t kMaxUdpBlock = 65535 - 8 - 20;            // one IPv4 datagram
inline constexpr uint32_t kMinUdpBlock = 16;                        // header with 64-bit counters
inline constexpr uint64_t kDefaultUdpRate = uint64_t{1024} * 1024;  // bit/s, when none is given
inline constexpr uint32_t kUdpConnectSize = 4;

enum class Proto : uint8_t { kTcp, kUdp };

// The parameters the server acts on; everything else the client sends is accepted
// and ignored (window, MSS, TOS, congestion: they configure the client's socket or
// have no equivalent here).
struct Params {
  Proto proto = Proto::kTcp;
  uint32_t parallel = 1;
  bool reverse = false;
  bool bidirectional = false;
  double time_s = 10;  // 0 with a byte or block limit
  double omit_s = 0;
  uint64_t bytes = 0;         // -n, total over the test (0: none)
  uint64_t blocks = 0;        // -k
  uint32_t len = 0;           // block (TCP write, UDP datagram) size
  uint64_t rate_bps = 0;      // -b; 0: unlimited
  uint32_t pacing_us = 1000;  // how often a rate-limited sender is woken
  bool udp_counters_64bit = false;
  bool get_server_output = false;
  std::string client_version;

  // Streams the server receives on and sends on.
  uint32_t server_receivers() const { return reverse ? 0 : parallel; }
  uint32_t server_senders() const { return (reverse || bidirectional) ? parallel : 0; }
  uint32_t total_streams() const { return server_receivers() + server_senders(); }
};

struct ParamError {
  int32_t code;
  const char* what;
};

// Reads and validates the client's parameter object.
std::optional<ParamError> parse_params(const json::Json& j, Params& out);

// One stream's line in the server's results.
struct StreamResult {
  uint32_t id = 0;
  uint64_t bytes = 0;
  int64_t retransmits = -1;  // -1: not known (receivers, UDP)
  double jitter_s = 0;
  uint64_t errors = 0;   // UDP datagrams lost
  uint64_t packets = 0;  // UDP: highest sequence number seen, or datagrams sent
  double start_s = 0;
  double end_s = 0;
};

struct ResultsHeader {
  double cpu_total = 0, cpu_user = 0, cpu_system = 0;
  int sender_has_retransmits = 0;       // 1, 0, or -1 when the server only received
  std::string_view congestion;          // empty: omitted
  std::string_view server_output_text;  // empty: omitted
};

// The server's results object, one entry of "streams" per stream.
std::string results_json(const ResultsHeader& h, const std::vector<StreamResult>& streams);

// Encodes a 4-byte big-endian length and the payload.
void append_framed(std::string& out, std::string_view json);

// The 4-byte reply to a UDP "connect" datagram. Clients write their message in host
// byte order, so the reply is written in the order the message arrived in.
std::array<uint8_t, 4> udp_connect_reply(std::span<const uint8_t> msg);

}  // namespace ws::iperf3
