// The prometheus-cpp Collectable behind /metrics. Every scrape re-examines the segment
// path and copies a fresh snapshot, so values are never stale and the data plane does no
// work for a scrape. The data plane may be absent, start, crash or restart between two
// scrapes; each scrape reflects what is there now.
#pragma once

#include <prometheus/collectable.h>

#include <map>
#include <mutex>
#include <string>

#include "control/stats/reader.hpp"

namespace ws::metrics {

class SegmentCollector : public prometheus::Collectable {
 public:
  explicit SegmentCollector(std::string segment_path, ws::stats::ReaderOptions options = {});
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  // Collect() is const and may run on several exposer threads at once.
  mutable std::mutex mu_;
  mutable ws::stats::Reader reader_;
  // Highest value served per counter series in this data-plane instance: a counter never
  // goes backwards within one data-plane lifetime, even if a source value does (for
  // example a port's hardware counters being reset under us).
  mutable uint64_t instance_id_ = 0;
  mutable std::map<std::string, double> counter_floor_;
};

}  // namespace ws::metrics
