// What wirespeed-control needs from the config, resolved once: the only file that knows the
// config library's types, so the rest of the CLI does not change when the config grows.
#pragma once

#include <string>
#include <vector>

#include "control/cli/options.hpp"

namespace ws::cli {

struct PortSettings {
  std::string name;
  std::string device;   // vdev string or PCI address
  std::string address;  // "10.77.0.1/24"
  std::string mac;      // configured MAC, or empty (the port's own; the data plane reports it)
  uint32_t mtu = 0;
};

struct ServiceSettings {
  std::string name;
  std::string kind;
  std::string protocol;
};

struct Settings {
  std::string segment_path;
  std::string capture_path;
  std::string listen = "127.0.0.1:9550";
  std::string file_prefix;
  std::vector<PortSettings> ports;
  std::vector<ServiceSettings> services;
};

// Load the config named by the options (if any) and apply the overrides. On failure,
// returns false with every config error in `error`, one per line, as FILE:LINE:COL: message.
bool resolve_settings(const Options& options, Settings* out, std::string* error);

}  // namespace ws::cli
