// Rendering the status report: a fixed-width screen for people, JSON for scripts.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "control/cli/status.hpp"
#include "stack/core/json.hpp"

namespace ws::cli {
namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// 1234567 -> "1.23M": rates span nine orders of magnitude, columns must stay narrow.
std::string si(double v) {
  const char* units[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt("%.0f", v) : fmt("%.2f%s", v, units[u]);
}

std::string duration(double s) {
  auto t = static_cast<uint64_t>(s);
  if (t >= 86400) return fmt("%" PRIu64 "d%02" PRIu64 "h", t / 86400, t % 86400 / 3600);
  if (t >= 3600) return fmt("%" PRIu64 "h%02" PRIu64 "m", t / 3600, t % 3600 / 60);
  return fmt("%" PRIu64 "m%02" PRIu64 "s", t / 60, t % 60);
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

// Each port's link and errors, its checksum hint, then its traffic.
std::string ports_text(const StatusReport& r) {
  std::string out;
  out += fmt("\n%-10s %-5s %-5s %-17s %-18s %10s %12s\n", "PORT", "LINK", "MTU", "MAC", "ADDRESS",
             "RX missed", "L4 csum err");
  for (const auto& p : r.ports) {
    std::string link = p.link_up ? (*p.link_up ? "up" : "down") : "-";
    std::string mtu = p.mtu ? std::to_string(*p.mtu) : "-";
    out += fmt("%-10s %-5s %-5s %-17s %-18s %10" PRIu64 " %12" PRIu64 "\n", p.name.c_str(),
               link.c_str(), mtu.c_str(), or_dash(p.mac).c_str(), or_dash(p.address).c_str(),
               p.rx_missed, p.l4_checksum_errors);
    if (p.mempool_in_use && p.mempool_size) {
      out += fmt("%-10s mempool %" PRId64 "/%" PRId64 " mbufs in use\n", "", *p.mempool_in_use,
                 *p.mempool_size);
    }
    for (const auto& [addr, state] : p.ipv6_addresses) {
      out += fmt("%-10s ipv6 %s %s\n", "", addr.c_str(), state.c_str());
    }
    if (!p.ipv6_addresses.empty()) {
      out += fmt("%-10s ipv6 default router %s\n", "", or_dash(p.ipv6_router).c_str());
    }
  }
  if (r.ndp_neighbors) out += fmt("IPv6 neighbour cache entries: %" PRId64 "\n", *r.ndp_neighbors);
  for (const auto& p : r.ports) {
    if (!p.checksum_hint.empty()) {
      out += fmt("HINT port %s: TCP/UDP checksum failures; %s\n", p.name.c_str(),
                 p.checksum_hint.c_str());
    }
  }

  out += fmt("\n%-10s %12s %14s %12s %14s %9s %9s %9s %9s\n", "PORT", "RX packets", "RX bytes",
             "TX packets", "TX bytes", "RX pps", "RX bit/s", "TX pps", "TX bit/s");
  for (const auto& p : r.ports) {
    out += fmt("%-10s %12" PRIu64 " %14" PRIu64 " %12" PRIu64 " %14" PRIu64 " %9s %9s %9s %9s\n",
               p.name.c_str(), p.rx_packets, p.rx_bytes, p.tx_packets, p.tx_bytes,
               si(p.rx_packets_per_s).c_str(), si(p.rx_bits_per_s).c_str(),
               si(p.tx_packets_per_s).c_str(), si(p.tx_bits_per_s).c_str());
  }

  return out;
}

std::string cores_text(const StatusReport& r) {
  std::string out;
  out += fmt("\n%-6s %6s %10s %10s %10s\n", "CORE", "BUSY", "FRAMES/s", "CONNS", "REDIR/s");
  for (const auto& c : r.cores) {
    std::string busy = c.busy_ratio ? fmt("%5.1f%%", 100 * *c.busy_ratio) : "-";
    out += fmt("%-6u %6s %10s %10s %10s\n", c.lcore, busy.c_str(), si(c.frames_per_s).c_str(),
               si(static_cast<double>(c.connections)).c_str(), si(c.redirected_per_s).c_str());
  }

  return out;
}

std::string services_text(const StatusReport& r) {
  std::string out;
  if (!r.services.empty()) {
    // Messages by direction: "received" and "sent" are the only ones the data plane
    // registers; a service without one shows "-".
    auto msgs = [](const ServiceStatus& s, std::string_view dir) -> const MessageCount* {
      for (const auto& m : s.messages) {
        if (m.direction == dir) return &m;
      }
      return nullptr;
    };
    out += fmt("\n%-12s %-7s %10s %14s %10s %14s %9s %9s %9s %9s\n", "SERVICE", "KIND", "RX msgs",
               "RX bytes", "TX msgs", "TX bytes", "RX msg/s", "RX B/s", "TX msg/s", "TX B/s");
    for (const auto& s : r.services) {
      const MessageCount* rx = msgs(s, "received");
      const MessageCount* tx = msgs(s, "sent");
      auto total = [](const MessageCount* m) { return m ? std::to_string(m->total) : "-"; };
      auto per_s = [](const MessageCount* m) { return m ? si(m->per_s) : "-"; };
      out += fmt("%-12s %-7s %10s %14" PRIu64 " %10s %14" PRIu64 " %9s %9s %9s %9s\n",
                 s.name.c_str(), or_dash(s.kind).c_str(), total(rx).c_str(), s.rx_bytes,
                 total(tx).c_str(), s.tx_bytes, per_s(rx).c_str(), si(s.rx_bytes_per_s).c_str(),
                 per_s(tx).c_str(), si(s.tx_bytes_per_s).c_str());
    }
  }

  return out;
}

std::string sas_text(const StatusReport& r) {
  std::string out;
  if (!r.sas.empty()) {
    out += fmt("\n%-12s %-8s %-10s %-9s %-23s %-15s %12s %9s %9s  %s\n", "IPSEC SA", "DIR", "SPI",
               "MODE", "CIPHER", "PEER", "PACKETS", "pps", "B/s", "ERRORS");
    for (const auto& sa : r.sas) {
      std::string errors;
      for (const auto& [reason, n] : sa.errors)
        errors += fmt("%s %" PRIu64 "  ", reason.c_str(), n);
      out += fmt("%-12s %-8s %-10s %-9s %-23s %-15s %12" PRIu64 " %9s %9s  %s\n", sa.name.c_str(),
                 or_dash(sa.direction).c_str(), or_dash(sa.spi).c_str(), or_dash(sa.mode).c_str(),
                 or_dash(sa.cipher).c_str(), or_dash(sa.peer).c_str(), sa.packets,
                 si(sa.packets_per_s).c_str(), si(sa.bytes_per_s).c_str(),
                 errors.empty() ? "-" : errors.c_str());
    }
  }

  return out;
}

std::string tcp_and_drops_text(const StatusReport& r) {
  std::string out;
  out += "\nTCP connections:";
  if (r.tcp_connections.empty()) out += " -";
  for (const auto& [state, n] : r.tcp_connections) out += fmt(" %s %" PRId64, state.c_str(), n);
  out += fmt("\nTCP retransmitted segments: %" PRIu64 "\n", r.tcp_retransmitted_segments);
  if (!r.families.empty()) {
    out += fmt("\n%-7s %9s %7s %7s %8s %7s %7s %12s %12s %13s %13s\n", "FAMILY", "TCP conns",
               "estab", "opened", "accepted", "RST out", "RST in", "TCP RX segs", "TCP TX segs",
               "UDP RX dgrams", "UDP TX dgrams");
    for (const FamilyStatus& f : r.families) {
      out += fmt("%-7s %9" PRId64 " %7" PRId64 " %7" PRIu64 " %8" PRIu64 " %7" PRIu64 " %7" PRIu64
                 " %12" PRIu64 " %12" PRIu64 " %13" PRIu64 " %13" PRIu64 "\n",
                 f.family.c_str(), f.tcp_connections, f.tcp_established, f.tcp_active_opens,
                 f.tcp_passive_opens, f.tcp_resets_sent, f.tcp_resets_received, f.tcp_segments_in,
                 f.tcp_segments_out, f.udp_in, f.udp_out);
    }
    out += fmt("%-7s %12s %12s %12s %12s\n", "FAMILY", "TCP RX seg/s", "TCP TX seg/s",
               "UDP RX dg/s", "UDP TX dg/s");
    for (const FamilyStatus& f : r.families) {
      out += fmt("%-7s %12s %12s %12s %12s\n", f.family.c_str(),
                 si(f.tcp_segments_in_per_s).c_str(), si(f.tcp_segments_out_per_s).c_str(),
                 si(f.udp_in_per_s).c_str(), si(f.udp_out_per_s).c_str());
    }
  }

  out += fmt("\nDrops: %" PRIu64 " total", r.drops_total);
  if (r.top_drops.empty())
    out += "\n";
  else
    out += fmt("; top reasons:\n  %-28s %12s %10s\n", "REASON", "TOTAL", "PER s");
  for (const auto& d : r.top_drops) {
    out += fmt("  %-28s %12" PRIu64 " %10s\n", d.reason.c_str(), d.total, si(d.per_s).c_str());
  }
  return out;
}

}  // namespace

std::string render_text(const StatusReport& r) {
  std::string out;
  out += fmt("wirespeed data plane: pid %" PRId64
             ", up %s, version %s (totals since start, "
             "rates over %.1f s)\n",
             r.pid, duration(r.uptime_s).c_str(), or_dash(r.version).c_str(), r.interval_s);
  return out + ports_text(r) + cores_text(r) + services_text(r) + sas_text(r) +
         tcp_and_drops_text(r);
}

namespace {

using json::Json;

// A value the data plane may not have registered: null when absent.
template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// An object of name -> number, in the given order.
template <typename Pairs, typename Key, typename Value>
Json object_of(const Pairs& pairs, Key key, Value value) {
  Json o = Json::object();
  for (const auto& p : pairs) o[key(p)] = value(p);
  return o;
}

Json port_json(const PortStatus& p) {
  Json j = {{"name", p.name},
            {"device", p.device},
            {"mac", p.mac},
            {"address", p.address},
            {"link_up", or_null(p.link_up)},
            {"mtu", or_null(p.mtu)},
            {"rx_packets", p.rx_packets},
            {"tx_packets", p.tx_packets},
            {"rx_bytes", p.rx_bytes},
            {"tx_bytes", p.tx_bytes},
            {"rx_missed_packets", p.rx_missed},
            {"l4_checksum_errors", p.l4_checksum_errors},
            {"checksum_hint", p.checksum_hint},
            {"rx_packets_per_second", p.rx_packets_per_s},
            {"rx_bits_per_second", p.rx_bits_per_s},
            {"tx_packets_per_second", p.tx_packets_per_s},
            {"tx_bits_per_second", p.tx_bits_per_s}};
  Json v6 = Json::array();
  for (const auto& [addr, state] : p.ipv6_addresses)
    v6.push_back(Json{{"address", addr}, {"state", state}});
  j["ipv6_addresses"] = std::move(v6);
  j["ipv6_default_router"] = p.ipv6_router.empty() ? Json(nullptr) : Json(p.ipv6_router);
  if (p.mempool_in_use) j["mempool_in_use"] = *p.mempool_in_use;
  if (p.mempool_size) j["mempool_size"] = *p.mempool_size;
  return j;
}

Json core_json(const CoreStatus& c) {
  return {{"lcore", c.lcore},
          {"busy_ratio", or_null(c.busy_ratio)},
          {"received_frames_per_second", c.frames_per_s},
          {"connections", c.connections},
          {"redirected_frames_per_second", c.redirected_per_s}};
}

Json service_json(const ServiceStatus& s) {
  auto direction = [](const MessageCount& m) { return m.direction; };
  return {{"name", s.name},
          {"kind", s.kind},
          {"received_bytes", s.rx_bytes},
          {"sent_bytes", s.tx_bytes},
          {"received_bytes_per_second", s.rx_bytes_per_s},
          {"sent_bytes_per_second", s.tx_bytes_per_s},
          {"messages", object_of(s.messages, direction, [](const auto& m) { return m.total; })},
          {"messages_per_second",
           object_of(s.messages, direction, [](const auto& m) { return m.per_s; })}};
}

Json sa_json(const SaStatus& sa) {
  return {{"name", sa.name},
          {"direction", sa.direction},
          {"spi", sa.spi},
          {"mode", sa.mode},
          {"cipher", sa.cipher},
          {"peer", sa.peer},
          {"packets", sa.packets},
          {"packets_per_second", sa.packets_per_s},
          {"bytes_per_second", sa.bytes_per_s},
          {"errors", object_of(
                         sa.errors, [](const auto& e) { return e.first; },
                         [](const auto& e) { return e.second; })}};
}

template <typename T, typename F>
Json array_of(const std::vector<T>& items, F item) {
  Json a = Json::array();
  for (const T& i : items) a.push_back(item(i));
  return a;
}

Json family_json(const FamilyStatus& f) {
  return {{"family", f.family},
          {"tcp_connections", f.tcp_connections},
          {"tcp_established", f.tcp_established},
          {"tcp_active_opens", f.tcp_active_opens},
          {"tcp_passive_opens", f.tcp_passive_opens},
          {"tcp_resets_sent", f.tcp_resets_sent},
          {"tcp_resets_received", f.tcp_resets_received},
          {"tcp_received_segments", f.tcp_segments_in},
          {"tcp_sent_segments", f.tcp_segments_out},
          {"udp_received_datagrams", f.udp_in},
          {"udp_sent_datagrams", f.udp_out},
          {"tcp_received_segments_per_second", f.tcp_segments_in_per_s},
          {"tcp_sent_segments_per_second", f.tcp_segments_out_per_s},
          {"udp_received_datagrams_per_second", f.udp_in_per_s},
          {"udp_sent_datagrams_per_second", f.udp_out_per_s}};
}

Json drops_json(const StatusReport& r) {
  auto reason = [](const DropStatus& d) { return d.reason; };
  auto total = [](const DropStatus& d) { return d.total; };
  return {{"total", r.drops_total},
          {"by_reason", object_of(r.drops, reason, total)},
          {"top", array_of(r.top_drops, [](const DropStatus& d) {
             return Json{{"reason", d.reason}, {"total", d.total}, {"per_second", d.per_s}};
           })}};
}

}  // namespace

std::string render_json(const StatusReport& r) {
  const Json tcp_connections = object_of(
      r.tcp_connections, [](const auto& c) { return c.first; },
      [](const auto& c) { return c.second; });
  const Json doc = {{"dataplane",
                     {{"pid", r.pid},
                      {"start_time", r.start_time_unix_s},
                      {"uptime_seconds", r.uptime_s},
                      {"version", r.version},
                      {"stats_path", r.segment_path}}},
                    {"interval_seconds", r.interval_s},
                    {"ports", array_of(r.ports, port_json)},
                    {"cores", array_of(r.cores, core_json)},
                    {"services", array_of(r.services, service_json)},
                    {"ipsec_sas", array_of(r.sas, sa_json)},
                    {"tcp",
                     {{"connections", tcp_connections},
                      {"retransmitted_segments", r.tcp_retransmitted_segments}}},
                    {"families", array_of(r.families, family_json)},
                    {"ipv6", {{"neighbor_cache_entries", or_null(r.ndp_neighbors)}}},
                    {"drops", drops_json(r)}};
  return json::dump(doc) + "\n";
}

}  // namespace ws::cli
