#include "control/metrics/families.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "control/stats/histogram.hpp"
#include "ws_version.h"

namespace ws::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using ws::stats::MetricInfo;
using ws::stats::Scope;
using ws::stats::Snapshot;

MetricType prom_type(ws::stats::MetricType t) {
  switch (t) {
    case ws::stats::MetricType::kCounter:
      return MetricType::Counter;
    case ws::stats::MetricType::kGauge:
      return MetricType::Gauge;
    case ws::stats::MetricType::kHistogram:
      return MetricType::Histogram;
  }
  return MetricType::Untyped;
}

// Fill one series from word values supplied by `word(i)` (a core's copy or the sum).
template <typename WordFn>
void fill(ClientMetric& cm, const MetricInfo& m, WordFn word) {
  switch (m.type) {
    case ws::stats::MetricType::kCounter:
      cm.counter.value = static_cast<double>(word(0)) * m.scale;
      break;
    case ws::stats::MetricType::kGauge:
      // Gauges are stored as two's-complement int64 (Gauge::sub may go below zero).
      cm.gauge.value = static_cast<double>(static_cast<int64_t>(word(0))) * m.scale;
      break;
    case ws::stats::MetricType::kHistogram: {
      uint64_t cumulative = 0;
      for (uint32_t b = 0; b < m.hist_first; ++b) cumulative += word(b);
      for (uint32_t b = m.hist_first; b <= m.hist_last; ++b) {
        cumulative += word(b);
        cm.histogram.bucket.push_back(
            {cumulative, static_cast<double>(ws::stats::histogram_upper_bound(b)) * m.scale});
      }
      uint64_t count = word(ws::stats::kHistogramCountWord);
      cm.histogram.bucket.push_back({count, std::numeric_limits<double>::infinity()});
      cm.histogram.sample_count = count;
      cm.histogram.sample_sum = static_cast<double>(word(ws::stats::kHistogramSumWord)) * m.scale;
      break;
    }
  }
}

std::vector<ClientMetric::Label> labels_of(const MetricInfo& m) {
  std::vector<ClientMetric::Label> labels;
  for (const auto& [k, v] : m.labels) labels.push_back({k, v});
  return labels;
}

}  // namespace

std::vector<MetricFamily> families_from_snapshot(const Snapshot& snap) {
  std::vector<MetricFamily> out;
  std::map<std::string, size_t, std::less<>> index;  // name -> position in `out`
  const auto& cat = *snap.catalog;
  for (const MetricInfo& m : cat.metrics) {
    auto [it, inserted] = index.try_emplace(m.name, out.size());
    if (inserted) out.push_back(MetricFamily{m.name, m.help, prom_type(m.type), {}});
    MetricFamily& fam = out[it->second];
    if (m.scope == Scope::kPerCoreLabeled) {
      for (uint32_t c = 0; c < snap.cores.size(); ++c) {
        ClientMetric cm;
        cm.label = labels_of(m);
        cm.label.push_back({"core", std::to_string(cat.lcore_ids[c])});
        fill(cm, m, [&](uint32_t w) { return snap.core_value(m, c, w); });
        fam.metric.push_back(std::move(cm));
      }
    } else {
      ClientMetric cm;
      cm.label = labels_of(m);
      fill(cm, m, [&](uint32_t w) { return snap.value(m, w); });
      fam.metric.push_back(std::move(cm));
    }
  }
  return out;
}

MetricFamily up_family(bool up) {
  MetricFamily fam{"wirespeed_up",
                   "1 when a live data plane's statistics are being served.",
                   MetricType::Gauge,
                   {}};
  ClientMetric cm;
  cm.gauge.value = up ? 1 : 0;
  fam.metric.push_back(cm);
  return fam;
}

MetricFamily build_info_family() {
  MetricFamily fam{"wirespeed_build_info",
                   "Version of wirespeed and of the DPDK it was built with.",
                   MetricType::Gauge,
                   {}};
  ClientMetric cm;
  cm.label = {{"version", WS_VERSION}, {"dpdk_version", WS_DPDK_VERSION}};
  cm.gauge.value = 1;
  fam.metric.push_back(cm);
  return fam;
}

MetricFamily start_time_family(const ws::stats::Catalog& catalog) {
  MetricFamily fam{"wirespeed_dataplane_start_time_seconds",
                   "Unix time at which the running data plane started.",
                   MetricType::Gauge,
                   {}};
  ClientMetric cm;
  cm.gauge.value = static_cast<double>(catalog.start_time_unix_ns) / 1e9;
  fam.metric.push_back(cm);
  return fam;
}

}  // namespace ws::metrics
