// wirespeed-control's option parsing and the status report built from two snapshots.
#include <gtest/gtest.h>

#include <map>

#include "control/cli/options.hpp"
#include "control/cli/status.hpp"
#include "control/stats/writer.hpp"
#include "test_util.hpp"

namespace ws::cli {
namespace {

ParseResult parse(std::vector<std::string> args) {
  return stats::test::parse_args(std::move(args));
}

TEST(Options, Commands) {
  auto r = parse({"-c", "f.yaml", "serve"});
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->command, Command::kServe);
  EXPECT_EQ(r.options->config_path, "f.yaml");
  r = parse({"--config", "f.yaml", "status", "--json", "--interval", "0.2"});
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_TRUE(r.options->json);
  EXPECT_DOUBLE_EQ(r.options->interval_s, 0.2);
  EXPECT_EQ(parse({"--help"}).options->command, Command::kHelp);
  EXPECT_EQ(parse({"--version"}).options->command, Command::kVersion);
}

TEST(Options, Errors) {
  EXPECT_FALSE(parse({"serve"}).options);                       // no config
  EXPECT_FALSE(parse({"-c"}).options);                          // missing FILE
  EXPECT_FALSE(parse({"-c", "f", "serve", "status"}).options);  // two commands
  EXPECT_FALSE(parse({"-c", "f", "serve", "--json"}).options);
  EXPECT_FALSE(parse({"-c", "f", "status", "--interval", "x"}).options);
  EXPECT_FALSE(parse({"-c", "f", "frobnicate"}).options);
  EXPECT_TRUE(parse({"--stats-path", "/x", "status"}).options);
}

TEST(Status, RatesTotalsBusyDropsAndJson) {
  using namespace ws::stats;
  test::TempDir dir;
  Writer w;
  ASSERT_TRUE(w.create(dir.file("st.stats"), {.lcore_ids = {1}}));
  auto reg = [&](MetricSpec s) {
    auto slot = w.register_metric(s);
    EXPECT_TRUE(slot) << w.last_error();
    return *slot;
  };
  Slot rxp = reg({.name = "wirespeed_port_receive_packets_total",
                  .help = "x",
                  .labels = {{"port", "p0"}},
                  .scope = Scope::kGlobal});
  Slot rxb = reg({.name = "wirespeed_port_receive_bytes_total",
                  .help = "x",
                  .labels = {{"port", "p0"}},
                  .scope = Scope::kGlobal});
  Slot l4err = reg(
      {.name = "wirespeed_port_l4_checksum_errors_total", .help = "x", .labels = {{"port", "p0"}}});
  Slot hint = reg({.name = "wirespeed_port_l4_checksum_hint",
                   .help = "x",
                   .type = MetricType::kGauge,
                   .labels = {{"port", "p0"}},
                   .scope = Scope::kGlobal});
  Slot svc_rx = reg({.name = "wirespeed_service_received_bytes_total",
                     .help = "x",
                     .labels = {{"service", "sink-udp"}}});
  Slot svc_msgs = reg({.name = "wirespeed_service_messages_total",
                       .help = "x",
                       .labels = {{"service", "sink-udp"}, {"direction", "received"}}});
  reg({.name = "wirespeed_service_messages_total",
       .help = "x",
       .labels = {{"service", "sink-udp"}, {"direction", "sent"}}});
  Slot link = reg({.name = "wirespeed_port_link_up",
                   .help = "x",
                   .type = MetricType::kGauge,
                   .labels = {{"port", "p0"}},
                   .scope = Scope::kGlobal});
  Slot busy = reg({.name = "wirespeed_core_busy_seconds_total",
                   .help = "x",
                   .scope = Scope::kPerCoreLabeled,
                   .scale = 1e-9});
  Slot idle = reg({.name = "wirespeed_core_idle_seconds_total",
                   .help = "x",
                   .scope = Scope::kPerCoreLabeled,
                   .scale = 1e-9});
  Slot d1 = reg({.name = "wirespeed_drops_total", .help = "x", .labels = {{"reason", "one"}}});
  Slot d2 = reg({.name = "wirespeed_drops_total", .help = "x", .labels = {{"reason", "two"}}});
  Slot est = reg({.name = "wirespeed_tcp_connections",
                  .help = "x",
                  .type = MetricType::kGauge,
                  .labels = {{"state", "established"}}});
  ASSERT_TRUE(w.set_info("port.p0.mac", "02:00:00:00:00:09"));
  ASSERT_TRUE(w.set_info("version", "9.9"));
  ASSERT_TRUE(w.set_info("port.p0.l4_checksum_hint", "fix: ethtool -K peer0 tx off"));
  ASSERT_TRUE(w.seal());
  Reader r(dir.file("st.stats"));
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  Snapshot a, b;
  // Before the first snapshot: traffic that is over by the time status runs.
  w.counter(rxp).set(200);
  w.counter(rxb).set(25000);
  w.counter(svc_rx, 0).add(100000);
  w.counter(svc_msgs, 0).add(1000);
  w.counter(l4err, 0).add(4);
  w.publish(0);
  w.publish_global();
  ASSERT_TRUE(r.read(&a));
  // The report before the data plane flagged the hint: the count shows, no hint yet.
  StatusReport quiet = build_status_report(Settings{}, a, a);
  ASSERT_EQ(quiet.ports.size(), 1u);
  EXPECT_EQ(quiet.ports[0].l4_checksum_errors, 4u);
  EXPECT_EQ(quiet.ports[0].checksum_hint, "");
  EXPECT_EQ(render_text(quiet).find("HINT"), std::string::npos);
  w.gauge(hint).set(1);
  w.counter(rxp).set(1200);
  w.counter(rxb).set(150000);
  w.gauge(link).set(1);
  w.counter(busy, 0).add(300);
  w.counter(idle, 0).add(700);
  w.counter(d1, 0).add(5);
  w.counter(d2, 0).add(50);
  w.gauge(est, 0).set(3);
  w.publish(0);
  w.publish_global();
  ASSERT_TRUE(r.read(&b));
  b.taken_monotonic_ns = a.taken_monotonic_ns + 2'000'000'000;  // pretend 2 s passed

  Settings settings;
  settings.ports.push_back({"p0", "net_null0", "10.0.0.1/24", "", 1500});
  StatusReport rep = build_status_report(settings, a, b);
  ASSERT_EQ(rep.ports.size(), 1u);
  EXPECT_EQ(rep.ports[0].mac, "02:00:00:00:00:09");  // the data plane's word wins
  EXPECT_EQ(rep.ports[0].address, "10.0.0.1/24");
  EXPECT_EQ(rep.ports[0].link_up, true);
  EXPECT_EQ(rep.ports[0].mtu, 1500);
  EXPECT_DOUBLE_EQ(rep.ports[0].rx_packets_per_s, 500);
  EXPECT_DOUBLE_EQ(rep.ports[0].rx_bits_per_s, 500000);
  EXPECT_EQ(rep.ports[0].rx_packets, 1200u);  // totals since start, not since `a`
  EXPECT_EQ(rep.ports[0].rx_bytes, 150000u);
  EXPECT_EQ(rep.ports[0].l4_checksum_errors, 4u);
  EXPECT_EQ(rep.ports[0].checksum_hint, "fix: ethtool -K peer0 tx off");
  ASSERT_EQ(rep.services.size(), 1u);
  EXPECT_EQ(rep.services[0].rx_bytes, 100000u);
  EXPECT_DOUBLE_EQ(rep.services[0].rx_bytes_per_s, 0);
  ASSERT_EQ(rep.services[0].messages.size(), 2u);
  EXPECT_EQ(rep.services[0].messages[0].direction, "received");
  EXPECT_EQ(rep.services[0].messages[0].total, 1000u);
  EXPECT_EQ(rep.services[0].messages[1].total, 0u);
  ASSERT_EQ(rep.cores.size(), 1u);
  EXPECT_EQ(rep.cores[0].lcore, 1u);
  EXPECT_DOUBLE_EQ(rep.cores[0].busy_ratio.value_or(-1), 0.3);
  EXPECT_EQ(rep.drops_total, 55u);
  ASSERT_EQ(rep.top_drops.size(), 2u);
  EXPECT_EQ(rep.top_drops[0].reason, "two");
  EXPECT_EQ(rep.drops.size(), 2u);
  ASSERT_EQ(rep.tcp_connections.size(), 1u);
  EXPECT_EQ(rep.tcp_connections[0].second, 3);

  std::string json = render_json(rep);
  EXPECT_NE(json.find("\"rx_packets_per_second\":500"), std::string::npos) << json;
  EXPECT_NE(json.find("\"connections\":{\"established\":3}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"rx_packets\":1200,\"tx_packets\":0,\"rx_bytes\":150000"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"l4_checksum_errors\":4,\"checksum_hint\":\"fix: ethtool -K peer0"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"messages\":{\"received\":1000,\"sent\":0}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"by_reason\":{\"two\":50,\"one\":5}"), std::string::npos) << json;
  std::string txt = render_text(rep);
  EXPECT_NE(txt.find("30.0%"), std::string::npos) << txt;
  // Totals next to rates: the port's traffic row, the service's messages and bytes.
  EXPECT_NE(
      txt.find("p0                 1200         150000            0              0       500"),
      std::string::npos)
      << txt;
  EXPECT_NE(txt.find("sink-udp     -             1000         100000          0              0"),
            std::string::npos)
      << txt;
  EXPECT_NE(txt.find("HINT port p0: TCP/UDP checksum failures; fix: ethtool -K peer0 tx off\n"),
            std::string::npos)
      << txt;
  w.remove();
}

TEST(Status, PerCoreFramesConnectionsAndRedirects) {
  using namespace ws::stats;
  test::TempDir dir;
  Writer w;
  ASSERT_TRUE(w.create(dir.file("pc.stats"), {.lcore_ids = {0, 1}}));
  auto reg = [&](const char* name) {
    auto slot = w.register_metric({.name = name, .help = "x", .scope = Scope::kPerCoreLabeled});
    EXPECT_TRUE(slot) << w.last_error();
    return *slot;
  };
  Slot frames = reg("wirespeed_core_received_frames_total");
  Slot conns = reg("wirespeed_core_connections_total");
  Slot redirected = reg("wirespeed_core_redirected_out_frames_total");
  ASSERT_TRUE(w.seal());
  Reader r(dir.file("pc.stats"));
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  Snapshot a, b;
  w.publish(0);
  w.publish(1);
  ASSERT_TRUE(r.read(&a));
  w.counter(frames, 0).add(4000);
  w.counter(frames, 1).add(6000);
  w.counter(conns, 0).add(31);
  w.counter(conns, 1).add(33);
  w.counter(redirected, 1).add(200);
  w.publish(0);
  w.publish(1);
  ASSERT_TRUE(r.read(&b));
  b.taken_monotonic_ns = a.taken_monotonic_ns + 2'000'000'000;

  StatusReport rep = build_status_report(Settings{}, a, b);
  ASSERT_EQ(rep.cores.size(), 2u);
  EXPECT_DOUBLE_EQ(rep.cores[0].frames_per_s, 2000);
  EXPECT_DOUBLE_EQ(rep.cores[1].frames_per_s, 3000);
  EXPECT_EQ(rep.cores[0].connections, 31u);
  EXPECT_EQ(rep.cores[1].connections, 33u);
  EXPECT_DOUBLE_EQ(rep.cores[0].redirected_per_s, 0);
  EXPECT_DOUBLE_EQ(rep.cores[1].redirected_per_s, 100);
  EXPECT_TRUE(rep.families.empty());  // a data plane without the family series
  std::string txt = render_text(rep);
  EXPECT_NE(txt.find("REDIR/s"), std::string::npos) << txt;
  std::string json = render_json(rep);
  EXPECT_NE(json.find("\"redirected_frames_per_second\":100"), std::string::npos) << json;
  w.remove();
}

// IPv6 on the status screen: each address (from the info entries) with its DAD state
// from the masks, the learned router from its interface identifier (gateway6, when
// configured, instead), and the neighbour cache size.
TEST(Status, Ipv6AddressesRouterAndNeighbours) {
  using namespace ws::stats;
  test::TempDir dir;
  Writer w;
  ASSERT_TRUE(w.create(dir.file("v6.stats"), {.lcore_ids = {0, 1}}));
  auto reg = [&](const char* name, std::vector<LabelPair> labels) {
    MetricSpec s;
    s.name = name;
    s.help = "x";
    s.type = MetricType::kGauge;
    s.labels = std::move(labels);
    s.scope = Scope::kPerCoreSum;
    auto slot = w.register_metric(s);
    EXPECT_TRUE(slot) << w.last_error();
    return *slot;
  };
  Slot tentative =
      reg("wirespeed_ipv6_address_state_mask", {{"port", "p0"}, {"state", "tentative"}});
  Slot preferred =
      reg("wirespeed_ipv6_address_state_mask", {{"port", "p0"}, {"state", "preferred"}});
  Slot duplicate =
      reg("wirespeed_ipv6_address_state_mask", {{"port", "p0"}, {"state", "duplicate"}});
  Slot iid = reg("wirespeed_ipv6_learned_router_iid", {{"port", "p0"}});
  Slot neighbors = reg("wirespeed_ndp_neighbors", {});
  ASSERT_TRUE(w.set_info("port.p0.ipv6_link_local", "fe80::1/64"));
  ASSERT_TRUE(w.set_info("port.p0.ipv6_addresses", "2001:db8::1/64 2001:db8::2/64"));
  ASSERT_TRUE(w.seal());
  w.core_values(0)[preferred.offset] = 0b001;
  w.core_values(0)[tentative.offset] = 0b010;
  w.core_values(0)[duplicate.offset] = 0b100;
  w.core_values(0)[iid.offset] = 0x0000000000010002u;  // fe80::1:2
  w.core_values(0)[neighbors.offset] = 2;
  w.core_values(1)[neighbors.offset] = 3;
  w.publish(0);
  w.publish(1);
  Reader r(dir.file("v6.stats"));
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  Snapshot a;
  ASSERT_TRUE(r.read(&a));

  Settings settings;
  settings.ports.push_back(PortSettings{});
  settings.ports.back().name = "p0";
  StatusReport rep = build_status_report(settings, a, a);
  ASSERT_EQ(rep.ports.size(), 1u);
  const auto& v6 = rep.ports[0].ipv6_addresses;
  ASSERT_EQ(v6.size(), 3u);
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(v6[0], (P{"fe80::1/64", "preferred"}));
  EXPECT_EQ(v6[1], (P{"2001:db8::1/64", "tentative"}));
  EXPECT_EQ(v6[2], (P{"2001:db8::2/64", "duplicate"}));
  EXPECT_EQ(rep.ports[0].ipv6_router, "fe80::1:2");
  EXPECT_EQ(rep.ndp_neighbors, 5);
  std::string txt = render_text(rep);
  EXPECT_NE(txt.find("ipv6 2001:db8::2/64 duplicate"), std::string::npos) << txt;
  EXPECT_NE(txt.find("ipv6 default router fe80::1:2"), std::string::npos) << txt;
  EXPECT_NE(txt.find("IPv6 neighbour cache entries: 5"), std::string::npos) << txt;
  std::string json = render_json(rep);
  EXPECT_NE(json.find(R"({"address":"2001:db8::1/64","state":"tentative"})"), std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("ipv6_default_router":"fe80::1:2")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("neighbor_cache_entries":5)"), std::string::npos) << json;
  // No router learned: none shown.
  w.core_values(0)[iid.offset] = 0;
  w.publish(0);
  ASSERT_TRUE(r.read(&a));
  rep = build_status_report(settings, a, a);
  EXPECT_EQ(rep.ports[0].ipv6_router, "");
  EXPECT_NE(render_text(rep).find("ipv6 default router -"), std::string::npos);
  w.remove();
}

// TCP and UDP per family: totals from the second snapshot, rates over the interval, the
// connection gauge summed over states; a row per family in text and an object in JSON.
TEST(Status, TcpAndUdpByFamily) {
  using namespace ws::stats;
  test::TempDir dir;
  Writer w;
  ASSERT_TRUE(w.create(dir.file("fam.stats"), {.lcore_ids = {0}}));
  auto reg = [&](const char* name, std::vector<LabelPair> labels, MetricType t) {
    MetricSpec s;
    s.name = name;
    s.help = "x";
    s.type = t;
    s.labels = std::move(labels);
    s.scope = Scope::kPerCoreSum;
    auto slot = w.register_metric(s);
    EXPECT_TRUE(slot) << w.last_error();
    return *slot;
  };
  const auto c = MetricType::kCounter;
  std::map<std::string, Slot> in, udp_out, opens, est;
  for (const char* f : {"ipv4", "ipv6"}) {
    in[f] = reg("wirespeed_tcp_received_segments_by_family_total", {{"family", f}}, c);
    udp_out[f] = reg("wirespeed_udp_sent_datagrams_by_family_total", {{"family", f}}, c);
    opens[f] = reg("wirespeed_tcp_passive_opens_by_family_total", {{"family", f}}, c);
    est[f] = reg("wirespeed_tcp_connections_by_family", {{"family", f}, {"state", "established"}},
                 MetricType::kGauge);
    reg("wirespeed_tcp_connections_by_family", {{"family", f}, {"state", "time_wait"}},
        MetricType::kGauge);
  }
  ASSERT_TRUE(w.seal());
  Reader r(dir.file("fam.stats"));
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  uint64_t* v = w.core_values(0);
  v[in["ipv4"].offset] = 100;
  v[in["ipv6"].offset] = 10;
  w.publish(0);
  Snapshot a, b;
  ASSERT_TRUE(r.read(&a));
  v[in["ipv4"].offset] = 300;
  v[in["ipv6"].offset] = 30;
  v[udp_out["ipv6"].offset] = 7;
  v[opens["ipv6"].offset] = 4;
  v[est["ipv6"].offset] = 3;
  w.publish(0);
  ASSERT_TRUE(r.read(&b));
  b.taken_monotonic_ns = a.taken_monotonic_ns + 2'000'000'000;

  StatusReport rep = build_status_report(Settings{}, a, b);
  ASSERT_EQ(rep.families.size(), 2u);
  EXPECT_EQ(rep.families[0].family, "ipv4");
  EXPECT_EQ(rep.families[0].tcp_segments_in, 300u);
  EXPECT_DOUBLE_EQ(rep.families[0].tcp_segments_in_per_s, 100);
  EXPECT_EQ(rep.families[0].udp_out, 0u);
  EXPECT_EQ(rep.families[1].family, "ipv6");
  EXPECT_EQ(rep.families[1].tcp_segments_in, 30u);
  EXPECT_DOUBLE_EQ(rep.families[1].tcp_segments_in_per_s, 10);
  EXPECT_EQ(rep.families[1].udp_out, 7u);
  EXPECT_EQ(rep.families[1].tcp_passive_opens, 4u);
  EXPECT_EQ(rep.families[1].tcp_connections, 3);
  EXPECT_EQ(rep.families[1].tcp_established, 3);
  std::string txt = render_text(rep);
  EXPECT_NE(txt.find("FAMILY"), std::string::npos) << txt;
  EXPECT_NE(txt.find("\nipv6            3       3       0        4"), std::string::npos) << txt;
  std::string json = render_json(rep);
  EXPECT_NE(json.find(R"("family":"ipv6")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("udp_sent_datagrams":7)"), std::string::npos) << json;
  w.remove();
}

}  // namespace
}  // namespace ws::cli
