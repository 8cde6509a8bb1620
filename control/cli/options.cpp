#include "control/cli/options.hpp"

#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace ws::cli {
namespace {

bool parse_seconds(std::string_view text, double* out) {
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v > 0) || v > 3600) return false;
  *out = v;
  return true;
}

bool parse_count(std::string_view text, uint64_t max, uint64_t* out) {
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || end != s.c_str() + s.size() || errno != 0 || v > max) {
    return false;
  }
  *out = v;
  return true;
}

// The flags of `capture`. Returns an error text, "" when `a` was taken, or nullopt when
// `a` is not a capture flag.
std::optional<std::string> parse_capture_flag(std::string_view a, const char* value,
                                              bool* used_value, CaptureOptions* c) {
  static constexpr std::string_view kWithValue[] = {
      "--port", "--queue", "--direction", "--count", "--seconds", "--snaplen", "-w"};
  if (a == "--drops") {
    c->drops = true;
    return "";
  }
  bool known = false;
  for (auto f : kWithValue) known = known || a == f;
  if (!known) return std::nullopt;
  if (value == nullptr) return std::string(a) + " needs a value";
  *used_value = true;
  std::string_view v = value;
  uint64_t n = 0;
  if (a == "--port") {
    c->port = v;
  } else if (a == "--queue") {
    if (!parse_count(v, 65535, &n)) return std::string("--queue needs a queue number 0..65535");
    c->queue = static_cast<int64_t>(n);
  } else if (a == "--direction") {
    if (v == "rx")
      c->direction = CaptureDirection::kRx;
    else if (v == "tx")
      c->direction = CaptureDirection::kTx;
    else if (v == "both")
      c->direction = CaptureDirection::kBoth;
    else
      return std::string("--direction takes rx, tx or both");
  } else if (a == "--count") {
    if (!parse_count(v, UINT64_MAX, &n) || n == 0) return std::string("--count needs N >= 1");
    c->count = n;
  } else if (a == "--seconds") {
    if (!parse_seconds(v, &c->seconds)) {
      return std::string("--seconds needs a number of seconds in (0, 3600]");
    }
  } else if (a == "--snaplen") {
    if (!parse_count(v, 65535, &n) || n < 14) return std::string("--snaplen takes 14..65535");
    c->snaplen = static_cast<uint32_t>(n);
  } else {
    c->output = v;
  }
  return "";
}

// Checks that only apply once the whole command line is read.
std::string check_combination(const Options& o) {
  if (o.json && o.command != Command::kStatus) return "--json applies to status only";
  if (!o.listen.empty() && o.command != Command::kServe) return "--listen applies to serve only";
  if (o.command != Command::kCapture) {
    if (!o.capture.output.empty() || !o.capture.port.empty() || o.capture.drops ||
        !o.capture_path.empty()) {
      return "--port, --queue, --direction, --drops, --count, --seconds, --snaplen, -w and "
             "--capture-path apply to capture only";
    }
    return "";
  }
  if (o.capture.output.empty()) return "capture needs -w FILE (or -w - for standard output)";
  if (o.config_path.empty() && o.capture_path.empty()) {
    return "capture needs -c FILE (or --capture-path PATH)";
  }
  return "";
}

}  // namespace

std::string usage() {
  return "usage: wirespeed-control -c FILE serve [--listen ADDR:PORT]\n"
         "       wirespeed-control -c FILE status [--json] [--interval SECONDS]\n"
         "       wirespeed-control -c FILE capture [--port NAME] [--queue N]\n"
         "                         [--direction rx|tx|both] [--drops] [--count N]\n"
         "                         [--seconds S] [--snaplen B] -w FILE.pcapng|-\n"
         "       wirespeed-control --help | --version\n"
         "\n"
         "commands:\n"
         "  serve    serve Prometheus metrics on control.metrics_listen until SIGTERM/SIGINT;\n"
         "           wirespeed_up is 0 while the data plane is not running\n"
         "  status   one screen of ports, cores, services, TCP connections and drops\n"
         "  capture  copy frames off the running data plane into pcapng (nanosecond\n"
         "           timestamps, one interface per port and queue) until --count, --seconds\n"
         "           or Ctrl-C; --drops writes the frames the stack discarded, each with its\n"
         "           drop reason as the packet comment\n"
         "\n"
         "options:\n"
         "  -c, --config FILE    wirespeed config (YAML); gives file_prefix and metrics_listen\n"
         "  --stats-path PATH    read this stats segment instead of the one for file_prefix\n"
         "  --listen ADDR:PORT   serve: listen here instead of control.metrics_listen\n"
         "  --json               status: print JSON\n"
         "  --interval SECONDS   status: time between the two snapshots for rates (1)\n"
         "  --stale-after SECS   heartbeat silence after which the data plane counts as down (5)\n"
         "  --port NAME          capture: this port only (default: every port)\n"
         "  --queue N            capture: this queue only (default: every queue)\n"
         "  --direction D        capture: rx, tx or both (both)\n"
         "  --drops              capture: discarded frames with their reasons, not traffic\n"
         "  --count N            capture: stop after N frames\n"
         "  --seconds S          capture: stop after S seconds\n"
         "  --snaplen B          capture: bytes kept of each frame, 14..65535 (65535)\n"
         "  -w FILE              capture: write pcapng to FILE; - for standard output\n"
         "  --capture-path PATH  capture: use this capture segment, not the file_prefix's\n"
         "  -h, --help           this text\n"
         "  -V, --version        version, and the DPDK version it was built against\n";
}

ParseResult parse_options(int argc, char** argv) {
  Options o;
  auto fail = [](std::string why) { return ParseResult{std::nullopt, std::move(why)}; };
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&](std::string_view flag, std::string* dst) {
      if (i + 1 >= argc) return false;
      *dst = argv[++i];
      (void)flag;
      return true;
    };
    std::string v;
    bool used = false;
    if (auto e = parse_capture_flag(a, i + 1 < argc ? argv[i + 1] : nullptr, &used, &o.capture)) {
      if (!e->empty()) return fail(*e);
      if (used) ++i;
      continue;
    }
    if (a == "-h" || a == "--help") {
      o.command = Command::kHelp;
      return {o, {}};
    } else if (a == "-V" || a == "--version") {
      o.command = Command::kVersion;
      return {o, {}};
    } else if (a == "-c" || a == "--config") {
      if (!next(a, &o.config_path)) return fail(std::string(a) + " needs a FILE");
    } else if (a == "--capture-path") {
      if (!next(a, &o.capture_path)) return fail("--capture-path needs a PATH");
    } else if (a == "--stats-path") {
      if (!next(a, &o.stats_path)) return fail("--stats-path needs a PATH");
    } else if (a == "--listen") {
      if (!next(a, &o.listen)) return fail("--listen needs ADDR:PORT");
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--interval") {
      if (!next(a, &v) || !parse_seconds(v, &o.interval_s)) {
        return fail("--interval needs a number of seconds in (0, 3600]");
      }
    } else if (a == "--stale-after") {
      if (!next(a, &v) || !parse_seconds(v, &o.stale_after_s)) {
        return fail("--stale-after needs a number of seconds in (0, 3600]");
      }
    } else if (a == "serve" || a == "status" || a == "capture") {
      if (o.command != Command::kNone) return fail("only one command may be given");
      o.command = a == "serve"    ? Command::kServe
                  : a == "status" ? Command::kStatus
                                  : Command::kCapture;
    } else {
      return fail("unknown argument '" + std::string(a) + "'");
    }
  }
  if (o.command == Command::kNone) return fail("no command given (serve, status or capture)");
  if (o.config_path.empty() && o.stats_path.empty() && o.capture_path.empty()) {
    return fail("-c FILE is required (or --stats-path PATH)");
  }
  if (std::string e = check_combination(o); !e.empty()) return fail(e);
  return {o, {}};
}

}  // namespace ws::cli
