#include "control/cli/status.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace ws::cli {
namespace {

std::string not_running_message(ws::stats::Liveness l, const ws::stats::Reader& reader,
                                const Settings& settings) {
  std::string where = settings.file_prefix.empty()
                          ? reader.path()
                          : reader.path() + " (file_prefix " + settings.file_prefix + ")";
  switch (l) {
    case ws::stats::Liveness::kAbsent:
      return "the data plane is not running: no stats segment at " + where;
    case ws::stats::Liveness::kInvalid:
      return "cannot read the stats segment: " + reader.error();
    case ws::stats::Liveness::kStopped:
      return "the data plane is stopping (" + where + ")";
    case ws::stats::Liveness::kDead:
      return "the data plane is not running: pid " +
             std::to_string(reader.catalog() ? reader.catalog()->pid : 0) +
             " is gone, its stats segment " + where + " is left over from a crash";
    case ws::stats::Liveness::kStale:
      return "the data plane is not responding: no heartbeat for " +
             std::to_string(static_cast<int>(reader.heartbeat_age_s())) + " s (" + where + ")";
    case ws::stats::Liveness::kLive:
      break;
  }
  return "cannot read the data plane's statistics from " + where;
}

}  // namespace

int run_status(const Options& options, const Settings& settings) {
  ws::stats::ReaderOptions ro;
  ro.stale_after_s = options.stale_after_s;
  ws::stats::Reader reader(settings.segment_path, ro);
  ws::stats::Snapshot a, b;
  auto take = [&](ws::stats::Snapshot* s) {
    ws::stats::Liveness l = reader.refresh();
    if (l != ws::stats::Liveness::kLive || !reader.read(s)) {
      std::fprintf(stderr, "wirespeed-control: %s\n",
                   not_running_message(l, reader, settings).c_str());
      return false;
    }
    return true;
  };
  if (!take(&a)) return 1;
  double whole = 0;
  double frac = std::modf(options.interval_s, &whole);
  timespec ts{static_cast<time_t>(whole), static_cast<long>(frac * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
  if (!take(&b)) return 1;
  if (b.catalog->instance_id != a.catalog->instance_id) {
    // Restarted in between: rates across two lifetimes mean nothing; start again.
    a = b;
    ts = {static_cast<time_t>(whole), static_cast<long>(frac * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
    if (!take(&b) || b.catalog->instance_id != a.catalog->instance_id) return 1;
  }
  StatusReport report = build_status_report(settings, a, b);
  std::string text = options.json ? render_json(report) : render_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace ws::cli
