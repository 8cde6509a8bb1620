#include "control/metrics/collector.hpp"

#include <prometheus/metric_family.h>

#include <algorithm>

#include "control/metrics/families.hpp"

namespace ws::metrics {

SegmentCollector::SegmentCollector(std::string segment_path, ws::stats::ReaderOptions options)
    : reader_(std::move(segment_path), options) {}

std::vector<prometheus::MetricFamily> SegmentCollector::Collect() const {
  std::lock_guard lock(mu_);
  std::vector<prometheus::MetricFamily> out;
  ws::stats::Snapshot snap;
  bool up = reader_.refresh() == ws::stats::Liveness::kLive && reader_.read(&snap);
  out.push_back(up_family(up));
  out.push_back(build_info_family());
  if (!up) return out;  // nothing else is meaningful without a live data plane

  if (snap.catalog->instance_id != instance_id_) {
    instance_id_ = snap.catalog->instance_id;  // a new lifetime: counters start over
    counter_floor_.clear();
  }
  out.push_back(start_time_family(*snap.catalog));
  for (auto& fam : families_from_snapshot(snap)) {
    if (fam.type == prometheus::MetricType::Counter) {
      for (auto& cm : fam.metric) {
        std::string key = fam.name;
        for (const auto& l : cm.label) key += "\x1f" + l.name + "=" + l.value;
        double& floor = counter_floor_[key];
        floor = std::max(floor, cm.counter.value);
        cm.counter.value = floor;
      }
    }
    out.push_back(std::move(fam));
  }
  return out;
}

}  // namespace ws::metrics
