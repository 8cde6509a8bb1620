#include "control/stats/path.hpp"

#include <unistd.h>

#include <cstdlib>

namespace ws::stats {

std::string runtime_dir() {
  if (const char* dir = std::getenv("WIRESPEED_RUNTIME_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (geteuid() == 0) return "/run/wirespeed";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/wirespeed";
  }
  return "/tmp/wirespeed-" + std::to_string(geteuid());
}

std::string segment_path(std::string_view file_prefix) {
  return runtime_dir() + "/" + std::string(file_prefix) + ".stats";
}

std::string capture_path(std::string_view file_prefix) {
  return runtime_dir() + "/" + std::string(file_prefix) + ".capture";
}

}  // namespace ws::stats
