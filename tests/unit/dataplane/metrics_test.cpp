// Every metric the data plane registers passes the stats segment's rules (names, label
// keys, help, one type per family): a name or label the segment refuses would otherwise
// only show at start as "metrics disabled".
#include "dataplane/metrics.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "control/config/config.hpp"
#include "control/stats/reader.hpp"
#include "dataplane/port.hpp"

namespace ws::dp {
namespace {

constexpr const char* kConfig = R"(version: 1
dataplane: { lcores: [0, 1], file_prefix: ws-metrics-test }
ports:
  - { name: p0, device: "net_null0", address: 10.0.0.1/24, rx_queues: 2, tx_queues: 2 }
  - { name: p1, device: "net_null1", address: 10.0.1.1/24, rx_queues: 2, tx_queues: 2 }
services:
  - { name: echo-tcp, kind: echo, protocol: tcp, port: 7 }
  - { name: echo-udp, kind: echo, protocol: udp, port: 7 }
  - { name: sink-tcp, kind: sink, protocol: tcp, port: 9 }
  - { name: perf, kind: iperf3, protocol: tcp, port: 5201 }
  - { name: web, kind: http, protocol: tcp, port: 80, responses: [ { path: "/", body_bytes: 10 } ] }
  - { name: load, kind: source, protocol: tcp, target: "10.0.0.2:9", message_size: 64 }
  - { name: rtt, kind: ping, protocol: tcp, target: "10.0.0.2:7", message_size: 64, count: 10 }
)";

// The stats segment of kConfig, in a directory of its own for the test's lifetime.
class MetricsSegment : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_);
    setenv("WIRESPEED_RUNTIME_DIR", dir_.c_str(), 1);
    loaded_ = config::load_config_string(kConfig, "metrics_test.yaml");
    ASSERT_TRUE(loaded_.config);
    ports_.resize(2);
    for (size_t i = 0; i < ports_.size(); ++i) {
      ports_[i].name = loaded_.config->ports[i].name;
      ports_[i].device = loaded_.config->ports[i].device;
      ports_[i].driver = "net_null";
      ports_[i].port_id = static_cast<uint16_t>(i);
      ports_[i].rx_queues = 2;
      ports_[i].tx_queues = 2;
    }
  }
  void TearDown() override {
    metrics_.shutdown();
    unsetenv("WIRESPEED_RUNTIME_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() / "ws-metrics-test";
  config::LoadResult loaded_;
  std::vector<PortInfo> ports_;
  Metrics metrics_;
};

TEST_F(MetricsSegment, EverySeriesIsAccepted) {
  std::string error;
  EXPECT_TRUE(metrics_.init(*loaded_.config, ports_, error)) << error;
  EXPECT_TRUE(metrics_.enabled());
}

// A core's sample lands in the series its tables name, on that core's block.
TEST_F(MetricsSegment, CoreSampleReachesItsSeries) {
  std::string error;
  ASSERT_TRUE(metrics_.init(*loaded_.config, ports_, error)) << error;
  StackCounters stack;
  stack.rx_frames = 7;
  stack.udp_out = {5, 2};  // IPv4, IPv6
  stack.udp_in = {0, 4};
  DropCounters drops;
  drops.add(DropReason::kEthTruncated, 3);
  InterfaceCounters p1;
  p1.l4_checksum_errors = 2;
  CoreSample s;
  s.stack = &stack;
  s.drops = &drops;
  s.ports = {nullptr, &p1};
  s.busy_ns = 4'000'000'000;
  s.loops = 11;
  metrics_.update_core(1, s);

  stats::Reader reader(stats::segment_path("ws-metrics-test"));
  reader.refresh();
  stats::Snapshot snap;
  ASSERT_TRUE(reader.read(&snap)) << reader.error();
  EXPECT_EQ(snap.sum("wirespeed_stack_received_frames_total"), 7u);
  // The total keeps its unlabelled series; the breakdown by family has its own name.
  EXPECT_EQ(snap.sum("wirespeed_udp_sent_datagrams_total"), 7u);
  EXPECT_EQ(snap.sum("wirespeed_udp_sent_datagrams_by_family_total", {{"family", "ipv4"}}), 5u);
  EXPECT_EQ(snap.sum("wirespeed_udp_sent_datagrams_by_family_total", {{"family", "ipv6"}}), 2u);
  EXPECT_EQ(snap.sum("wirespeed_udp_received_datagrams_total"), 4u);
  EXPECT_EQ(snap.sum("wirespeed_udp_received_datagrams_by_family_total", {{"family", "ipv4"}}), 0u);
  EXPECT_EQ(snap.sum("wirespeed_udp_received_datagrams_by_family_total", {{"family", "ipv6"}}), 4u);
  EXPECT_EQ(snap.sum("wirespeed_core_received_frames_total"), 7u);
  EXPECT_EQ(snap.sum("wirespeed_core_loops_total"), 11u);
  EXPECT_EQ(snap.sum("wirespeed_core_busy_seconds_total"), 4'000'000'000u);
  EXPECT_EQ(snap.sum("wirespeed_drops_total"), 3u);
  EXPECT_EQ(snap.sum("wirespeed_drops_total", {{"reason", "eth_truncated"}}), 3u);
  EXPECT_EQ(snap.sum("wirespeed_port_l4_checksum_errors_total", {{"port", "p1"}}), 2u);
  EXPECT_EQ(snap.sum("wirespeed_port_l4_checksum_errors_total", {{"port", "p0"}}), 0u);
  for (const stats::MetricInfo& m : snap.catalog->metrics) {
    if (m.name == "wirespeed_core_loops_total") {
      EXPECT_EQ(snap.core_value(m, 0), 0u);
      EXPECT_EQ(snap.core_value(m, 1), 11u);
    }
  }
}

}  // namespace
}  // namespace ws::dp
