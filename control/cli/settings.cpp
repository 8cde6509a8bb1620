#include "control/cli/settings.hpp"

#include "control/config/config.hpp"
#include "control/stats/path.hpp"

namespace ws::cli {

bool resolve_settings(const Options& options, Settings* out, std::string* error) {
  Settings s;
  if (!options.config_path.empty()) {
    ws::config::LoadResult loaded = ws::config::load_config_file(options.config_path);
    if (!loaded.config) {
      error->clear();
      for (const auto& e : loaded.errors) *error += e.format() + "\n";
      if (error->empty()) *error = options.config_path + ": cannot load config\n";
      return false;
    }
    const ws::config::Config& cfg = *loaded.config;
    s.file_prefix = cfg.dataplane.file_prefix;
    s.segment_path = ws::stats::segment_path(cfg.dataplane.file_prefix);
    s.capture_path = ws::stats::capture_path(cfg.dataplane.file_prefix);
    s.listen = cfg.control.metrics_listen.to_string();
    for (const auto& p : cfg.ports) {
      s.ports.push_back({p.name, p.device.empty() ? p.pci : p.device, p.address.to_string(),
                         p.mac ? p.mac->to_string() : std::string(), p.mtu});
    }
    for (const auto& svc : cfg.services) {
      s.services.push_back({svc.name, std::string(ws::config::to_string(svc.kind)),
                            std::string(ws::config::to_string(svc.protocol))});
    }
  }
  if (!options.stats_path.empty()) s.segment_path = options.stats_path;
  if (!options.capture_path.empty()) s.capture_path = options.capture_path;
  if (!options.listen.empty()) s.listen = options.listen;
  *out = std::move(s);
  return true;
}

}  // namespace ws::cli
