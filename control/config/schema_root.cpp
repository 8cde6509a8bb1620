// The document root and the small `control` section.
#include <algorithm>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

constexpr uint64_t kSupportedVersion = 1;

// Parses the optional section `key` with `parse` when present; absent sections keep defaults.
template <typename Parse>
void section(const MapView& root, std::string_view key,
             std::initializer_list<std::string_view> known, Parse&& parse) {
  auto v = root.get(key);
  if (!v) return;
  MapView m(root.diag(), *v, known);
  if (m.is_map()) parse(m);
}

// With `lcores: auto`, a port whose queue counts are not given gets one RX and one TX
// queue per lcore, so every core has queues of its own.
void follow_lcores(Config& out, const Origins& origins) {
  if (!out.dataplane.lcores_auto) return;
  auto n = static_cast<uint16_t>(std::min<size_t>(out.dataplane.lcores.size(), 64));
  for (size_t i = 0; i < out.ports.size() && i < origins.ports.size(); ++i) {
    if (!origins.ports[i].rx_queues_given) out.ports[i].rx_queues = n;
    if (!origins.ports[i].tx_queues_given) out.ports[i].tx_queues = n;
  }
}

}  // namespace

void parse_control(const MapView& m, ControlConfig& out) {
  if (auto v = m.get("metrics_listen")) {
    if (auto e = read_endpoint(m.diag(), *v)) out.metrics_listen = *e;
  }
}

void parse_root(Diagnostics& d, const YAML::Node& root, Config& out, Origins& origins) {
  Pos root_pos = pos_of(root);
  if (root_pos.line == 0) root_pos = {1, 1};
  MapView m(
      d, Value{root, root_pos, ""},
      {"version", "dataplane", "ports", "services", "tcp", "pipeline", "control", "ipsec", "ipv6"});
  if (!m.is_map()) return;

  if (m.require("version")) {
    auto v = *m.get("version");
    if (auto n = read_uint(d, v, 0, 1000000)) {
      if (*n != kSupportedVersion) {
        d.error(v.pos, "version: unsupported config version " + std::to_string(*n) +
                           "; this build reads version " + std::to_string(kSupportedVersion));
      } else {
        out.version = static_cast<int>(*n);
      }
    }
  }

  section(m, "dataplane",
          {"lcores", "idle", "file_prefix", "hugepages", "memory_mb", "eal_args",
           "stats_interval_ms", "heap_reserve_mb", "mbufs", "offloads", "faults"},
          [&](const MapView& s) { parse_dataplane(s, out.dataplane, origins); });

  if (m.require("ports")) parse_ports(d, *m.get("ports"), out.ports, origins);
  if (auto v = m.get("services")) parse_services(d, *v, out.services, origins);

  section(m, "tcp",
          {"congestion",
           "time_wait_ms",
           "time_wait_reuse_ms",
           "rto_min_ms",
           "rto_initial_ms",
           "delayed_ack_ms",
           "nagle",
           "keepalive",
           "receive_buffer",
           "send_buffer",
           "buffer_max_bytes",
           "syn_backlog",
           "syn_burst_budget",
           "syn_shed_half_open",
           "accept_backlog",
           "max_connections",
           "time_wait_max",
           "timestamps",
           "sack",
           "window_scaling",
           "mtu_probing",
           "pmtu_recovery_s",
           "syncookies",
           "rst_rate_limit",
           "challenge_ack_limit"},
          [&](const MapView& s) { parse_tcp(s, out.tcp); });
  section(m, "pipeline",
          {"max_batch_bytes", "backoff_us", "batching", "max_batches", "mss_multiple"},
          [&](const MapView& s) { parse_pipeline(s, out.pipeline, origins); });
  section(m, "control", {"metrics_listen"},
          [&](const MapView& s) { parse_control(s, out.control); });
  follow_lcores(out, origins);
  section(m, "ipv6", {"link_local", "stable_secret_file", "dad_transmits", "accept_ra"},
          [&](const MapView& s) { parse_ipv6(s, out.ipv6); });
  section(m, "ipsec", {"state_dir", "sas", "policies"},
          [&](const MapView& s) { parse_ipsec(s, out.ipsec, origins); });
}

}  // namespace ws::config::detail
