// Generic error classes: unknown keys, wrong types, out-of-range values, missing keys,
// duplicate keys. Each test pins the exact position and that the message names the key.
#include <gtest/gtest.h>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

// --- unknown keys, at every level -------------------------------------------------------

TEST(ConfigErrors, UnknownTopLevelKey) {
  EXPECT_TRUE(
      one_error("version: 1\ncolour: blue\nports: [{name: p0, device: d, address: "
                "10.0.0.1/24}]\n",
                2, 1, {"unknown key 'colour'", "top level"}));
}

TEST(ConfigErrors, UnknownKeyInDataplaneSuggestsTheNearestKey) {
  EXPECT_TRUE(one_error(with("dataplane:\n  lcore: [0]\n"), 7, 3,
                        {"unknown key 'lcore'", "in 'dataplane'", "did you mean 'lcores'"}));
}

TEST(ConfigErrors, UnknownKeyInPortListsKnownKeysWhenNothingIsClose) {
  EXPECT_TRUE(one_error(with("    speed: 100G\n"), 6, 5,
                        {"unknown key 'speed'", "in 'ports[0]'", "known keys:", "mtu"}));
}

TEST(ConfigErrors, UnknownKeyInService) {
  EXPECT_TRUE(one_error(with("services:\n  - { name: e, kind: echo, protocol: tcp, port: 7, "
                             "backlog: 5 }\n"),
                        7, 52, {"unknown key 'backlog'", "in 'services[0]'"}));
}

TEST(ConfigErrors, UnknownKeyInHttpResponse) {
  EXPECT_TRUE(one_error(
      with("services:\n"
           "  - name: web\n"
           "    kind: http\n"
           "    protocol: tcp\n"
           "    port: 80\n"
           "    responses:\n"
           "      - { path: /, bodybytes: 10 }\n"),
      12, 20,
      {"unknown key 'bodybytes'", "services[0].responses[0]", "did you mean 'body_bytes'"}));
}

TEST(ConfigErrors, UnknownKeyInTcpKeepalive) {
  EXPECT_TRUE(one_error(with("tcp:\n  keepalive:\n    enable: true\n"), 8, 5,
                        {"unknown key 'enable'", "in 'tcp.keepalive'", "did you mean 'enabled'"}));
}

TEST(ConfigErrors, UnknownKeyInPipelineAndControl) {
  EXPECT_TRUE(
      one_error(with("pipeline: { batch: 3 }\n"), 6, 13, {"unknown key 'batch'", "in 'pipeline'"}));
  EXPECT_TRUE(one_error(with("control:\n  metrics: 127.0.0.1:1\n"), 7, 3,
                        {"unknown key 'metrics'", "in 'control'"}));
}

TEST(ConfigErrors, DuplicateYamlKey) {
  EXPECT_TRUE(one_error(with("    mtu: 1500\n    mtu: 9000\n"), 7, 5,
                        {"duplicate key 'mtu'", "ports[0]", "line 6"}));
}

// --- wrong types ----------------------------------------------------------------------------

TEST(ConfigErrors, StringWhereIntegerExpected) {
  EXPECT_TRUE(one_error(with("    mtu: big\n"), 6, 10,
                        {"ports[0].mtu", "expected an integer", "68..9600", "'big'"}));
}

TEST(ConfigErrors, QuotedNumberIsAString) {
  EXPECT_TRUE(
      one_error(with("    mtu: \"1500\"\n"), 6, 10, {"ports[0].mtu", "the string \"1500\""}));
}

TEST(ConfigErrors, NegativeNumber) {
  EXPECT_TRUE(one_error(with("dataplane:\n  memory_mb: -512\n"), 7, 14,
                        {"dataplane.memory_mb", "non-negative", "-512"}));
}

TEST(ConfigErrors, FloatForInteger) {
  EXPECT_TRUE(one_error(with("tcp:\n  rto_min_ms: 0.5\n"), 7, 15,
                        {"tcp.rto_min_ms", "expected an integer", "0.5"}));
}

TEST(ConfigErrors, ListWhereIntegerExpected) {
  EXPECT_TRUE(one_error(with("    rx_queues: [1]\n"), 6, 16, {"ports[0].rx_queues", "got a list"}));
}

TEST(ConfigErrors, NonBooleanForBoolean) {
  EXPECT_TRUE(one_error(with("dataplane:\n  hugepages: yes\n"), 7, 14,
                        {"dataplane.hugepages", "expected true or false", "'yes'"}));
}

TEST(ConfigErrors, PipelineMssMultipleIsABoolean) {
  EXPECT_TRUE(one_error(with("pipeline:\n  mss_multiple: 64512\n"), 7, 17,
                        {"pipeline.mss_multiple", "expected true or false"}));
}

TEST(ConfigErrors, EmptyValueIsReportedAtItsKey) {
  EXPECT_TRUE(one_error(with("    mtu:\n"), 6, 5, {"ports[0].mtu", "got nothing"}));
}

TEST(ConfigErrors, SectionMustBeAMapping) {
  EXPECT_TRUE(
      one_error(with("dataplane: [0]\n"), 6, 12, {"dataplane", "expected a mapping", "a list"}));
}

TEST(ConfigErrors, PortsMustBeAList) {
  EXPECT_TRUE(one_error("version: 1\nports:\n  name: p0\n", 3, 3,
                        {"ports", "expected a list", "a mapping"}));
}

TEST(ConfigErrors, PortItemMustBeAMapping) {
  EXPECT_TRUE(
      one_error("version: 1\nports:\n  - p0\n", 3, 5, {"ports[0]", "expected a mapping", "'p0'"}));
}

TEST(ConfigErrors, BadEnumValueListsTheChoices) {
  EXPECT_TRUE(one_error(with("dataplane:\n  idle: sleepy\n"), 7, 9,
                        {"dataplane.idle", "'sleepy'", "adaptive, poll"}));
  EXPECT_TRUE(one_error(with("tcp:\n  congestion: bbr\n"), 7, 15,
                        {"tcp.congestion", "'bbr'", "cubic, newreno"}));
}

TEST(ConfigErrors, BufferSizeMustBeAutoOrBytes) {
  EXPECT_TRUE(one_error(with("tcp:\n  receive_buffer: automatic\n"), 7, 19,
                        {"tcp.receive_buffer", "'auto' or a size in bytes"}));
  EXPECT_TRUE(one_error(with("tcp:\n  receive_buffer: 1k\n"), 7, 19,
                        {"tcp.receive_buffer", "'auto' or a size in bytes", "'1k'"}));
  EXPECT_TRUE(one_error(with("tcp:\n  send_buffer: 100\n"), 7, 16,
                        {"tcp.send_buffer", "out of range 4096.."}));
}

// --- out of range ---------------------------------------------------------------------------

TEST(ConfigErrors, MtuOutOfRange) {
  EXPECT_TRUE(
      one_error(with("    mtu: 9601\n"), 6, 10, {"ports[0].mtu", "9601 is out of range 68..9600"}));
  EXPECT_TRUE(one_error(with("    mtu: 67\n"), 6, 10, {"ports[0].mtu", "out of range 68..9600"}));
}

TEST(ConfigErrors, QueuesOutOfRange) {
  EXPECT_TRUE(one_error(with("    tx_queues: 65\n"), 6, 16, {"ports[0].tx_queues", "1..64"}));
  EXPECT_TRUE(one_error(with("    rx_queues: 0\n"), 6, 16, {"ports[0].rx_queues", "1..64"}));
}

TEST(ConfigErrors, DescriptorsMustBePowerOfTwoInRange) {
  EXPECT_TRUE(one_error(with("    rx_descriptors: 1000\n"), 6, 21,
                        {"ports[0].rx_descriptors", "1000 is not a power of two"}));
  EXPECT_TRUE(one_error(with("    tx_descriptors: 32768\n"), 6, 21,
                        {"ports[0].tx_descriptors", "64..16384"}));
}

TEST(ConfigErrors, TcpAndPipelineRanges) {
  EXPECT_TRUE(
      one_error(with("tcp:\n  time_wait_ms: 600001\n"), 7, 17, {"tcp.time_wait_ms", "0..600000"}));
  EXPECT_TRUE(one_error(with("tcp:\n  time_wait_reuse_ms: 1\n"), 7, 23,
                        {"tcp.time_wait_reuse_ms", "2..60000"}));
  EXPECT_TRUE(one_error(with("pipeline:\n  max_batch_bytes: 1499\n"), 7, 20,
                        {"pipeline.max_batch_bytes", "1500..262144"}));
  EXPECT_TRUE(one_error(with("tcp:\n  keepalive: { probes: 0 }\n"), 7, 24,
                        {"tcp.keepalive.probes", "1..127"}));
}

TEST(ConfigErrors, HugeNumberIsOutOfRangeNotWrapped) {
  EXPECT_TRUE(one_error(with("    mtu: 99999999999999999999999\n"), 6, 10,
                        {"ports[0].mtu", "out of range"}));
}

// --- missing required keys --------------------------------------------------------------------

TEST(ConfigErrors, MissingVersion) {
  EXPECT_TRUE(one_error("ports:\n  - { name: p0, device: d, address: 10.0.0.1/24 }\n", 1, 1,
                        {"missing required key 'version'"}));
}

TEST(ConfigErrors, MissingPorts) {
  EXPECT_TRUE(one_error("version: 1\n", 1, 1, {"missing required key 'ports'"}));
}

TEST(ConfigErrors, EmptyPorts) {
  EXPECT_TRUE(one_error("version: 1\nports: []\n", 2, 8, {"ports", "at least one port"}));
}

TEST(ConfigErrors, MissingPortName) {
  EXPECT_TRUE(one_error("version: 1\nports:\n  - device: d\n    address: 10.0.0.1/24\n", 3, 5,
                        {"ports[0]", "missing required key 'name'"}));
}

TEST(ConfigErrors, MissingPortAddress) {
  EXPECT_TRUE(one_error("version: 1\nports:\n  - name: p0\n    device: d\n", 3, 5,
                        {"ports[0]", "missing required key 'address'"}));
}

TEST(ConfigErrors, MissingDeviceOrPci) {
  EXPECT_TRUE(one_error("version: 1\nports:\n  - name: p0\n    address: 10.0.0.1/24\n", 3, 5,
                        {"ports[0]", "'device'", "'pci'"}));
}

TEST(ConfigErrors, MissingServiceKeys) {
  EXPECT_TRUE(one_error(with("services:\n  - { kind: echo, protocol: udp, port: 7 }\n"), 7, 5,
                        {"services[0]", "missing required key 'name'"}));
  EXPECT_TRUE(one_error(with("services:\n  - { name: e, protocol: udp, port: 7 }\n"), 7, 5,
                        {"services[0]", "missing required key 'kind'"}));
  EXPECT_TRUE(one_error(with("services:\n  - { name: e, kind: echo, port: 7 }\n"), 7, 5,
                        {"services[0]", "missing required key 'protocol'"}));
}

TEST(ConfigErrors, ServerNeedsPortClientNeedsTarget) {
  EXPECT_TRUE(one_error(with("services:\n  - { name: e, kind: sink, protocol: tcp }\n"), 7, 5,
                        {"services[0]", "missing required key 'port'"}));
  EXPECT_TRUE(one_error(with("services:\n  - { name: p, kind: ping, protocol: tcp }\n"), 7, 5,
                        {"services[0]", "missing required key 'target'"}));
}

}  // namespace
}  // namespace ws::config::test
