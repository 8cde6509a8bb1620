// Does scraping cost the data plane anything? A stand-in data-plane core counts as fast as
// it can (counters, drop reasons, a histogram; publish every 100 ms like the data plane)
// while, in alternate runs, a separate *process* scrapes the segment every 100 ms exactly
// as wirespeed-control serve does (Reader + families + text serializer). Prints medians and
// spreads of several runs with and without scraping, side by side.
//   stats_scrape_bench [RUNS] [SECONDS_PER_RUN]
#include <prometheus/text_serializer.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "control/metrics/collector.hpp"
#include "control/stats/writer.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace ws::stats;

pid_t start_scraper(const std::string& path) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  ws::metrics::SegmentCollector collector(path);
  prometheus::TextSerializer serializer;
  size_t bytes = 0;
  for (;;) {
    bytes += serializer.Serialize(collector.Collect()).size();
    usleep(100'000);
  }
}

// Messages per second the "core" handles during one run.
double run_once(Writer& w, const std::vector<Slot>& counters, const Slot& hist, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  auto next_publish = Clock::now();
  uint64_t messages = 0;
  uint64_t* v = w.core_values(0);
  while (true) {
    // One "burst" of 32 small messages: a handful of counter updates each.
    for (int i = 0; i < 32; ++i) {
      v[counters[messages % counters.size()].offset] += 1;
      v[counters[0].offset] += 64;
      histogram_observe(v + hist.offset, 20'000 + (messages & 1023));
      ++messages;
    }
    auto now = Clock::now();
    if (now >= next_publish) {
      w.publish(0);
      w.publish_global();
      next_publish = now + std::chrono::milliseconds(100);
      if (now >= end) break;
    }
  }
  return static_cast<double>(messages) / seconds;
}

struct Stats {
  double median, min, max;
};
Stats summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  std::string path = "/tmp/wirespeed-scrape-bench-" + std::to_string(getpid()) + ".stats";
  Writer w;
  if (!w.create(path)) return std::fprintf(stderr, "%s\n", w.last_error().c_str()), 1;
  std::vector<Slot> counters;
  for (int r = 0; r < 48; ++r) {
    MetricSpec s;
    s.name = "wirespeed_drops_total";
    s.help = "Drops.";
    s.labels = {{"reason", "r" + std::to_string(r)}};
    counters.push_back(*w.register_metric(s));
  }
  MetricSpec h;
  h.name = "wirespeed_ping_rtt_seconds";
  h.help = "RTT.";
  h.type = MetricType::kHistogram;
  h.labels = {{"service", "rtt"}};
  h.histogram = {1e-9, 10, 34};
  Slot hist = *w.register_metric(h);
  if (!w.seal()) return std::fprintf(stderr, "%s\n", w.last_error().c_str()), 1;

  std::vector<double> quiet, scraped;
  run_once(w, counters, hist, 0.3);  // warm-up
  for (int i = 0; i < runs; ++i) {
    quiet.push_back(run_once(w, counters, hist, seconds));
    pid_t scraper = start_scraper(path);
    scraped.push_back(run_once(w, counters, hist, seconds));
    kill(scraper, SIGKILL);
    waitpid(scraper, nullptr, 0);
  }
  w.remove();
  Stats q = summarize(quiet), s = summarize(scraped);
  std::printf("%-28s %14s %14s %14s\n", "", "median msg/s", "min", "max");
  std::printf("%-28s %14.0f %14.0f %14.0f\n", "no scraping", q.median, q.min, q.max);
  std::printf("%-28s %14.0f %14.0f %14.0f\n", "scrape every 100 ms", s.median, s.min, s.max);
  std::printf(
      "ratio of medians (scraped / quiet): %.3f; run-to-run spread without scraping: "
      "%.1f%%  (%d runs of %.1f s each)\n",
      s.median / q.median, 100.0 * (q.max - q.min) / q.median, runs, seconds);
  return 0;
}
