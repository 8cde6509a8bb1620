// Command-line parsing for wirespeed-control. Kept apart from main() so it is testable and
// main stays a dispatcher.
#pragma once

#include <optional>
#include <string>

namespace ws::cli {

enum class Command { kNone, kServe, kStatus, kHelp, kVersion };

struct Options {
  Command command = Command::kNone;
  std::string config_path;     // -c / --config
  std::string stats_path;      // --stats-path: overrides the path derived from file_prefix
  std::string listen;          // --listen: overrides control.metrics_listen (serve)
  bool json = false;           // --json (status)
  double interval_s = 1.0;     // --interval: seconds between the two status snapshots
  double stale_after_s = 5.0;  // --stale-after: heartbeat silence that means "hung"
};

struct ParseResult {
  std::optional<Options> options;
  std::string error;  // set when options is empty
};

ParseResult parse_options(int argc, char** argv);
std::string usage();

}  // namespace ws::cli
