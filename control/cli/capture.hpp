// `wirespeed-control capture`: frames off the running data plane into a pcapng file.
#pragma once

#include "control/cli/options.hpp"
#include "control/cli/settings.hpp"

namespace ws::cli {

// Runs until --count frames, --seconds, SIGINT/SIGTERM, the data plane's exit, or a failed
// write (a closed pipe). Exit status: 0, or 1 with a message on standard error.
int run_capture(const Options& options, const Settings& settings);

}  // namespace ws::cli
