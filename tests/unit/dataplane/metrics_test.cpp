// Every metric the data plane registers passes the stats segment's rules (names, label
// keys, help, one type per family): a name or label the segment refuses would otherwise
// only show at start as "metrics disabled".
#include "dataplane/metrics.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "control/config/config.hpp"
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

TEST(Metrics, EverySeriesIsAccepted) {
  auto dir = std::filesystem::temp_directory_path() / "ws-metrics-test";
  std::filesystem::create_directories(dir);
  setenv("WIRESPEED_RUNTIME_DIR", dir.c_str(), 1);
  auto loaded = config::load_config_string(kConfig, "metrics_test.yaml");
  ASSERT_TRUE(loaded.config);
  std::vector<PortInfo> ports(2);
  for (size_t i = 0; i < ports.size(); ++i) {
    ports[i].name = loaded.config->ports[i].name;
    ports[i].device = loaded.config->ports[i].device;
    ports[i].driver = "net_null";
    ports[i].port_id = static_cast<uint16_t>(i);
    ports[i].rx_queues = 2;
    ports[i].tx_queues = 2;
  }
  Metrics metrics;
  std::string error;
  EXPECT_TRUE(metrics.init(*loaded.config, ports, error)) << error;
  EXPECT_TRUE(metrics.enabled());
  metrics.shutdown();
  unsetenv("WIRESPEED_RUNTIME_DIR");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ws::dp
