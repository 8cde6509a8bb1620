#include "dataplane/eal_args.hpp"

namespace ws::dp {

std::string port_device_name(const config::PortConfig& p) {
  if (!p.pci.empty()) return p.pci;
  return p.device.substr(0, p.device.find(','));
}

std::vector<std::string> build_eal_args(const config::Config& cfg, const std::string& argv0) {
  std::vector<std::string> a{argv0};
  std::string lcores;
  for (uint32_t l : cfg.dataplane.lcores) {
    if (!lcores.empty()) lcores += ',';
    lcores += std::to_string(l);
  }
  a.insert(a.end(), {"-l", lcores, "--file-prefix", cfg.dataplane.file_prefix});
  if (!cfg.dataplane.hugepages) a.push_back("--no-huge");
  a.insert(a.end(), {"-m", std::to_string(cfg.dataplane.memory_mb)});
  bool any_pci = false;
  for (const auto& p : cfg.ports) {
    if (!p.pci.empty()) {
      a.insert(a.end(), {"-a", p.pci});
      any_pci = true;
    } else {
      a.insert(a.end(), {"--vdev", p.device});
    }
  }
  // Without a PCI port, scanning the bus only finds devices we must not touch.
  if (!any_pci) a.push_back("--no-pci");
  // Telemetry stays on (DPDK's own tools read /wirespeed/ commands); keep EAL quiet
  // unless the operator asks otherwise through eal_args.
  a.push_back("--log-level=lib.eal:notice");
  for (const auto& e : cfg.dataplane.eal_args) a.push_back(e);
  return a;
}

}  // namespace ws::dp
