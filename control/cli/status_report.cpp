// Building the status report from two snapshots: which metric names mean what.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "control/cli/status.hpp"
#include "stack/core/addr.hpp"

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
constexpr const char* kTcpConnsFamily = "wirespeed_tcp_connections_by_family";
constexpr const char* kTcpInFamily = "wirespeed_tcp_received_segments_by_family_total";
constexpr const char* kTcpOutFamily = "wirespeed_tcp_sent_segments_by_family_total";
constexpr const char* kDrops = "wirespeed_drops_total";
constexpr const char* kL4Errors = "wirespeed_port_l4_checksum_errors_total";
constexpr const char* kL4Hint = "wirespeed_port_l4_checksum_hint";
constexpr const char* kSaPackets = "wirespeed_ipsec_packets_total";
constexpr const char* kSaBytes = "wirespeed_ipsec_bytes_total";
constexpr const char* kSaErrors = "wirespeed_ipsec_errors_total";
constexpr const char* kV6StateMask = "wirespeed_ipv6_address_state_mask";
constexpr const char* kV6RouterIid = "wirespeed_ipv6_learned_router_iid";
constexpr const char* kNdpNeighbors = "wirespeed_ndp_neighbors";

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

// The two snapshots and the seconds between them: totals come from `b`, rates from both.
struct Window {
  const Snapshot& a;
  const Snapshot& b;
  double dt;

  double per_s(std::string_view name, const ws::stats::Labels& sel = {}) const {
    return rate(a.sum(name, sel), b.sum(name, sel), dt);
  }
  double core_per_s(const MetricInfo* m, uint32_t core, double seconds) const {
    return m == nullptr ? 0.0 : rate(a.core_value(*m, core), b.core_value(*m, core), seconds);
  }
};

// The port's IPv6 addresses (the link-local one, then the configured ones, from the info
// entries) with their state from the masks, and the default router: gateway6, else the one
// learned from advertisements.
void add_ipv6(const Snapshot& s, const std::string& port, PortStatus& p) {
  const auto& cat = *s.catalog;
  const std::string key = "port." + port + ".";
  std::vector<std::string> addrs;
  if (auto ll = cat.info_value(key + "ipv6_link_local"); !ll.empty()) addrs.emplace_back(ll);
  std::string_view list = cat.info_value(key + "ipv6_addresses");
  while (!list.empty()) {
    const size_t sp = std::min(list.find(' '), list.size());
    if (sp > 0) addrs.emplace_back(list.substr(0, sp));
    list.remove_prefix(std::min(sp + 1, list.size()));
  }
  const char* states[] = {"tentative", "preferred", "duplicate"};
  for (size_t i = 0; i < addrs.size(); ++i) {
    std::string state = "-";
    for (const char* st : states) {
      const uint64_t mask = s.sum(kV6StateMask, {{"port", port}, {"state", st}});
      if (i < 64 && (mask >> i & 1) != 0) state = st;
    }
    p.ipv6_addresses.emplace_back(addrs[i], state);
  }
  p.ipv6_router = std::string(cat.info_value(key + "gateway6"));
  const uint64_t iid = s.sum(kV6RouterIid, {{"port", port}});
  if (p.ipv6_router.empty() && iid != 0) {
    uint8_t b[16] = {0xfe, 0x80};
    for (int i = 0; i < 8; ++i) b[15 - i] = static_cast<uint8_t>(iid >> (8 * i));
    p.ipv6_router = ws::Ipv6Addr::from_bytes(b).to_string();
  }
}

FamilyStatus family_status(const Window& w, const std::string& family) {
  const ws::stats::Labels f = {{"family", family}};
  FamilyStatus s;
  s.family = family;
  s.tcp_connections = static_cast<int64_t>(w.b.sum(kTcpConnsFamily, f));
  s.tcp_established = static_cast<int64_t>(
      w.b.sum(kTcpConnsFamily, {{"family", family}, {"state", "established"}}));
  s.tcp_segments_in = w.b.sum(kTcpInFamily, f);
  s.tcp_segments_out = w.b.sum(kTcpOutFamily, f);
  s.tcp_active_opens = w.b.sum("wirespeed_tcp_active_opens_by_family_total", f);
  s.tcp_passive_opens = w.b.sum("wirespeed_tcp_passive_opens_by_family_total", f);
  s.tcp_resets_sent = w.b.sum("wirespeed_tcp_resets_sent_by_family_total", f);
  s.tcp_resets_received = w.b.sum("wirespeed_tcp_resets_received_by_family_total", f);
  constexpr const char* kUdpIn = "wirespeed_udp_received_datagrams_by_family_total";
  constexpr const char* kUdpOut = "wirespeed_udp_sent_datagrams_by_family_total";
  s.udp_in = w.b.sum(kUdpIn, f);
  s.udp_out = w.b.sum(kUdpOut, f);
  s.tcp_segments_in_per_s = w.per_s(kTcpInFamily, f);
  s.tcp_segments_out_per_s = w.per_s(kTcpOutFamily, f);
  s.udp_in_per_s = w.per_s(kUdpIn, f);
  s.udp_out_per_s = w.per_s(kUdpOut, f);
  return s;
}

PortStatus port_status(const Settings& settings, const Window& w, const std::string& name) {
  const auto& cat = *w.b.catalog;
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
  const ws::stats::Labels sel = {{"port", name}};
  if (auto up = gauge(w.b, kLinkUp, sel)) p.link_up = *up != 0;
  p.mtu = gauge(w.b, kMtu, sel);
  if (!p.mtu && cfg) p.mtu = cfg->mtu;
  p.rx_packets = w.b.sum(kRxPackets, sel);
  p.tx_packets = w.b.sum(kTxPackets, sel);
  p.rx_bytes = w.b.sum(kRxBytes, sel);
  p.tx_bytes = w.b.sum(kTxBytes, sel);
  p.rx_missed = w.b.sum(kRxMissed, sel);
  p.l4_checksum_errors = w.b.sum(kL4Errors, sel);
  if (gauge(w.b, kL4Hint, sel).value_or(0) != 0) p.checksum_hint = info("l4_checksum_hint", "");
  p.rx_packets_per_s = w.per_s(kRxPackets, sel);
  p.tx_packets_per_s = w.per_s(kTxPackets, sel);
  p.rx_bits_per_s = 8 * w.per_s(kRxBytes, sel);
  p.tx_bits_per_s = 8 * w.per_s(kTxBytes, sel);
  p.mempool_in_use = gauge(w.b, kMempoolInUse, sel);
  p.mempool_size = gauge(w.b, kMempoolSize, sel);
  add_ipv6(w.b, name, p);
  return p;
}

// Busy share of the cycles spent since the first snapshot, frames, connections and
// hand-overs, per core.
std::vector<CoreStatus> core_statuses(const Window& w) {
  const auto& cat = *w.b.catalog;
  auto per_core = [&cat](const char* name) -> const MetricInfo* {
    for (const MetricInfo& m : cat.metrics) {
      if (m.name == name && m.scope != ws::stats::Scope::kGlobal) return &m;
    }
    return nullptr;
  };
  const MetricInfo* busy = per_core(kBusy);
  const MetricInfo* idle = per_core(kIdle);
  const MetricInfo* conns = per_core(kCoreConns);
  std::vector<CoreStatus> out;
  for (uint32_t c = 0; c < cat.lcore_ids.size(); ++c) {
    CoreStatus cs;
    cs.lcore = cat.lcore_ids[c];
    if (busy != nullptr && idle != nullptr) {
      const double db = w.core_per_s(busy, c, 1.0);
      const double di = w.core_per_s(idle, c, 1.0);
      if (db + di > 0) cs.busy_ratio = db / (db + di);
    }
    cs.frames_per_s = w.core_per_s(per_core(kCoreFrames), c, w.dt);
    if (conns != nullptr) cs.connections = w.b.core_value(*conns, c);
    cs.redirected_per_s = w.core_per_s(per_core(kCoreRedirected), c, w.dt);
    out.push_back(cs);
  }
  return out;
}

ServiceStatus service_status(const Settings& settings, const Window& w, const std::string& name) {
  ServiceStatus s;
  s.name = name;
  s.kind = std::string(w.b.catalog->info_value("service." + name + ".kind"));
  for (const auto& cfg : settings.services) {
    if (cfg.name == name && s.kind.empty()) s.kind = cfg.kind;
  }
  const ws::stats::Labels sel = {{"service", name}};
  s.rx_bytes = w.b.sum(kSvcRx, sel);
  s.tx_bytes = w.b.sum(kSvcTx, sel);
  s.rx_bytes_per_s = w.per_s(kSvcRx, sel);
  s.tx_bytes_per_s = w.per_s(kSvcTx, sel);
  for (const auto& dir : label_values(w.b, kSvcMsgs, "direction")) {
    const ws::stats::Labels both = {{"service", name}, {"direction", dir}};
    if (has(w.b, kSvcMsgs, both)) {
      s.messages.push_back({dir, w.b.sum(kSvcMsgs, both), w.per_s(kSvcMsgs, both)});
    }
  }
  return s;
}

SaStatus sa_status(const Window& w, const std::string& name) {
  const auto& cat = *w.b.catalog;
  SaStatus sa;
  sa.name = name;
  const std::string info = "ipsec.sa." + name + ".";
  sa.direction = std::string(cat.info_value(info + "direction"));
  sa.spi = std::string(cat.info_value(info + "spi"));
  sa.mode = std::string(cat.info_value(info + "mode"));
  sa.cipher = std::string(cat.info_value(info + "cipher"));
  sa.peer = std::string(cat.info_value(info + "peer"));
  const ws::stats::Labels sel = {{"sa", name}};
  sa.packets = w.b.sum(kSaPackets, sel);
  sa.packets_per_s = w.per_s(kSaPackets, sel);
  sa.bytes_per_s = w.per_s(kSaBytes, sel);
  for (const auto& reason : label_values(w.b, kSaErrors, "reason")) {
    const uint64_t n = w.b.sum(kSaErrors, {{"sa", name}, {"reason", reason}});
    if (n > 0) sa.errors.emplace_back(reason, n);
  }
  return sa;
}

// Every non-zero drop reason, highest totals first, and the first ten of them.
void add_drops(const Window& w, StatusReport& r) {
  for (const auto& reason : label_values(w.b, kDrops, "reason")) {
    const ws::stats::Labels sel = {{"reason", reason}};
    const DropStatus d{reason, w.b.sum(kDrops, sel), w.per_s(kDrops, sel)};
    r.drops_total += d.total;
    if (d.total > 0) r.drops.push_back(d);
  }
  std::stable_sort(r.drops.begin(), r.drops.end(),
                   [](const DropStatus& x, const DropStatus& y) { return x.total > y.total; });
  r.top_drops.assign(r.drops.begin(), r.drops.begin() + std::min<size_t>(r.drops.size(), 10));
}

}  // namespace

StatusReport build_status_report(const Settings& settings, const Snapshot& a, const Snapshot& b) {
  StatusReport r;
  const auto& cat = *b.catalog;
  const Window w{a, b, static_cast<double>(b.taken_monotonic_ns - a.taken_monotonic_ns) / 1e9};
  r.pid = cat.pid;
  r.start_time_unix_s = static_cast<double>(cat.start_time_unix_ns) / 1e9;
  r.uptime_s = std::max(0.0, static_cast<double>(std::time(nullptr)) - r.start_time_unix_s);
  r.interval_s = w.dt;
  r.version = std::string(cat.info_value("version"));
  r.segment_path = settings.segment_path;

  // Ports and services: the config's, then any others the data plane reports.
  std::vector<std::string> ports;
  for (const auto& p : settings.ports) ports.push_back(p.name);
  for (const auto& p : label_values(b, kRxPackets, "port")) add_unique(ports, p);
  for (const auto& name : ports) r.ports.push_back(port_status(settings, w, name));
  r.cores = core_statuses(w);
  std::vector<std::string> services;
  for (const auto& s : settings.services) services.push_back(s.name);
  for (const auto& s : label_values(b, kSvcRx, "service")) add_unique(services, s);
  for (const auto& s : label_values(b, kSvcMsgs, "service")) add_unique(services, s);
  for (const auto& name : services) r.services.push_back(service_status(settings, w, name));
  for (const auto& name : label_values(b, kSaPackets, "sa")) r.sas.push_back(sa_status(w, name));
  for (const auto& state : label_values(b, kTcpConns, "state")) {
    r.tcp_connections.emplace_back(state,
                                   static_cast<int64_t>(b.sum(kTcpConns, {{"state", state}})));
  }
  r.tcp_retransmitted_segments = b.sum(kRetrans);
  for (const auto& f : label_values(b, kTcpInFamily, "family")) {
    r.families.push_back(family_status(w, f));
  }
  r.ndp_neighbors = gauge(b, kNdpNeighbors, {});
  add_drops(w, r);
  return r;
}

}  // namespace ws::cli
