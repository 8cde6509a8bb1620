// Validation of what the data plane registers: metric names, label keys and label values.
// Labels are bounded by construction: only the keys below are accepted, and values are
// short identifiers, so an address or a connection id cannot become a label by accident.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "control/stats/layout.hpp"

namespace ws::stats {

inline constexpr std::string_view kAllowedLabelKeys[] = {
    "port",      "queue",  "core", "service", "state",  "reason",
    "direction", "result", "sa",   "kind",    "family",
};

// Families that wirespeed-control produces itself; the data plane may not register them.
inline constexpr std::string_view kReservedNames[] = {
    "wirespeed_up",
    "wirespeed_build_info",
    "wirespeed_dataplane_start_time_seconds",
};

struct LabelPair {
  std::string_view key;
  std::string_view value;
};

// Each returns an empty string when valid, else a message naming the problem.
std::string validate_metric_name(std::string_view name, MetricType type);
std::string validate_labels(std::span<const LabelPair> labels, Scope scope);
std::string validate_info_key(std::string_view key);

}  // namespace ws::stats
