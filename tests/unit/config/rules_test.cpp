// Semantic rules: version, addresses, names, services, lcores, responses, cross-item checks.
#include <gtest/gtest.h>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

// A second port, appended after kBase (lines 6..9).
std::string two_ports(std::string_view second_name, std::string_view second_address) {
  return with("  - name: " + std::string(second_name) +
              "\n"
              "    device: net_null1\n"
              "    address: " +
              std::string(second_address) + "\n");
}

// kBase plus one block-style service (lines 6..) with the given extra lines.
std::string service(std::string_view kind, std::string_view protocol, std::string_view extra) {
  return with(
      "services:\n"    // 6
      "  - name: s\n"  // 7
      "    kind: " +
      std::string(kind) + "\n" +                         // 8
      "    protocol: " + std::string(protocol) + "\n" +  // 9
      std::string(extra));                               // 10..
}

TEST(ConfigRules, VersionMustBeOne) {
  EXPECT_TRUE(one_error("version: 2\nports: [{name: p0, device: d, address: 10.0.0.1/24}]\n", 1, 10,
                        {"version", "unsupported config version 2"}));
}

// --- addresses ------------------------------------------------------------------------------

TEST(ConfigRules, BadCidr) {
  EXPECT_TRUE(one_error("version: 1\nports:\n  - name: p0\n    device: d\n    address: 10.0.0.1\n",
                        5, 14, {"ports[0].address", "'10.0.0.1'", "address/prefix"}));
  EXPECT_TRUE(one_error("version: 1\nports:\n  - name: p0\n    device: d\n    address: 10.0.0/8\n",
                        5, 14, {"ports[0].address"}));
}

TEST(ConfigRules, AddressMustBeAHostAddress) {
  EXPECT_TRUE(
      one_error("version: 1\nports:\n  - name: p0\n    device: d\n    address: 10.0.0.0/24\n", 5,
                14, {"ports[0].address", "network address"}));
  EXPECT_TRUE(
      one_error("version: 1\nports:\n  - name: p0\n    device: d\n    address: 10.0.0.255/24\n", 5,
                14, {"ports[0].address", "broadcast address"}));
  EXPECT_TRUE(
      one_error("version: 1\nports:\n  - name: p0\n    device: d\n    address: 224.0.0.1/4\n", 5,
                14, {"ports[0].address", "not a unicast host address"}));
}

TEST(ConfigRules, BadGatewayIp) {
  EXPECT_TRUE(one_error(with("    gateway: 10.0.0.256\n"), 6, 14,
                        {"ports[0].gateway", "'10.0.0.256'", "not an IPv4 address"}));
}

TEST(ConfigRules, GatewayMustBeInsideTheSubnet) {
  EXPECT_TRUE(one_error(with("    gateway: 10.0.1.1\n"), 6, 14,
                        {"ports[0].gateway", "outside the port's subnet 10.0.0.0/24"}));
  EXPECT_TRUE(one_error(with("    gateway: 10.0.0.1\n"), 6, 14,
                        {"ports[0].gateway", "the port's own address"}));
}

TEST(ConfigRules, BadMac) {
  EXPECT_TRUE(one_error(with("    mac: \"02:00:00:00:00\"\n"), 6, 10,
                        {"ports[0].mac", "not a MAC address"}));
  EXPECT_TRUE(one_error(with("    mac: \"01:00:5e:00:00:01\"\n"), 6, 10,
                        {"ports[0].mac", "not a unicast MAC"}));
}

TEST(ConfigRules, BadEndpoint) {
  EXPECT_TRUE(one_error(with("control:\n  metrics_listen: localhost:9550\n"), 7, 19,
                        {"control.metrics_listen", "'localhost:9550'", "address and port"}));
  EXPECT_TRUE(one_error(service("ping", "tcp", "    target: 10.0.0.2\n"), 10, 13,
                        {"services[0].target", "'10.0.0.2'"}));
  EXPECT_TRUE(one_error(service("ping", "tcp", "    target: 10.0.0.2:0\n"), 10, 13,
                        {"services[0].target"}));
}

TEST(ConfigRules, BadPci) {
  EXPECT_TRUE(
      one_error("version: 1\nports:\n  - name: p0\n    pci: 03:00\n    address: 10.0.0.1/24\n", 4,
                10, {"ports[0].pci", "'03:00'", "PCI address"}));
}

TEST(ConfigRules, ShortPciFormIsAccepted) {
  LoadResult r =
      load("version: 1\nports:\n  - name: p0\n    pci: \"03:00.1\"\n    address: 10.0.0.1/24\n");
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ports[0].pci, "03:00.1");
  EXPECT_TRUE(r.config->ports[0].device.empty());
}

TEST(ConfigRules, DeviceAndPciBothGiven) {
  EXPECT_TRUE(one_error(with("    pci: \"0000:03:00.0\"\n"), 6, 5,
                        {"ports[0]", "either 'device' or 'pci', not both"}));
}

TEST(ConfigRules, OverlappingSubnets) {
  EXPECT_TRUE(one_error(two_ports("p1", "10.0.0.2/16"), 8, 14,
                        {"ports[1].address", "overlaps port 'p0'", "10.0.0.0/24"}));
}

TEST(ConfigRules, DisjointSubnetsAreFine) {
  LoadResult r = load(two_ports("p1", "10.0.1.1/24"));
  EXPECT_TRUE(r.config) << all_errors(r);
}

// --- names ----------------------------------------------------------------------------------

TEST(ConfigRules, DuplicatePortNames) {
  EXPECT_TRUE(one_error(two_ports("p0", "10.0.1.1/24"), 6, 11,
                        {"ports[1].name", "duplicate port name 'p0'", "line 3"}));
}

TEST(ConfigRules, BadPortName) {
  EXPECT_TRUE(
      one_error("version: 1\nports:\n  - name: p 0\n    device: d\n    address: 10.0.0.1/24\n", 3,
                11, {"ports[0].name", "not a valid name"}));
}

TEST(ConfigRules, DuplicateServiceNames) {
  EXPECT_TRUE(one_error(with("services:\n"
                             "  - { name: a, kind: echo, protocol: udp, port: 7 }\n"
                             "  - { name: a, kind: sink, protocol: udp, port: 9 }\n"),
                        8, 13, {"services[1].name", "duplicate service name 'a'", "line 7"}));
}

// --- services -------------------------------------------------------------------------------

TEST(ConfigRules, TwoServersOnOneProtocolAndPort) {
  EXPECT_TRUE(one_error(with("services:\n"
                             "  - { name: a, kind: echo, protocol: tcp, port: 7 }\n"
                             "  - { name: b, kind: sink, protocol: tcp, port: 7 }\n"),
                        8, 49, {"services[1].port", "tcp port 7", "already used by service 'a'"}));
}

TEST(ConfigRules, SamePortOnTheOtherProtocolIsFine) {
  LoadResult r =
      load(with("services:\n"
                "  - { name: a, kind: echo, protocol: tcp, port: 7 }\n"
                "  - { name: b, kind: echo, protocol: udp, port: 7 }\n"));
  EXPECT_TRUE(r.config) << all_errors(r);
}

TEST(ConfigRules, ClientKindWithPort) {
  EXPECT_TRUE(one_error(service("source", "tcp", "    target: 10.0.0.2:9\n    port: 5000\n"), 11, 5,
                        {"services[0].port", "'source' is a client kind"}));
}

TEST(ConfigRules, ServerKindWithTarget) {
  EXPECT_TRUE(one_error(service("echo", "tcp", "    port: 7\n    target: 10.0.0.2:7\n"), 11, 5,
                        {"services[0].target", "'echo' is a server kind"}));
}

TEST(ConfigRules, Iperf3AndHttpAreTcpOnly) {
  EXPECT_TRUE(one_error(service("iperf3", "udp", "    port: 5201\n"), 9, 15,
                        {"services[0].protocol", "'iperf3'", "tcp only"}));
  EXPECT_TRUE(one_error(service("http", "udp", "    port: 80\n    responses: [{path: /}]\n"), 9, 15,
                        {"services[0].protocol", "'http'", "tcp only"}));
}

TEST(ConfigRules, PingAndSourceOverUdpAreFine) {
  LoadResult r =
      load(with("services:\n"
                "  - { name: a, kind: ping, protocol: udp, target: 10.0.0.2:7 }\n"
                "  - { name: b, kind: source, protocol: udp, target: 10.0.0.2:9 }\n"));
  EXPECT_TRUE(r.config) << all_errors(r);
}

TEST(ConfigRules, ReportOnlyForClients) {
  EXPECT_TRUE(one_error(service("sink", "tcp", "    port: 9\n    report: /tmp/x.json\n"), 11, 5,
                        {"services[0].report", "only for client kinds"}));
}

TEST(ConfigRules, ClientKeysOnServerAreErrors) {
  EXPECT_TRUE(one_error(service("echo", "udp", "    port: 7\n    message_size: 64\n"), 11, 5,
                        {"services[0].message_size", "only for client kinds"}));
}

TEST(ConfigRules, FramingOverUdpIsAnError) {
  EXPECT_TRUE(one_error(service("sink", "udp", "    port: 9\n    framing: none\n"), 11, 14,
                        {"services[0].framing", "tcp only"}));
}

TEST(ConfigRules, ReconnectOnlyForPingOverTcp) {
  EXPECT_TRUE(one_error(service("source", "tcp", "    target: 10.0.0.2:9\n    reconnect: true\n"),
                        11, 16, {"services[0].reconnect", "ping over tcp only"}));
}

TEST(ConfigRules, MaxConnectingOnlyForTcpClients) {
  EXPECT_TRUE(one_error(service("ping", "udp", "    target: 10.0.0.2:9\n    max_connecting: 8\n"),
                        11, 21, {"services[0].max_connecting", "tcp clients only"}));
  EXPECT_TRUE(one_error(service("echo", "tcp", "    port: 7\n    max_connecting: 8\n"), 11, 5,
                        {"services[0].max_connecting", "only for client kinds"}));
  EXPECT_TRUE(one_error(service("ping", "tcp", "    target: 10.0.0.2:9\n    max_connecting: 0\n"),
                        11, 21, {"services[0].max_connecting", "1..1000000"}));
}

TEST(ConfigRules, UdpMessageSizeIsBoundedByTheDatagram) {
  EXPECT_TRUE(
      one_error(service("source", "udp", "    target: 10.0.0.2:9\n    message_size: 65508\n"), 11,
                19, {"services[0].message_size", "1..65507"}));
}

TEST(ConfigRules, BadKind) {
  EXPECT_TRUE(
      one_error(service("discard", "tcp", "    port: 9\n"), 8, 11,
                {"services[0].kind", "'discard'", "echo, sink, source, ping, iperf3, http"}));
}

TEST(ConfigRules, FramingIsNotForIperf3OrHttp) {
  EXPECT_TRUE(one_error(service("iperf3", "tcp", "    port: 5201\n    framing: none\n"), 11, 14,
                        {"services[0].framing", "'iperf3' has its own protocol"}));
}

TEST(ConfigRules, UnknownKindStillChecksTheOtherValues) {
  LoadResult r = load(service("discard", "tcp", "    port: http\n"));
  ASSERT_EQ(r.errors.size(), 2u) << all_errors(r);
  EXPECT_EQ(r.errors[0].format(),
            "test.yaml:8:11: services[0].kind: 'discard' is not one of: echo, sink, source, ping, "
            "iperf3, http");
  EXPECT_EQ(r.errors[1].format(),
            "test.yaml:10:11: services[0].port: expected an integer (1..65535), got 'http'");
}

// --- http responses -----------------------------------------------------------------------------

TEST(ConfigRules, ResponsesOnlyForHttp) {
  EXPECT_TRUE(one_error(service("echo", "tcp", "    port: 7\n    responses: [{path: /}]\n"), 11, 5,
                        {"services[0].responses", "only for http"}));
}

TEST(ConfigRules, HttpNeedsResponses) {
  EXPECT_TRUE(
      one_error(service("http", "tcp", "    port: 80\n"), 7, 5, {"services[0]", "'responses'"}));
}

TEST(ConfigRules, ResponsePathMustStartWithSlash) {
  EXPECT_TRUE(
      one_error(service("http", "tcp", "    port: 80\n    responses: [{path: index.html}]\n"), 11,
                24, {"services[0].responses[0].path", "must start with '/'"}));
}

TEST(ConfigRules, DuplicateResponsePaths) {
  EXPECT_TRUE(one_error(
      service("http", "tcp",
              "    port: 80\n"
              "    responses:\n"
              "      - { path: /a, body: x }\n"
              "      - { path: /a, body_bytes: 3 }\n"),
      13, 17, {"services[0].responses[1].path", "duplicate response path '/a'", "line 12"}));
}

TEST(ConfigRules, BodyAndBodyBytesBothGiven) {
  EXPECT_TRUE(one_error(service("http", "tcp",
                                "    port: 80\n"
                                "    responses:\n"
                                "      - { path: /, body_bytes: 3, body: abc }\n"),
                        12, 35, {"services[0].responses[0]", "either 'body' or 'body_bytes'"}));
}

TEST(ConfigRules, ResponseStatusRange) {
  EXPECT_TRUE(one_error(service("http", "tcp",
                                "    port: 80\n"
                                "    responses:\n"
                                "      - { path: /, status: 600 }\n"),
                        12, 28, {"services[0].responses[0].status", "100..599"}));
}

// --- lcores -------------------------------------------------------------------------------------

TEST(ConfigRules, LcoresEmpty) {
  EXPECT_TRUE(one_error(with("dataplane:\n  lcores: []\n"), 7, 11,
                        {"dataplane.lcores", "at least one lcore"}));
}

TEST(ConfigRules, LcoresDuplicated) {
  EXPECT_TRUE(one_error(with("dataplane:\n  lcores: [1, 2, 1]\n"), 7, 18,
                        {"dataplane.lcores[2]", "lcore 1 is listed twice"}));
}

TEST(ConfigRules, LcoreAbove127) {
  EXPECT_TRUE(one_error(with("dataplane:\n  lcores: [0, 128]\n"), 7, 15,
                        {"dataplane.lcores[1]", "0..127"}));
}

TEST(ConfigRules, BadFilePrefix) {
  EXPECT_TRUE(one_error(with("dataplane:\n  file_prefix: a/b\n"), 7, 16,
                        {"dataplane.file_prefix", "'a/b'"}));
}

// --- cross-section
// --------------------------------------------------------------------------------

TEST(ConfigRules, MbufPoolSmallerThanRings) {
  EXPECT_TRUE(one_error(with("    rx_queues: 8\n    rx_descriptors: 4096\n"), 3, 5,
                        {"ports[0]", "33792", "dataplane.mbufs (8191)"}));
  EXPECT_TRUE(one_error(with("dataplane:\n  mbufs: 1024\n"), 7, 10,
                        {"dataplane.mbufs", "too small", "2048"}));
}

TEST(ConfigRules, BatchSmallerThanMtu) {
  EXPECT_TRUE(one_error(with("    mtu: 9000\npipeline:\n  max_batch_bytes: 8000\n"), 8, 20,
                        {"pipeline.max_batch_bytes", "MTU of port 'p0' (9000)"}));
}

TEST(ConfigRules, RtoInitialBelowRtoMin) {
  EXPECT_TRUE(one_error(with("tcp:\n  rto_min_ms: 500\n  rto_initial_ms: 300\n"), 8, 19,
                        {"tcp.rto_initial_ms", "below tcp.rto_min_ms (500)"}));
}

TEST(ConfigRules, FixedReceiveBufferNeedsWindowScaling) {
  EXPECT_TRUE(one_error(with("tcp:\n  window_scaling: false\n  receive_buffer: 1048576\n"), 8, 19,
                        {"tcp.receive_buffer", "window_scaling false"}));
}

}  // namespace
}  // namespace ws::config::test

// --- http client -------------------------------------------------------------------------------

namespace ws::config::test {
namespace {

TEST(ConfigRules, HttpWithATargetIsTheClient) {
  LoadResult r = load(service("http", "tcp",
                              "    target: 10.0.0.2:80\n"
                              "    connections: 64\n"
                              "    requests_per_connection: 1\n"
                              "    rate: 1000\n"
                              "    path: /index.html\n"
                              "    expect_body_bytes: 438\n"
                              "    check_body: true\n"
                              "    report: /tmp/r.json\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  const ServiceConfig& s = r.config->services.at(0);
  EXPECT_EQ(s.kind, ServiceKind::http_client);
  EXPECT_TRUE(is_client(s.kind));
  EXPECT_EQ(to_string(s.kind), "http");
  EXPECT_EQ(s.http_client.path, "/index.html");
  EXPECT_EQ(s.http_client.requests_per_connection, 1u);
  EXPECT_EQ(s.http_client.expect_status, 200);
  EXPECT_EQ(s.http_client.expect_body_bytes, 438u);
  EXPECT_TRUE(s.http_client.check_body);
  EXPECT_EQ(s.connections, 64u);
  EXPECT_EQ(s.rate, 1000u);
  EXPECT_EQ(s.duration_s, 10u);  // the clients' default
}

TEST(ConfigRules, HttpClientKeysOnTheirSideOnly) {
  EXPECT_TRUE(
      one_error(service("http", "tcp", "    target: 10.0.0.2:80\n    responses: [{path: /}]\n"), 11,
                5, {"services[0].responses", "'target' is a client"}));
  EXPECT_TRUE(one_error(service("http", "tcp",
                                "    port: 80\n    responses: [{path: /}]\n"
                                "    requests_per_connection: 1\n"),
                        12, 5, {"requests_per_connection", "only for http clients"}));
  EXPECT_TRUE(one_error(service("ping", "tcp", "    target: 10.0.0.2:7\n    path: /\n"), 11, 5,
                        {"services[0].path", "only for http clients"}));
  EXPECT_TRUE(one_error(service("http", "tcp", "    target: 10.0.0.2:80\n    message_size: 64\n"),
                        11, 5, {"message_size", "takes no 'message_size'"}));
  EXPECT_TRUE(one_error(service("http", "tcp", "    target: 10.0.0.2:80\n    path: index\n"), 11,
                        11, {"services[0].path", "must start with '/'"}));
  EXPECT_TRUE(one_error(service("http", "udp", "    target: 10.0.0.2:80\n"), 9, 15, {"tcp only"}));
}

}  // namespace
}  // namespace ws::config::test
