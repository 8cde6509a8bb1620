// to_stack_tcp: every key of the tcp: section reaches the stack's TcpConfig, in its units.
#include "control/config/tcp_settings.hpp"

#include <gtest/gtest.h>

#include "helpers.hpp"

namespace ws::config::test {
namespace {

TEST(TcpSettings, EveryKeyReachesTheStack) {
  LoadResult r = load(with(R"(tcp:
  congestion: newreno
  time_wait_ms: 1234
  time_wait_reuse_ms: 55
  rto_min_ms: 150
  rto_initial_ms: 900
  delayed_ack_ms: 0
  nagle: true
  keepalive: { enabled: true, idle_s: 30, interval_s: 7, probes: 4 }
  receive_buffer: 65000
  send_buffer: 262144
  buffer_max_bytes: 8388608
  syn_backlog: 77
  accept_backlog: 66
  syn_burst_budget: 5
  syn_shed_half_open: 9
  max_connections: 5000
  time_wait_max: 4000
  timestamps: false
  sack: false
  window_scaling: false
  mtu_probing: false
  pmtu_recovery_s: 42
  syncookies: always
  rst_rate_limit: 321
  challenge_ack_limit: 123
)"));
  ASSERT_TRUE(r.config) << all_errors(r);
  const tcp::TcpConfig c = to_stack_tcp(r.config->tcp);
  EXPECT_EQ(c.congestion, tcp::CongestionAlgo::kNewReno);
  EXPECT_EQ(c.time_wait, Duration::millis(1234));
  EXPECT_EQ(c.time_wait_reuse, Duration::millis(55));
  EXPECT_EQ(c.rto_min, Duration::millis(150));
  EXPECT_EQ(c.rto_initial, Duration::millis(900));
  EXPECT_EQ(c.delayed_ack, Duration::millis(0));
  EXPECT_TRUE(c.nagle);
  EXPECT_TRUE(c.keepalive);
  EXPECT_EQ(c.keepalive_idle, Duration::seconds(30));
  EXPECT_EQ(c.keepalive_interval, Duration::seconds(7));
  EXPECT_EQ(c.keepalive_probes, 4u);
  EXPECT_EQ(c.recv_buffer, 65000u);
  EXPECT_EQ(c.send_buffer, 262144u);
  EXPECT_EQ(c.buffer_max, 8388608u);
  EXPECT_EQ(c.syn_backlog, 77u);
  EXPECT_EQ(c.accept_backlog, 66u);
  EXPECT_EQ(c.syn_burst_budget, 5u);
  EXPECT_EQ(c.syn_shed_half_open, 9u);
  EXPECT_EQ(c.max_connections, 5000u);
  EXPECT_EQ(c.time_wait_max, 4000u);
  EXPECT_FALSE(c.timestamps);
  EXPECT_FALSE(c.sack);
  EXPECT_FALSE(c.window_scaling);
  EXPECT_FALSE(c.mtu_probing);
  EXPECT_EQ(c.pmtu_recovery, Duration::seconds(42));
  EXPECT_EQ(c.syncookies, tcp::SynCookieMode::kAlways);
  EXPECT_EQ(c.rst_rate_limit, 321u);
  EXPECT_EQ(c.challenge_ack_limit, 123u);
}

TEST(TcpSettings, DefaultsAreAutoBuffersAndCookiesWhenFull) {
  LoadResult r = load(with(""));
  ASSERT_TRUE(r.config) << all_errors(r);
  const tcp::TcpConfig c = to_stack_tcp(r.config->tcp);
  EXPECT_EQ(c.congestion, tcp::CongestionAlgo::kCubic);
  EXPECT_EQ(c.recv_buffer, 0u);  // autotuned
  EXPECT_EQ(c.send_buffer, 0u);
  EXPECT_EQ(c.syncookies, tcp::SynCookieMode::kAuto);
  EXPECT_FALSE(c.keepalive);
}

}  // namespace
}  // namespace ws::config::test
