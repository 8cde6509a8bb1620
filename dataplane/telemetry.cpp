#include "dataplane/telemetry.hpp"

#include <rte_telemetry.h>
#include <unistd.h>

#include <cctype>
#include <memory>
#include <mutex>
#include <string>

#include "control/stats/reader.hpp"
#include "ws_version.h"

namespace ws::dp {

namespace {

// Telemetry callbacks run on DPDK's telemetry thread, one request at a time per
// socket but possibly from several clients: the reader is guarded.
std::mutex g_mu;
std::unique_ptr<stats::Reader> g_reader;

bool snapshot(stats::Snapshot& s) {
  if (!g_reader) return false;
  g_reader->refresh();
  return g_reader->read(&s);
}

// Telemetry dictionary keys allow only [A-Za-z0-9_/]: series become
// "name/label/value/..." with other characters mapped to '_'.
std::string series_key(const stats::MetricInfo& m, bool with_name) {
  std::string k = with_name ? m.name : std::string();
  for (const auto& [lk, lv] : m.labels) {
    if (!k.empty()) k += '/';
    if (with_name) {
      k += lk;
      k += '/';
    }
    k += lv;
  }
  for (char& c : k) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '/') c = '_';
  }
  return k;
}

int cmd_info(const char*, const char*, rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "version", WS_VERSION);
  rte_tel_data_add_dict_string(d, "dpdk_version", WS_DPDK_VERSION);
  rte_tel_data_add_dict_int(d, "pid", static_cast<int>(getpid()));
  return 0;
}

// Every series whose name starts with `prefix`, keyed by its labels (or name and
// labels when `with_name`). Histograms report their count.
int fill(rte_tel_data* d, const std::string& prefix, bool with_name) {
  std::lock_guard<std::mutex> lock(g_mu);
  stats::Snapshot s;
  rte_tel_data_start_dict(d);
  if (!snapshot(s)) return 0;
  int n = 0;
  for (const auto& m : s.catalog->metrics) {
    if (m.name.rfind(prefix, 0) != 0) continue;
    if (n++ >= RTE_TEL_MAX_DICT_ENTRIES) break;
    uint32_t word = m.type == stats::MetricType::kHistogram ? stats::kHistogramCountWord : 0;
    std::string key = series_key(m, with_name);
    if (key.empty()) key = m.name;
    if (key.size() >= RTE_TEL_MAX_STRING_LEN) key.resize(RTE_TEL_MAX_STRING_LEN - 1);
    rte_tel_data_add_dict_u64(d, key.c_str(), s.value(m, word));
  }
  return 0;
}

int cmd_drops(const char*, const char*, rte_tel_data* d) {
  return fill(d, "wirespeed_drops_total", false);
}
int cmd_ports(const char*, const char*, rte_tel_data* d) {
  return fill(d, "wirespeed_port_", true);
}
int cmd_tcp(const char*, const char*, rte_tel_data* d) { return fill(d, "wirespeed_tcp_", true); }
int cmd_udp(const char*, const char*, rte_tel_data* d) { return fill(d, "wirespeed_udp_", true); }
int cmd_services(const char*, const char*, rte_tel_data* d) {
  return fill(d, "wirespeed_service_", true);
}
int cmd_pipeline(const char*, const char*, rte_tel_data* d) {
  return fill(d, "wirespeed_pipeline_", true);
}
int cmd_cores(const char*, const char*, rte_tel_data* d) {
  return fill(d, "wirespeed_core_", true);
}

}  // namespace

void register_telemetry(const std::string& segment_path) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_reader = std::make_unique<stats::Reader>(segment_path);
  }
  rte_telemetry_register_cmd("/wirespeed/info", cmd_info, "Version of the wirespeed data plane.");
  rte_telemetry_register_cmd("/wirespeed/drops", cmd_drops, "Packets dropped, by reason.");
  rte_telemetry_register_cmd("/wirespeed/ports", cmd_ports, "Port counters.");
  rte_telemetry_register_cmd("/wirespeed/tcp", cmd_tcp,
                             "TCP counters and connections by state, in all and by family.");
  rte_telemetry_register_cmd("/wirespeed/udp", cmd_udp, "UDP datagrams, in all and by family.");
  rte_telemetry_register_cmd("/wirespeed/services", cmd_services, "Service counters.");
  rte_telemetry_register_cmd("/wirespeed/pipeline", cmd_pipeline,
                             "TX batch pipeline counters (all connections of all cores).");
  rte_telemetry_register_cmd("/wirespeed/cores", cmd_cores, "Per-core busy/idle time and loops.");
}

}  // namespace ws::dp
