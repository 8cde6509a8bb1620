// Building the status report from two snapshots: which metric names mean what.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "control/cli/status.hpp"

namespace ws::cli {
namespace {

using ws::stats::MetricInfo;
using ws::stats::Snapshot;

// The names the data plane registers (docs/metrics.md).
constexpr const char* kRxPackets = "wirespeed_port_receive_packets_total";
constexpr const char* kRxBytes = "wirespeed_port_receive_bytes_total";
constexpr const char* kTxPackets = "wirespeed_port_transmit_packets_total";
constexpr const char* kTxBytes = "wirespeed_port_transmit_bytes_total";
constexpr const char* kRxMissed = "wirespeed_port_receive_missed_packets_total";
constexpr const char* kMtu = "wirespeed_port_mtu_bytes";
constexpr const char* kLinkUp = "wirespeed_port_link_up";
constexpr const char* kMempoolInUse = "wirespeed_mempool_in_use";
constexpr const char* kMempoolSize = "wirespeed_mempool_size";
constexpr const char* kBusy = "wirespeed_core_busy_seconds_total";
constexpr const char* kIdle = "wirespeed_core_idle_seconds_total";
constexpr const char* kCoreFrames = "wirespeed_core_received_frames_total";
constexpr const char* kCoreConns = "wirespeed_core_connections_total";
constexpr const char* kCoreRedirected = "wirespeed_core_redirected_out_frames_total";
constexpr const char* kSvcRx = "wirespeed_service_received_bytes_total";
constexpr const char* kSvcTx = "wirespeed_service_sent_bytes_total";
constexpr const char* kSvcMsgs = "wirespeed_service_messages_total";
constexpr const char* kTcpConns = "wirespeed_tcp_connections";
constexpr const char* kRetrans = "wirespeed_tcp_retransmitted_segments_total";
constexpr const char* kDrops = "wirespeed_drops_total";
constexpr const char* kL4Errors = "wirespeed_port_l4_checksum_errors_total";
constexpr const char* kL4Hint = "wirespeed_port_l4_checksum_hint";
constexpr const char* kSaPackets = "wirespeed_ipsec_packets_total";
constexpr const char* kSaBytes = "wirespeed_ipsec_bytes_total";
constexpr const char* kSaErrors = "wirespeed_ipsec_errors_total";

bool has(const Snapshot& s, std::string_view name, const ws::stats::Labels& match = {}) {
  for (const MetricInfo& m : s.catalog->metrics) {
    if (m.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) ok = ok && m.label(k) == v;
    if (ok) return true;
  }
  return false;
}

// Label values of `key` over all series of `name`, in registration order.
std::vector<std::string> label_values(const Snapshot& s, std::string_view name,
                                      std::string_view key) {
  std::vector<std::string> out;
  for (const MetricInfo& m : s.catalog->metrics) {
    if (m.name != name) continue;
    std::string v(m.label(key));
    if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

double rate(uint64_t before, uint64_t after, double dt) {
  return after >= before && dt > 0 ? static_cast<double>(after - before) / dt : 0.0;
}

std::optional<int64_t> gauge(const Snapshot& s, std::string_view name,
                             const ws::stats::Labels& match) {
  if (!has(s, name, match)) return std::nullopt;
  return static_cast<int64_t>(s.sum(name, match));
}

void add_unique(std::vector<std::string>& v, const std::string& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// The config's ports, then any others the data plane reports.
std::vector<PortStatus> port_statuses(const Settings& settings, const Snapshot& a,
                                      const Snapshot& b, double dt) {
  std::vector<PortStatus> out;
  const auto& cat = *b.catalog;
  std::vector<std::string> ports;
  for (const auto& p : settings.ports) ports.push_back(p.name);
  for (const auto& p : label_values(b, kRxPackets, "port")) add_unique(ports, p);
  for (const auto& name : ports) {
    PortStatus p;
    p.name = name;
    const PortSettings* cfg = nullptr;
    for (const auto& ps : settings.ports) {
      if (ps.name == name) cfg = &ps;
    }
    auto info = [&](const char* what, const std::string& fallback) {
      std::string_view v = cat.info_value("port." + name + "." + what);
      return v.empty() ? fallback : std::string(v);
    };
    p.device = info("device", cfg ? cfg->device : "");
    p.mac = info("mac", cfg ? cfg->mac : "");
    p.address = info("address", cfg ? cfg->address : "");
    ws::stats::Labels sel = {{"port", name}};
    if (auto up = gauge(b, kLinkUp, sel)) p.link_up = *up != 0;
    p.mtu = gauge(b, kMtu, sel);
    if (!p.mtu && cfg) p.mtu = cfg->mtu;
    p.rx_packets = b.sum(kRxPackets, sel);
    p.tx_packets = b.sum(kTxPackets, sel);
    p.rx_bytes = b.sum(kRxBytes, sel);
    p.tx_bytes = b.sum(kTxBytes, sel);
    p.rx_missed = b.sum(kRxMissed, sel);
    p.l4_checksum_errors = b.sum(kL4Errors, sel);
    if (gauge(b, kL4Hint, sel).value_or(0) != 0) p.checksum_hint = info("l4_checksum_hint", "");
    p.rx_packets_per_s = rate(a.sum(kRxPackets, sel), p.rx_packets, dt);
    p.tx_packets_per_s = rate(a.sum(kTxPackets, sel), p.tx_packets, dt);
    p.rx_bits_per_s = 8 * rate(a.sum(kRxBytes, sel), p.rx_bytes, dt);
    p.tx_bits_per_s = 8 * rate(a.sum(kTxBytes, sel), p.tx_bytes, dt);
    p.mempool_in_use = gauge(b, kMempoolInUse, sel);
    p.mempool_size = gauge(b, kMempoolSize, sel);
    out.push_back(std::move(p));
  }
  return out;
}

// Busy share of the cycles spent since the first snapshot, frames and connections.
std::vector<CoreStatus> core_statuses(const Snapshot& a, const Snapshot& b, double dt) {
  std::vector<CoreStatus> out;
  const auto& cat = *b.catalog;
  auto per_core = [&cat](const char* name) -> const MetricInfo* {
    for (const MetricInfo& m : cat.metrics) {
      if (m.name == name && m.scope != ws::stats::Scope::kGlobal) return &m;
    }
    return nullptr;
  };
  const MetricInfo* busy = per_core(kBusy);
  const MetricInfo* idle = per_core(kIdle);
  const MetricInfo* frames = per_core(kCoreFrames);
  const MetricInfo* conns = per_core(kCoreConns);
  const MetricInfo* redirected = per_core(kCoreRedirected);
  for (uint32_t c = 0; c < cat.lcore_ids.size(); ++c) {
    CoreStatus cs;
    cs.lcore = cat.lcore_ids[c];
    if (busy != nullptr && idle != nullptr) {
      double db = rate(a.core_value(*busy, c), b.core_value(*busy, c), 1.0);
      double di = rate(a.core_value(*idle, c), b.core_value(*idle, c), 1.0);
      if (db + di > 0) cs.busy_ratio = db / (db + di);
    }
    if (frames != nullptr)
      cs.frames_per_s = rate(a.core_value(*frames, c), b.core_value(*frames, c), dt);
    if (conns != nullptr) cs.connections = b.core_value(*conns, c);
    if (redirected != nullptr)
      cs.redirected_per_s = rate(a.core_value(*redirected, c), b.core_value(*redirected, c), dt);
    out.push_back(cs);
  }
  return out;
}

std::vector<ServiceStatus> service_statuses(const Settings& settings, const Snapshot& a,
                                            const Snapshot& b, double dt) {
  std::vector<ServiceStatus> out;
  const auto& cat = *b.catalog;
  std::vector<std::string> services;
  for (const auto& s : settings.services) services.push_back(s.name);
  for (const auto& s : label_values(b, kSvcRx, "service")) add_unique(services, s);
  for (const auto& s : label_values(b, kSvcMsgs, "service")) add_unique(services, s);
  for (const auto& name : services) {
    ServiceStatus s;
    s.name = name;
    s.kind = std::string(cat.info_value("service." + name + ".kind"));
    for (const auto& cfg : settings.services) {
      if (cfg.name == name && s.kind.empty()) s.kind = cfg.kind;
    }
    ws::stats::Labels sel = {{"service", name}};
    s.rx_bytes = b.sum(kSvcRx, sel);
    s.tx_bytes = b.sum(kSvcTx, sel);
    s.rx_bytes_per_s = rate(a.sum(kSvcRx, sel), s.rx_bytes, dt);
    s.tx_bytes_per_s = rate(a.sum(kSvcTx, sel), s.tx_bytes, dt);
    for (const auto& dir : label_values(b, kSvcMsgs, "direction")) {
      ws::stats::Labels both = {{"service", name}, {"direction", dir}};
      if (has(b, kSvcMsgs, both)) {
        uint64_t total = b.sum(kSvcMsgs, both);
        s.messages.push_back({dir, total, rate(a.sum(kSvcMsgs, both), total, dt)});
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SaStatus> sa_statuses(const Snapshot& a, const Snapshot& b, double dt) {
  std::vector<SaStatus> out;
  const auto& cat = *b.catalog;
  for (const auto& name : label_values(b, kSaPackets, "sa")) {
    SaStatus sa;
    sa.name = name;
    const std::string info = "ipsec.sa." + name + ".";
    sa.direction = std::string(cat.info_value(info + "direction"));
    sa.spi = std::string(cat.info_value(info + "spi"));
    sa.mode = std::string(cat.info_value(info + "mode"));
    sa.cipher = std::string(cat.info_value(info + "cipher"));
    sa.peer = std::string(cat.info_value(info + "peer"));
    ws::stats::Labels sel = {{"sa", name}};
    sa.packets = b.sum(kSaPackets, sel);
    sa.packets_per_s = rate(a.sum(kSaPackets, sel), sa.packets, dt);
    sa.bytes_per_s = rate(a.sum(kSaBytes, sel), b.sum(kSaBytes, sel), dt);
    for (const auto& reason : label_values(b, kSaErrors, "reason")) {
      const uint64_t n = b.sum(kSaErrors, {{"sa", name}, {"reason", reason}});
      if (n > 0) sa.errors.emplace_back(reason, n);
    }
    out.push_back(std::move(sa));
  }
  return out;
}

}  // namespace

StatusReport build_status_report(const Settings& settings, const Snapshot& a, const Snapshot& b) {
  StatusReport r;
  const auto& cat = *b.catalog;
  const double dt = static_cast<double>(b.taken_monotonic_ns - a.taken_monotonic_ns) / 1e9;
  r.pid = cat.pid;
  r.start_time_unix_s = static_cast<double>(cat.start_time_unix_ns) / 1e9;
  r.uptime_s = std::max(0.0, static_cast<double>(std::time(nullptr)) - r.start_time_unix_s);
  r.interval_s = dt;
  r.version = std::string(cat.info_value("version"));
  r.segment_path = settings.segment_path;
  r.ports = port_statuses(settings, a, b, dt);
  r.cores = core_statuses(a, b, dt);
  r.services = service_statuses(settings, a, b, dt);
  r.sas = sa_statuses(a, b, dt);
  for (const auto& state : label_values(b, kTcpConns, "state")) {
    r.tcp_connections.emplace_back(state,
                                   static_cast<int64_t>(b.sum(kTcpConns, {{"state", state}})));
  }
  r.tcp_retransmitted_segments = b.sum(kRetrans);

  for (const auto& reason : label_values(b, kDrops, "reason")) {
    ws::stats::Labels sel = {{"reason", reason}};
    DropStatus d{reason, b.sum(kDrops, sel), rate(a.sum(kDrops, sel), b.sum(kDrops, sel), dt)};
    r.drops_total += d.total;
    if (d.total > 0) r.drops.push_back(d);
  }
  std::stable_sort(r.drops.begin(), r.drops.end(),
                   [](const DropStatus& x, const DropStatus& y) { return x.total > y.total; });
  r.top_drops.assign(r.drops.begin(), r.drops.begin() + std::min<size_t>(r.drops.size(), 10));
  return r;
}

}  // namespace ws::cli
