// Where the stats segment of a data-plane instance lives. Both processes derive it from
// the config's dataplane.file_prefix, so they agree without talking to each other.
#pragma once

#include <string>
#include <string_view>

namespace ws::stats {

// The directory holding segments:
//   $WIRESPEED_RUNTIME_DIR            when set (tests, unusual deployments)
//   /run/wirespeed                    when running as root (systemd RuntimeDirectory=)
//   $XDG_RUNTIME_DIR/wirespeed        otherwise, when set
//   /tmp/wirespeed-<uid>              otherwise
std::string runtime_dir();

// <runtime_dir()>/<file_prefix>.stats
std::string segment_path(std::string_view file_prefix);

// <runtime_dir()>/<file_prefix>.capture: the packet-capture rings (control/capture/).
std::string capture_path(std::string_view file_prefix);

}  // namespace ws::stats
