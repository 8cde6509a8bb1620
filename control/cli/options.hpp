// Command-line parsing for wirespeed-control. Kept apart from main() so it is testable and
// main stays a dispatcher.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ws::cli {

enum class Command { kNone, kServe, kStatus, kCapture, kHelp, kVersion };

enum class CaptureDirection { kRx, kTx, kBoth };

// `capture`: which frames, how many, and where the pcapng goes.
struct CaptureOptions {
  std::string port;    // --port NAME; empty: every port
  int64_t queue = -1;  // --queue N; -1: every queue
  CaptureDirection direction = CaptureDirection::kBoth;
  bool drops = false;        // --drops: the frames the stack discarded, with the reason
  uint64_t count = 0;        // --count N; 0: no limit
  double seconds = 0;        // --seconds S; 0: no limit
  uint32_t snaplen = 65535;  // --snaplen B
  std::string output;        // -w FILE; "-" is standard output
};

struct Options {
  Command command = Command::kNone;
  std::string config_path;     // -c / --config
  std::string stats_path;      // --stats-path: overrides the path derived from file_prefix
  std::string listen;          // --listen: overrides control.metrics_listen (serve)
  bool json = false;           // --json (status)
  double interval_s = 1.0;     // --interval: seconds between the two status snapshots
  double stale_after_s = 5.0;  // --stale-after: heartbeat silence that means "hung"
  std::string capture_path;    // --capture-path: overrides the path derived from file_prefix
  CaptureOptions capture;
};

struct ParseResult {
  std::optional<Options> options;
  std::string error;  // set when options is empty
};

ParseResult parse_options(int argc, char** argv);
std::string usage();

}  // namespace ws::cli
