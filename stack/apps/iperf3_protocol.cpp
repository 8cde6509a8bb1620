#include "stack/apps/iperf3_protocol.hpp"

#include <algorithm>
#include <cmath>

#include "stack/core/bytes.hpp"

namespace ws::iperf3 {

namespace {
// A non-negative integer parameter; fractions are cut, negatives and absurd values
// clamp to the range (iperf3 itself stores these as int or uint64).
uint64_t count(const JsonValue& v, uint64_t fallback, uint64_t max) {
  if (!v.is_number()) return fallback;
  const double d = v.number();
  if (!(d > 0)) return 0;
  if (d >= static_cast<double>(max)) return max;
  return static_cast<uint64_t>(d);
}
}  // namespace

std::optional<ParamError> parse_params(const JsonValue& j, Params& out) {
  if (!j.is_object()) return ParamError{kErrRecvParams, "parameters are not a JSON object"};
  Params p;
  if (j["udp"].truthy()) {
    p.proto = Proto::kUdp;
  } else if (j["sctp"].truthy()) {
    return ParamError{kErrUnimplemented, "SCTP is not supported"};
  }
  if (j["file"].valid()) return ParamError{kErrUnimplemented, "file transfer is not supported"};
  p.parallel = static_cast<uint32_t>(count(j["parallel"], 1, 1u << 20));
  if (p.parallel < 1 || p.parallel > kMaxStreams) {
    return ParamError{kErrNumStreams, "parallel streams out of range"};
  }
  p.reverse = j["reverse"].truthy();
  p.bidirectional = j["bidirectional"].truthy();
  if (p.reverse && p.bidirectional) {
    return ParamError{kErrReverseBidir, "reverse and bidirectional together"};
  }
  p.time_s = std::min(j["time"].number(10), 86400.0);
  if (!(p.time_s >= 0)) p.time_s = 0;
  p.omit_s = std::min(j["omit"].number(0), 600.0);
  if (!(p.omit_s >= 0)) p.omit_s = 0;
  p.bytes = count(j["num"], 0, UINT64_MAX / 2);
  p.blocks = count(j["blockcount"], 0, UINT64_MAX / 2);
  const uint32_t def_len = p.proto == Proto::kUdp ? kDefaultUdpBlock : kDefaultTcpBlock;
  p.len = static_cast<uint32_t>(count(j["len"], def_len, UINT32_MAX));
  if (p.len == 0) p.len = def_len;
  p.udp_counters_64bit = j["udp_counters_64bit"].truthy();
  if (p.proto == Proto::kTcp && p.len > kMaxTcpBlock) {
    return ParamError{kErrBlockSize, "block size too large"};
  }
  if (p.proto == Proto::kUdp && (p.len < kMinUdpBlock || p.len > kMaxUdpBlock)) {
    return ParamError{kErrUdpBlockSize, "UDP block size out of range"};
  }
  p.rate_bps = count(j["bandwidth"], p.proto == Proto::kUdp ? kDefaultUdpRate : 0, UINT64_MAX / 2);
  p.pacing_us = static_cast<uint32_t>(count(j["pacing_timer"], 1000, 1000000));
  p.get_server_output = j["get_server_output"].truthy();
  p.client_version = std::string(j["client_version"].string().substr(0, 32));
  out = std::move(p);
  return std::nullopt;
}

ResultsWriter::ResultsWriter(std::string& out, const ResultsHeader& h)
    : w_(out), text_(h.server_output_text) {
  w_.begin_object();
  w_.key("cpu_util_total").value(h.cpu_total);
  w_.key("cpu_util_user").value(h.cpu_user);
  w_.key("cpu_util_system").value(h.cpu_system);
  w_.key("sender_has_retransmits").value(h.sender_has_retransmits);
  if (!h.congestion.empty()) w_.key("congestion_used").value(h.congestion);
  w_.key("streams").begin_array();
}

void ResultsWriter::add(const StreamResult& s) {
  w_.begin_object();
  w_.key("id").value(static_cast<uint64_t>(s.id));
  w_.key("bytes").value(s.bytes);
  w_.key("retransmits").value(s.retransmits);
  w_.key("jitter").value(s.jitter_s);
  w_.key("errors").value(s.errors);
  w_.key("packets").value(s.packets);
  w_.key("start_time").value(s.start_s);
  w_.key("end_time").value(s.end_s);
  w_.end_object();
}

void ResultsWriter::finish() {
  w_.end_array();
  if (!text_.empty()) w_.key("server_output_text").value(text_);
  w_.end_object();
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
