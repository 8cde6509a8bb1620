// Defaults of every section, and the typed values of a full example config.
#include <gtest/gtest.h>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

TEST(ConfigDefaults, MinimalConfigTakesEveryDefault) {
  LoadResult r = load(kBase);
  ASSERT_TRUE(r.config) << all_errors(r);
  const Config& c = *r.config;
  EXPECT_EQ(c.version, 1);

  EXPECT_EQ(c.dataplane.lcores, std::vector<uint32_t>{0});
  EXPECT_EQ(c.dataplane.idle, IdleMode::adaptive);
  EXPECT_EQ(c.dataplane.file_prefix, "wirespeed");
  EXPECT_FALSE(c.dataplane.hugepages);
  EXPECT_EQ(c.dataplane.memory_mb, 512u);
  EXPECT_TRUE(c.dataplane.eal_args.empty());
  EXPECT_EQ(c.dataplane.stats_interval_ms, 100u);
  EXPECT_EQ(c.dataplane.heap_reserve_mb, 32u);
  EXPECT_EQ(c.dataplane.mbufs, 8191u);
  EXPECT_EQ(c.dataplane.offloads, Offloads::automatic);

  ASSERT_EQ(c.ports.size(), 1u);
  const PortConfig& p = c.ports[0];
  EXPECT_EQ(p.name, "p0");
  EXPECT_EQ(p.device, "net_null0");
  EXPECT_TRUE(p.pci.empty());
  EXPECT_EQ(p.mtu, 1500u);
  EXPECT_EQ(p.rx_queues, 1);
  EXPECT_EQ(p.tx_queues, 1);
  EXPECT_EQ(p.rx_descriptors, 1024);
  EXPECT_EQ(p.tx_descriptors, 1024);
  EXPECT_EQ(p.address, *ws::Ipv4Cidr::parse("10.0.0.1/24"));
  EXPECT_FALSE(p.gateway);
  EXPECT_FALSE(p.mac);

  EXPECT_TRUE(c.services.empty());

  EXPECT_EQ(c.tcp.congestion, Congestion::cubic);
  EXPECT_EQ(c.tcp.time_wait_ms, 60000u);
  EXPECT_EQ(c.tcp.time_wait_reuse_ms, 1000u);
  EXPECT_EQ(c.tcp.rto_min_ms, 200u);
  EXPECT_EQ(c.tcp.rto_initial_ms, 1000u);
  EXPECT_EQ(c.tcp.delayed_ack_ms, 40u);
  EXPECT_FALSE(c.tcp.nagle);
  EXPECT_FALSE(c.tcp.keepalive.enabled);
  EXPECT_EQ(c.tcp.keepalive.idle_s, 7200u);
  EXPECT_EQ(c.tcp.keepalive.interval_s, 75u);
  EXPECT_EQ(c.tcp.keepalive.probes, 9u);
  EXPECT_FALSE(c.tcp.receive_buffer_bytes);  // auto
  EXPECT_FALSE(c.tcp.send_buffer_bytes);     // auto
  EXPECT_EQ(c.tcp.buffer_max_bytes, 6291456u);
  EXPECT_EQ(c.tcp.syn_backlog, 1024u);
  EXPECT_EQ(c.tcp.accept_backlog, 1024u);
  EXPECT_EQ(c.tcp.syn_burst_budget, 8u);
  EXPECT_EQ(c.tcp.syn_shed_half_open, 64u);
  EXPECT_EQ(c.tcp.max_connections, 65536u);
  EXPECT_EQ(c.tcp.time_wait_max, 32768u);
  EXPECT_TRUE(c.tcp.timestamps);
  EXPECT_TRUE(c.tcp.sack);
  EXPECT_TRUE(c.tcp.window_scaling);

  EXPECT_EQ(c.pipeline.max_batch_bytes, 65535u);
  EXPECT_EQ(c.pipeline.backoff_us, 20u);
  EXPECT_TRUE(c.pipeline.batching);
  EXPECT_EQ(c.pipeline.max_batches, 4096u);
  EXPECT_TRUE(c.pipeline.mss_multiple);

  EXPECT_EQ(c.control.metrics_listen.to_string(), "127.0.0.1:9550");
}

TEST(ConfigDefaults, ClientDefaultsDependOnKindAndCount) {
  LoadResult r =
      load(with("services:\n"
                "  - { name: a, kind: source, protocol: tcp, target: 10.0.0.2:9 }\n"
                "  - { name: b, kind: ping, protocol: tcp, target: 10.0.0.2:7 }\n"
                "  - { name: c, kind: ping, protocol: tcp, target: 10.0.0.2:7, "
                "count: 100 }\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  const auto& s = r.config->services;
  EXPECT_EQ(s[0].message_size, 1024u);
  EXPECT_EQ(s[0].duration_s, 10u);
  EXPECT_EQ(s[0].connections, 1u);
  EXPECT_EQ(s[0].rate, 0u);
  EXPECT_EQ(s[0].framing, Framing::length32);
  EXPECT_EQ(s[1].message_size, 64u);
  EXPECT_EQ(s[1].duration_s, 10u);
  EXPECT_EQ(s[1].count, 0u);
  // A count alone means "this many round trips", with no time limit.
  EXPECT_EQ(s[2].count, 100u);
  EXPECT_EQ(s[2].duration_s, 0u);
}

TEST(ConfigDefaults, BuffersAcceptAutoOrBytes) {
  LoadResult r = load(with("tcp:\n  receive_buffer: 2097152\n  send_buffer: auto\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->tcp.receive_buffer_bytes, 2097152u);
  EXPECT_FALSE(r.config->tcp.send_buffer_bytes);
}

// The pipeline benchmark baselines: batching off, a fixed batch instead of the MSS multiple.
TEST(ConfigDefaults, PipelineBaselinesParse) {
  LoadResult r =
      load(with("pipeline:\n  batching: false\n  mss_multiple: false\n  max_batch_bytes: 64512\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_FALSE(r.config->pipeline.batching);
  EXPECT_FALSE(r.config->pipeline.mss_multiple);
  EXPECT_EQ(r.config->pipeline.max_batch_bytes, 64512u);
}

// A full example config using every section.
constexpr std::string_view kContractExample = R"(version: 1
dataplane:
  lcores: [0]             # cores that run pipelines (one pipeline per lcore)
  idle: adaptive          # adaptive: back off and sleep when idle | poll: busy-poll always
  file_prefix: wirespeed  # DPDK --file-prefix; unique per instance on one host
  hugepages: false        # false: run with --no-huge and memory_mb of ordinary memory
  memory_mb: 512
  eal_args: []            # extra EAL arguments, passed verbatim
ports:
  - name: p0
    device: net_af_packet0,iface=veth-dp   # a DPDK vdev string; or instead:  pci: "0000:03:00.0"
    mtu: 1500             # 68..9600; TCP MSS and batch sizes are derived from it
    rx_queues: 1
    tx_queues: 1
    rx_descriptors: 1024
    tx_descriptors: 1024
    address: 10.77.0.1/24
    gateway: 10.77.0.254  # optional
    mac: "02:00:00:00:00:01"  # optional; default: the port's own
services:
  - { name: echo-tcp, kind: echo,   protocol: tcp, port: 7 }
  - { name: echo-udp, kind: echo,   protocol: udp, port: 7 }
  - { name: sink-tcp, kind: sink,   protocol: tcp, port: 9 }
  - { name: load,     kind: source, protocol: tcp, target: "10.77.0.2:9",
      message_size: 1024, connections: 1, duration_s: 10 }
  - { name: rtt,      kind: ping,   protocol: tcp, target: "10.77.0.2:7",
      message_size: 64, count: 10000 }       # reconnect: true = a new connection per round trip
  - { name: perf,     kind: iperf3, protocol: tcp, port: 5201 }
  - { name: web,      kind: http,   protocol: tcp, port: 80,
      responses: [ { path: "/", body_bytes: 438 },
                   { path: "/1m.bin", body_bytes: 1048576, content_type: application/octet-stream } ] }
control:
  metrics_listen: 127.0.0.1:9550
)";

TEST(ConfigDefaults, ContractExampleLoadsWithTypedValues) {
  LoadResult r = load(kContractExample);
  ASSERT_TRUE(r.config) << all_errors(r);
  const Config& c = *r.config;
  const PortConfig& p = c.ports.at(0);
  EXPECT_EQ(p.device, "net_af_packet0,iface=veth-dp");
  EXPECT_EQ(p.gateway, ws::Ipv4Addr::from_octets(10, 77, 0, 254));
  EXPECT_EQ(p.mac, ws::MacAddr::parse("02:00:00:00:00:01"));
  ASSERT_EQ(c.services.size(), 7u);
  EXPECT_EQ(c.services[1].kind, ServiceKind::echo);
  EXPECT_EQ(c.services[1].protocol, Protocol::udp);
  EXPECT_EQ(c.services[1].port, 7);
  const ServiceConfig& load_svc = c.services[3];
  EXPECT_EQ(load_svc.kind, ServiceKind::source);
  EXPECT_EQ(load_svc.target, ws::Endpoint::parse("10.77.0.2:9"));
  EXPECT_EQ(load_svc.message_size, 1024u);
  EXPECT_EQ(load_svc.duration_s, 10u);
  const ServiceConfig& rtt = c.services[4];
  EXPECT_EQ(rtt.kind, ServiceKind::ping);
  EXPECT_EQ(rtt.count, 10000u);
  EXPECT_FALSE(rtt.reconnect);
  EXPECT_EQ(rtt.max_connecting, 256u);
  const ServiceConfig& web = c.services[6];
  EXPECT_EQ(web.kind, ServiceKind::http);
  ASSERT_EQ(web.responses.size(), 2u);
  EXPECT_EQ(web.responses[0].path, "/");
  EXPECT_EQ(web.responses[0].body_bytes, 438u);
  EXPECT_EQ(web.responses[0].status, 200);
  EXPECT_EQ(web.responses[0].content_type, "text/html");
  EXPECT_FALSE(web.responses[0].body);
  EXPECT_EQ(web.responses[1].content_type, "application/octet-stream");
  EXPECT_EQ(web.responses[1].body_bytes, 1048576u);
}

TEST(ConfigDefaults, LiteralBodySetsBodyBytes) {
  LoadResult r =
      load(with("services:\n"
                "  - name: web\n"
                "    kind: http\n"
                "    protocol: tcp\n"
                "    port: 80\n"
                "    responses:\n"
                "      - { path: /hi, body: \"hello\\n\", status: 201, "
                "content_type: text/plain }\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  const HttpResponse& resp = r.config->services.at(0).responses.at(0);
  EXPECT_EQ(resp.body, "hello\n");
  EXPECT_EQ(resp.body_bytes, 6u);
  EXPECT_EQ(resp.status, 201);
  EXPECT_EQ(resp.content_type, "text/plain");
}

TEST(ConfigDefaults, EnumNamesRoundTrip) {
  EXPECT_EQ(to_string(IdleMode::poll), "poll");
  EXPECT_EQ(to_string(Offloads::automatic), "auto");
  EXPECT_EQ(to_string(ServiceKind::iperf3), "iperf3");
  EXPECT_EQ(to_string(Protocol::udp), "udp");
  EXPECT_EQ(to_string(Framing::length32), "length32");
  EXPECT_EQ(to_string(Congestion::newreno), "newreno");
  EXPECT_TRUE(is_client(ServiceKind::ping));
  EXPECT_FALSE(is_client(ServiceKind::http));
}

}  // namespace
}  // namespace ws::config::test
