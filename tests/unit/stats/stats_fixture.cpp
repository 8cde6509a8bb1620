// A stand-in data plane for tests of wirespeed-control: registers the docs/metrics.md metrics
// in a stats segment at PATH and makes them move, until SIGTERM/SIGINT (clean exit:
// segment removed) or SIGKILL (segment left behind, as after a crash).
//   stats_fixture PATH [PACKETS_PER_SECOND]
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "control/stats/writer.hpp"

namespace {
volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  using namespace ws::stats;
  if (argc < 2) {
    std::fprintf(stderr, "usage: stats_fixture PATH [PACKETS_PER_SECOND]\n");
    return 2;
  }
  const uint64_t pps = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000;
  Writer w;
  if (!w.create(argv[1], {.lcore_ids = {1, 2}})) {
    std::fprintf(stderr, "%s\n", w.last_error().c_str());
    return 1;
  }
  bool ok = true;
  auto reg = [&](MetricSpec s) {
    auto slot = w.register_metric(s);
    if (!slot) {
      std::fprintf(stderr, "%s\n", w.last_error().c_str());
      ok = false;
    }
    return slot.value_or(Slot{});
  };
  auto port = [&](const char* name, const char* help, MetricType t = MetricType::kCounter) {
    return reg({.name = name,
                .help = help,
                .type = t,
                .labels = {{"port", "p0"}},
                .scope = Scope::kGlobal});
  };
  Slot rxp = port("wirespeed_port_receive_packets_total", "Packets received by the port.");
  Slot rxb = port("wirespeed_port_receive_bytes_total", "Bytes received by the port.");
  Slot txp = port("wirespeed_port_transmit_packets_total", "Packets transmitted by the port.");
  Slot txb = port("wirespeed_port_transmit_bytes_total", "Bytes transmitted by the port.");
  port("wirespeed_port_receive_missed_packets_total", "Packets missed by the port.");
  Slot mtu = port("wirespeed_port_mtu_bytes", "MTU of the port.", MetricType::kGauge);
  Slot link = port("wirespeed_port_link_up", "1 when the link is up.", MetricType::kGauge);
  Slot in_use = port("wirespeed_mempool_in_use", "Mbufs in use.", MetricType::kGauge);
  Slot size = port("wirespeed_mempool_size", "Mbufs in the pool.", MetricType::kGauge);
  Slot drop = reg({.name = "wirespeed_drops_total",
                   .help = "Packets dropped, by reason.",
                   .labels = {{"reason", "ipv4_bad_checksum"}}});
  reg({.name = "wirespeed_drops_total",
       .help = "Packets dropped, by reason.",
       .labels = {{"reason", "tcp_no_listener"}}});
  Slot est = reg({.name = "wirespeed_tcp_connections",
                  .help = "TCP connections by state.",
                  .type = MetricType::kGauge,
                  .labels = {{"state", "established"}}});
  reg({.name = "wirespeed_tcp_connections",
       .help = "TCP connections by state.",
       .type = MetricType::kGauge,
       .labels = {{"state", "listen"}}});
  reg({.name = "wirespeed_tcp_retransmitted_segments_total", .help = "Retransmitted segments."});
  Slot srx = reg({.name = "wirespeed_service_received_bytes_total",
                  .help = "Service bytes in.",
                  .labels = {{"service", "echo-tcp"}}});
  Slot stx = reg({.name = "wirespeed_service_sent_bytes_total",
                  .help = "Service bytes out.",
                  .labels = {{"service", "echo-tcp"}}});
  Slot min = reg({.name = "wirespeed_service_messages_total",
                  .help = "Service messages.",
                  .labels = {{"service", "echo-tcp"}, {"direction", "received"}}});
  reg({.name = "wirespeed_service_messages_total",
       .help = "Service messages.",
       .labels = {{"service", "echo-tcp"}, {"direction", "sent"}}});
  Slot rtt = reg({.name = "wirespeed_ping_rtt_seconds",
                  .help = "Ping round-trip time.",
                  .type = MetricType::kHistogram,
                  .labels = {{"service", "rtt"}},
                  .histogram = {.scale = 1e-9, .first = 10, .last = 34}});
  Slot busy = reg({.name = "wirespeed_core_busy_seconds_total",
                   .help = "Busy time.",
                   .scope = Scope::kPerCoreLabeled,
                   .scale = 1e-9});
  Slot idle = reg({.name = "wirespeed_core_idle_seconds_total",
                   .help = "Idle time.",
                   .scope = Scope::kPerCoreLabeled,
                   .scale = 1e-9});
  w.set_info("version", "fixture");
  w.set_info("port.p0.mac", "02:00:00:00:00:01");
  w.set_info("port.p0.address", "10.77.0.1/24");
  if (!ok || !w.seal()) {
    std::fprintf(stderr, "%s\n", w.last_error().c_str());
    return 1;
  }
  signal(SIGTERM, on_stop);
  signal(SIGINT, on_stop);
  w.gauge(mtu).set(1500);
  w.gauge(link).set(1);
  w.gauge(size).set(8191);
  w.gauge(est, 0).set(2);

  // 10 ms ticks. Port counters follow the wall clock exactly (packets = pps x elapsed), so
  // tests can compare measured rates against `pps` with a tight tolerance.
  const uint64_t per_tick = pps / 100;
  const auto start = std::chrono::steady_clock::now();
  uint64_t packets = 0;
  while (!g_stop) {
    usleep(10'000);
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    packets = static_cast<uint64_t>(static_cast<double>(pps) * elapsed.count());
    w.counter(rxp).set(packets);
    w.counter(rxb).set(packets * 100);
    w.counter(txp).set(packets);
    w.counter(txb).set(packets * 100);
    w.gauge(in_use).set(static_cast<int64_t>(packets % 512));
    for (uint32_t c = 0; c < 2; ++c) {
      w.counter(drop, c).add(1);
      w.counter(srx, c).add(per_tick * 50);
      w.counter(stx, c).add(per_tick * 50);
      w.counter(min, c).add(per_tick / 2);
      w.histogram(rtt, c).observe(20'000 + packets % 10'000);
      w.counter(busy, c).add(c == 0 ? 2'500'000 : 7'500'000);
      w.counter(idle, c).add(c == 0 ? 7'500'000 : 2'500'000);
      w.publish(c);
    }
    w.publish_global();
  }
  w.remove();
  return 0;
}
