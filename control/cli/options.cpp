#include "control/cli/options.hpp"

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

}  // namespace

std::string usage() {
  return "usage: wirespeed-control -c FILE serve [--listen ADDR:PORT]\n"
         "       wirespeed-control -c FILE status [--json] [--interval SECONDS]\n"
         "       wirespeed-control --help | --version\n"
         "\n"
         "commands:\n"
         "  serve    serve Prometheus metrics on control.metrics_listen until SIGTERM/SIGINT;\n"
         "           wirespeed_up is 0 while the data plane is not running\n"
         "  status   one screen of ports, cores, services, TCP connections and drops\n"
         "\n"
         "options:\n"
         "  -c, --config FILE    wirespeed config (YAML); gives file_prefix and metrics_listen\n"
         "  --stats-path PATH    read this stats segment instead of the one for file_prefix\n"
         "  --listen ADDR:PORT   serve: listen here instead of control.metrics_listen\n"
         "  --json               status: print JSON\n"
         "  --interval SECONDS   status: time between the two snapshots for rates (1)\n"
         "  --stale-after SECS   heartbeat silence after which the data plane counts as down (5)\n"
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
    if (a == "-h" || a == "--help") {
      o.command = Command::kHelp;
      return {o, {}};
    } else if (a == "-V" || a == "--version") {
      o.command = Command::kVersion;
      return {o, {}};
    } else if (a == "-c" || a == "--config") {
      if (!next(a, &o.config_path)) return fail(std::string(a) + " needs a FILE");
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
    } else if (a == "serve" || a == "status") {
      if (o.command != Command::kNone) return fail("only one command may be given");
      o.command = a == "serve" ? Command::kServe : Command::kStatus;
    } else {
      return fail("unknown argument '" + std::string(a) + "'");
    }
  }
  if (o.command == Command::kNone) return fail("no command given (serve or status)");
  if (o.config_path.empty() && o.stats_path.empty()) {
    return fail("-c FILE is required (or --stats-path PATH)");
  }
  if (o.json && o.command != Command::kStatus) return fail("--json applies to status only");
  if (!o.listen.empty() && o.command != Command::kServe) {
    return fail("--listen applies to serve only");
  }
  return {o, {}};
}

}  // namespace ws::cli
