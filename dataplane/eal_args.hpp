// EAL command line built from the config (dataplane.*, ports[].device / pci).
#pragma once

#include <string>
#include <vector>

#include "control/config/config.hpp"

namespace ws::dp {

std::vector<std::string> build_eal_args(const config::Config& cfg, const std::string& argv0);

// The ethdev name a port will have: the vdev name before the first comma, or the
// PCI address.
std::string port_device_name(const config::PortConfig& p);

}  // namespace ws::dp
