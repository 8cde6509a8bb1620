// DPDK telemetry commands under /wirespeed/, so dpdk-telemetry.py reads the same
// figures as Prometheus. They read the published stats segment (a consistent
// snapshot), never the cores' live counters.
#pragma once

#include <string>

namespace ws::dp {

// Registers the commands; `segment_path` is the stats segment of this instance.
void register_telemetry(const std::string& segment_path);

}  // namespace ws::dp
