// wirespeed-control: the Prometheus exporter and operator CLI. It only reads the data
// plane's stats segment; it never links DPDK and never runs on a data-plane core.
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "control/cli/capture.hpp"
#include "control/cli/options.hpp"
#include "control/cli/serve.hpp"
#include "control/cli/settings.hpp"
#include "control/cli/status.hpp"
#include "ws_version.h"

namespace {

// status is short-lived: SIGINT/SIGTERM while it waits between snapshots just ends it.
void exit_quietly(int) { _exit(0); }

}  // namespace

int main(int argc, char** argv) {
  ws::cli::ParseResult parsed = ws::cli::parse_options(argc, argv);
  if (!parsed.options) {
    std::fprintf(stderr, "wirespeed-control: %s\n%s", parsed.error.c_str(),
                 ws::cli::usage().c_str());
    return 1;
  }
  const ws::cli::Options& o = *parsed.options;
  switch (o.command) {
    case ws::cli::Command::kHelp:
      std::fputs(ws::cli::usage().c_str(), stdout);
      return 0;
    case ws::cli::Command::kVersion:
      std::printf("wirespeed-control %s (DPDK %s)\n", WS_VERSION, WS_DPDK_VERSION);
      return 0;
    default:
      break;
  }
  ws::cli::Settings settings;
  std::string error;
  if (!ws::cli::resolve_settings(o, &settings, &error)) {
    std::fputs(error.c_str(), stderr);
    return 1;
  }
  if (o.command == ws::cli::Command::kServe) return ws::cli::run_serve(o, settings);
  if (o.command == ws::cli::Command::kCapture) return ws::cli::run_capture(o, settings);
  signal(SIGINT, exit_quietly);
  signal(SIGTERM, exit_quietly);
  return ws::cli::run_status(o, settings);
}
