#include "control/cli/serve.hpp"

#include <prometheus/exposer.h>
#include <signal.h>

#include <cstdio>
#include <exception>
#include <memory>

#include "control/metrics/collector.hpp"

namespace ws::cli {

int run_serve(const Options& options, const Settings& settings) {
  // Block the stop signals before the exposer starts its threads (they inherit the mask),
  // then wait for them synchronously here: no async-signal-safety puzzles.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a scraper hanging up must not kill the exporter

  ws::stats::ReaderOptions reader_options;
  reader_options.stale_after_s = options.stale_after_s;
  auto collector =
      std::make_shared<ws::metrics::SegmentCollector>(settings.segment_path, reader_options);
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(settings.listen, 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wirespeed-control: cannot listen on %s: %s\n", settings.listen.c_str(),
                 e.what());
    return 1;
  }
  exposer->RegisterCollectable(collector);
  std::fprintf(stderr, "wirespeed-control: serving http://%s/metrics from %s\n",
               settings.listen.c_str(), settings.segment_path.c_str());

  int sig = 0;
  sigwait(&stop, &sig);
  std::fprintf(stderr, "wirespeed-control: %s, exiting\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  exposer.reset();  // stop the server threads before the collector goes away
  return 0;
}

}  // namespace ws::cli
