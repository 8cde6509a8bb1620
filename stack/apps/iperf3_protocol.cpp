#include "stack/apps/iperf3_protocol.hpp"

#include <algorithm>
#include <cmath>

#include "stack/core/bytes.hpp"

namespace ws::iperf3 {

using json::Json;

namespace {
// A non-negative integer parameter; fractions are cut, negatives and absurd values
// clamp to the range (iperf3 itself stores these as int or uint64).
uint64_t count(const Json& j, std::string_view key, uint64_t fallback, uint64_t max) {
  const std::optional<double> v = json::number(json::member(j, key));
  if (!v) return fallback;
  if (!(*v > 0)) return 0;
  if (*v >= static_cast<double>(max)) return max;
  return static_cast<uint64_t>(*v);
}

bool flag(const Json& j, std::string_view key) { return json::truthy(json::member(j, key)); }

// A duration in seconds, clamped to [0, max].
double seconds(const Json& j, std::string_view key, double fallback, double max) {
  const double v = std::min(json::number_or(j, key, fallback), max);
  return v >= 0 ? v : 0;
}

// JSON has no NaN: iperf3's reader wants a number, so a rate over no time is 0.
double finite(double v) { return std::isfinite(v) ? v : 0; }
}  // namespace

std::optional<ParamError> parse_params(const Json& j, Params& out) {
  if (!j.is_object()) return ParamError{kErrRecvParams, "parameters are not a JSON object"};
  Params p;
  if (flag(j, "udp")) {
    p.proto = Proto::kUdp;
  } else if (flag(j, "sctp")) {
    return ParamError{kErrUnimplemented, "SCTP is not supported"};
  }
  if (json::member(j, "file") != nullptr) {
    return ParamError{kErrUnimplemented, "file transfer is not supported"};
  }
  p.parallel = static_cast<uint32_t>(count(j, "parallel", 1, 1u << 20));
  if (p.parallel < 1 || p.parallel > kMaxStreams) {
    return ParamError{kErrNumStreams, "parallel streams out of range"};
  }
  p.reverse = flag(j, "reverse");
  p.bidirectional = flag(j, "bidirectional");
  if (p.reverse && p.bidirectional) {
    return ParamError{kErrReverseBidir, "reverse and bidirectional together"};
  }
  p.time_s = seconds(j, "time", 10, 86400.0);
  p.omit_s = seconds(j, "omit", 0, 600.0);
  p.bytes = count(j, "num", 0, UINT64_MAX / 2);
  p.blocks = count(j, "blockcount", 0, UINT64_MAX / 2);
  const uint32_t def_len = p.proto == Proto::kUdp ? kDefaultUdpBlock : kDefaultTcpBlock;
  p.len = static_cast<uint32_t>(count(j, "len", def_len, UINT32_MAX));
  if (p.len == 0) p.len = def_len;
  p.udp_counters_64bit = flag(j, "udp_counters_64bit");
  if (p.proto == Proto::kTcp && p.len > kMaxTcpBlock) {
    return ParamError{kErrBlockSize, "block size too large"};
  }
  if (p.proto == Proto::kUdp && (p.len < kMinUdpBlock || p.len > kMaxUdpBlock)) {
    return ParamError{kErrUdpBlockSize, "UDP block size out of range"};
  }
  p.rate_bps = count(j, "bandwidth", p.proto == Proto::kUdp ? kDefaultUdpRate : 0, UINT64_MAX / 2);
  p.pacing_us = static_cast<uint32_t>(count(j, "pacing_timer", 1000, 1000000));
  p.get_server_output = flag(j, "get_server_output");
  p.client_version = std::string(json::string_or(json::member(j, "client_version")).substr(0, 32));
  out = std::move(p);
  return std::nullopt;
}

std::string results_json(const ResultsHeader& h, const std::vector<StreamResult>& streams) {
  Json r = Json::object();
  r["cpu_util_total"] = finite(h.cpu_total);
  r["cpu_util_user"] = finite(h.cpu_user);
  r["cpu_util_system"] = finite(h.cpu_system);
  r["sender_has_retransmits"] = h.sender_has_retransmits;
  if (!h.congestion.empty()) r["congestion_used"] = h.congestion;
  Json list = Json::array();
  for (const StreamResult& s : streams) {
    list.push_back({{"id", s.id},
                    {"bytes", s.bytes},
                    {"retransmits", s.retransmits},
                    {"jitter", finite(s.jitter_s)},
                    {"errors", s.errors},
                    {"packets", s.packets},
                    {"start_time", finite(s.start_s)},
                    {"end_time", finite(s.end_s)}});
  }
  r["streams"] = std::move(list);
  if (!h.server_output_text.empty()) r["server_output_text"] = h.server_output_text;
  return json::dump(r);
}

void append_framed(std::string& out, std::string_view json) {
  uint8_t len[4];
  store_be32(len, static_cast<uint32_t>(json.size()));
  out.append(reinterpret_cast<const char*>(len), 4);
  out.append(json);
}

std::array<uint8_t, 4> udp_connect_reply(std::span<const uint8_t> msg) {
  // UDP_CONNECT_MSG is 0x36373839 and UDP_CONNECT_REPLY 0x39383736 (iperf.h); before
  // 3.11 they were 123456789 and 987654321. Each is written in the sender's order.
  auto be = [](uint32_t v) {
    return std::array<uint8_t, 4>{static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
                                  static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
  };
  auto le = [](uint32_t v) {
    return std::array<uint8_t, 4>{static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8),
                                  static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 24)};
  };
  constexpr uint32_t kMsg = 0x36373839, kReply = 0x39383736;
  constexpr uint32_t kLegacyMsg = 123456789, kLegacyReply = 987654321;
  if (msg.size() == 4) {
    const uint32_t v = load_be32(msg.data());
    if (v == kMsg) return be(kReply);
    if (v == kLegacyMsg) return be(kLegacyReply);
    if (__builtin_bswap32(v) == kLegacyMsg) return le(kLegacyReply);
  }
  return le(kReply);  // the current message from a little-endian client, or unknown
}

}  // namespace ws::iperf3
