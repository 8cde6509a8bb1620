// tcp (the userspace TCP stack's tunables) and pipeline (TX batching).
#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

constexpr uint64_t kMaxBuffer = 1u << 30;  // the largest window with scaling (RFC 7323 §2.3)
constexpr uint64_t kMaxUnscaledWindow = 65535;

// `auto` (autotuned: std::nullopt) or a fixed size in bytes. Returns false on error.
bool parse_buffer(const MapView& m, std::string_view key, std::optional<uint32_t>& out) {
  auto v = m.get(key);
  if (!v) return true;
  if (v->node.IsScalar() && v->node.Scalar() == "auto") {
    out.reset();
    return true;
  }
  // A word that is not "auto" (a typo such as "atuo", or a unit such as "1k"): say what is
  // accepted, rather than the integer reader's "expected an integer".
  const std::string& text = v->node.IsScalar() ? v->node.Scalar() : std::string();
  if (!v->node.IsScalar() || text.find_first_of("0123456789") == std::string::npos ||
      text.find_first_not_of("+-.eE0123456789") != std::string::npos) {
    m.diag().error(v->pos,
                   v->path + ": expected 'auto' or a size in bytes, got " + describe_node(v->node));
    return false;
  }
  auto n = read_uint(m.diag(), *v, 4096, kMaxBuffer);
  if (!n) return false;
  out = static_cast<uint32_t>(*n);
  return true;
}

}  // namespace

void parse_tcp(const MapView& m, TcpConfig& out) {
  Diagnostics& d = m.diag();
  m.enumeration<Congestion>("congestion", out.congestion,
                            {{"cubic", Congestion::cubic}, {"newreno", Congestion::newreno}});
  m.uint("time_wait_ms", 0, 600000, out.time_wait_ms);
  m.uint("time_wait_reuse_ms", 2, 60000, out.time_wait_reuse_ms);
  m.uint("rto_min_ms", 1, 60000, out.rto_min_ms);
  m.uint("rto_initial_ms", 1, 60000, out.rto_initial_ms);
  m.uint("delayed_ack_ms", 0, 500, out.delayed_ack_ms);  // RFC 1122 4.2.3.2: under 0.5 s
  m.boolean("nagle", out.nagle);

  if (auto v = m.get("keepalive")) {
    MapView k(d, *v, {"enabled", "idle_s", "interval_s", "probes"});
    if (k.is_map()) {
      k.boolean("enabled", out.keepalive.enabled);
      k.uint("idle_s", 1, 32767, out.keepalive.idle_s);
      k.uint("interval_s", 1, 32767, out.keepalive.interval_s);
      k.uint("probes", 1, 127, out.keepalive.probes);
    }
  }

  parse_buffer(m, "receive_buffer", out.receive_buffer_bytes);
  parse_buffer(m, "send_buffer", out.send_buffer_bytes);
  m.uint("buffer_max_bytes", 65536, kMaxBuffer, out.buffer_max_bytes);
  m.uint("syn_backlog", 1, 65535, out.syn_backlog);
  m.uint("syn_burst_budget", 0, 65535, out.syn_burst_budget);
  m.uint("syn_shed_half_open", 0, 65535, out.syn_shed_half_open);
  m.uint("accept_backlog", 1, 65535, out.accept_backlog);
  m.uint("max_connections", 1, 16777216, out.max_connections);
  m.uint("time_wait_max", 0, 16777216, out.time_wait_max);
  m.boolean("timestamps", out.timestamps);
  m.boolean("sack", out.sack);
  m.boolean("window_scaling", out.window_scaling);
  m.boolean("mtu_probing", out.mtu_probing);
  m.uint("pmtu_recovery_s", 1, 86400, out.pmtu_recovery_s);
  m.enumeration<SynCookies>("syncookies", out.syncookies,
                            {{"auto", SynCookies::when_full},
                             {"always", SynCookies::always},
                             {"never", SynCookies::never}});
  m.uint("rst_rate_limit", 1, 10000000, out.rst_rate_limit);
  m.uint("challenge_ack_limit", 1, 10000000, out.challenge_ack_limit);

  // Checks between keys of this section.
  if (out.rto_initial_ms < out.rto_min_ms && m.has("rto_initial_ms")) {
    auto v = *m.get("rto_initial_ms");
    d.error(v.pos, v.path + ": " + std::to_string(out.rto_initial_ms) +
                       " is below tcp.rto_min_ms (" + std::to_string(out.rto_min_ms) + ")");
  } else if (out.rto_initial_ms < out.rto_min_ms && m.has("rto_min_ms")) {
    auto v = *m.get("rto_min_ms");
    d.error(v.pos, v.path + ": " + std::to_string(out.rto_min_ms) +
                       " is above tcp.rto_initial_ms (" + std::to_string(out.rto_initial_ms) + ")");
  }
  if (!out.window_scaling && out.receive_buffer_bytes &&
      *out.receive_buffer_bytes > kMaxUnscaledWindow) {
    auto v = *m.get("receive_buffer");
    d.error(v.pos, v.path + ": " + std::to_string(*out.receive_buffer_bytes) +
                       " bytes cannot be advertised with window_scaling false (at most 65535)");
  }
}

void parse_pipeline(const MapView& m, PipelineConfig& out, Origins& origins) {
  if (m.uint("max_batch_bytes", 1500, 262144, out.max_batch_bytes)) {
    origins.max_batch_bytes = m.get("max_batch_bytes")->pos;
  }
  m.uint("backoff_us", 0, 1000000, out.backoff_us);
  m.boolean("batching", out.batching);
  m.uint("max_batches", 1, 1048576, out.max_batches);
  m.boolean("mss_multiple", out.mss_multiple);
}

}  // namespace ws::config::detail
