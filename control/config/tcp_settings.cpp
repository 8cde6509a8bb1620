#include "control/config/tcp_settings.hpp"

namespace ws::config {

tcp::TcpConfig to_stack_tcp(const TcpConfig& t) {
  tcp::TcpConfig c;
  c.congestion = t.congestion == Congestion::newreno ? tcp::CongestionAlgo::kNewReno
                                                     : tcp::CongestionAlgo::kCubic;
  c.time_wait = Duration::millis(t.time_wait_ms);
  c.time_wait_reuse = Duration::millis(t.time_wait_reuse_ms);
  c.rto_min = Duration::millis(t.rto_min_ms);
  c.rto_initial = Duration::millis(t.rto_initial_ms);
  c.delayed_ack = Duration::millis(t.delayed_ack_ms);
  c.nagle = t.nagle;
  c.keepalive = t.keepalive.enabled;
  c.keepalive_idle = Duration::seconds(t.keepalive.idle_s);
  c.keepalive_interval = Duration::seconds(t.keepalive.interval_s);
  c.keepalive_probes = t.keepalive.probes;
  c.recv_buffer = t.receive_buffer_bytes.value_or(0);
  c.send_buffer = t.send_buffer_bytes.value_or(0);
  c.buffer_max = t.buffer_max_bytes;
  c.syn_backlog = t.syn_backlog;
  c.accept_backlog = t.accept_backlog;
  c.syn_burst_budget = t.syn_burst_budget;
  c.syn_shed_half_open = t.syn_shed_half_open;
  c.max_connections = t.max_connections;
  c.time_wait_max = t.time_wait_max;
  c.timestamps = t.timestamps;
  c.sack = t.sack;
  c.window_scaling = t.window_scaling;
  c.mtu_probing = t.mtu_probing;
  c.pmtu_recovery = Duration::seconds(t.pmtu_recovery_s);
  c.syncookies = t.syncookies == SynCookies::always  ? tcp::SynCookieMode::kAlways
                 : t.syncookies == SynCookies::never ? tcp::SynCookieMode::kNever
                                                     : tcp::SynCookieMode::kAuto;
  c.rst_rate_limit = t.rst_rate_limit;
  c.challenge_ack_limit = t.challenge_ack_limit;
  return c;
}

}  // namespace ws::config
