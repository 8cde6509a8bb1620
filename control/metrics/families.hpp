// Turning a stats snapshot into Prometheus metric families. Pure functions of their input,
// so they are unit-tested without a server.
#pragma once

#include <prometheus/metric_family.h>

#include <vector>

#include "control/stats/reader.hpp"

namespace ws::metrics {

// One family per registered metric name, in registration order. Per-core metrics are
// summed, or split by a `core` label for Scope::kPerCoreLabeled. Histograms export the
// buckets the data plane chose (upper bounds 2^b * scale) plus +Inf.
std::vector<prometheus::MetricFamily> families_from_snapshot(const ws::stats::Snapshot& snap);

// wirespeed_up: 1 when a live data plane's segment was read on this scrape, else 0.
prometheus::MetricFamily up_family(bool up);
// wirespeed_build_info{version,dpdk_version} 1, from this build (ws_version.h).
prometheus::MetricFamily build_info_family();
// wirespeed_dataplane_start_time_seconds: unix time the running data plane started.
prometheus::MetricFamily start_time_family(const ws::stats::Catalog& catalog);

}  // namespace ws::metrics
