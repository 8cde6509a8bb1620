// `wirespeed-control serve`: the Prometheus exporter.
#pragma once

#include "control/cli/options.hpp"
#include "control/cli/settings.hpp"

namespace ws::cli {

// Serves /metrics until SIGTERM or SIGINT (exit status 0). Returns 1 when it cannot listen.
int run_serve(const Options& options, const Settings& settings);

}  // namespace ws::cli
