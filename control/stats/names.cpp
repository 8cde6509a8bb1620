#include "control/stats/names.hpp"

#include <algorithm>

namespace ws::stats {
namespace {

bool is_name_char(char c, bool first) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return first ? alpha : alpha || (c >= '0' && c <= '9');
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Label values are identifiers from the config (port and service names) or fixed
// vocabularies (states, reasons): letters, digits and a little punctuation.
bool is_value_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

}  // namespace

std::string validate_metric_name(std::string_view name, MetricType type) {
  if (name.empty() || name.size() >= kNameMax) {
    return "metric name must be 1.." + std::to_string(kNameMax - 1) + " characters";
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (!is_name_char(name[i], i == 0)) {
      return "metric name '" + std::string(name) + "' must match [a-zA-Z_][a-zA-Z0-9_]*";
    }
  }
  if (!name.starts_with("wirespeed_")) {
    return "metric name '" + std::string(name) + "' must start with wirespeed_";
  }
  for (std::string_view reserved : kReservedNames) {
    if (name == reserved)
      return "'" + std::string(name) + "' is served by wirespeed-control itself";
  }
  bool total = ends_with(name, "_total");
  if (type == MetricType::kCounter && !total) {
    return "counter '" + std::string(name) + "' must end in _total";
  }
  if (type != MetricType::kCounter && total) {
    return "only counters may end in _total: '" + std::string(name) + "'";
  }
  for (std::string_view reserved : {"_bucket", "_sum", "_count"}) {
    if (type == MetricType::kHistogram && ends_with(name, reserved)) {
      return "histogram '" + std::string(name) + "' must not end in " + std::string(reserved);
    }
  }
  return {};
}

std::string validate_labels(std::span<const LabelPair> labels, Scope scope) {
  size_t limit = scope == Scope::kPerCoreLabeled ? kMaxLabels - 1 : kMaxLabels;
  if (labels.size() > limit) return "at most " + std::to_string(limit) + " labels";
  for (size_t i = 0; i < labels.size(); ++i) {
    const LabelPair& l = labels[i];
    if (std::find(std::begin(kAllowedLabelKeys), std::end(kAllowedLabelKeys), l.key) ==
        std::end(kAllowedLabelKeys)) {
      std::string allowed;
      for (std::string_view k : kAllowedLabelKeys)
        allowed += (allowed.empty() ? "" : ", ") + std::string(k);
      return "label '" + std::string(l.key) + "' is not one of " + allowed;
    }
    if (scope == Scope::kPerCoreLabeled && l.key == "core") {
      return "label 'core' is added by Scope::kPerCoreLabeled; do not pass it";
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].key == l.key) return "label '" + std::string(l.key) + "' given twice";
    }
    if (l.value.empty() || l.value.size() >= kLabelValueMax) {
      return "label " + std::string(l.key) + " value must be 1.." +
             std::to_string(kLabelValueMax - 1) + " characters";
    }
    if (!std::all_of(l.value.begin(), l.value.end(), is_value_char)) {
      return "label " + std::string(l.key) + "='" + std::string(l.value) +
             "' may only contain letters, digits, '_', '-' and '.'";
    }
  }
  return {};
}

std::string validate_info_key(std::string_view key) {
  if (key.empty() || key.size() >= kInfoKeyMax) {
    return "info key must be 1.." + std::to_string(kInfoKeyMax - 1) + " characters";
  }
  return {};
}

}  // namespace ws::stats
