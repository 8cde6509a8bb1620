#include "control/cli/serve.hpp"

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/exposer.h>
#include <signal.h>

#include <cstdio>
#include <exception>
#include <memory>

#include "control/cli/health.hpp"
#include "control/metrics/collector.hpp"

namespace ws::cli {

namespace {

// The exposer's HTTP server hands every request to this first: the two health paths are
// answered here, everything else goes on to the metrics handler. CivetWeb's callback has no
// user pointer of its own at this point, hence the one static.
Health* g_health = nullptr;

int answer_health(mg_connection* conn) {
  const mg_request_info* req = mg_get_request_info(conn);
  if (g_health == nullptr || req == nullptr || req->local_uri == nullptr) return 0;
  std::string_view uri = req->local_uri;
  if (uri != "/healthz" && uri != "/readyz") return 0;
  HealthAnswer a = uri == "/healthz" ? g_health->healthz() : g_health->readyz();
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
            a.status, a.status == 200 ? "OK" : "Service Unavailable", a.body.size(),
            a.body.c_str());
  return a.status;
}

}  // namespace

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
  Health health(settings.segment_path, reader_options);
  g_health = &health;
  CivetCallbacks callbacks;
  callbacks.begin_request = answer_health;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", settings.listen, "num_threads", "2"},
        &callbacks);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wirespeed-control: cannot listen on %s: %s\n", settings.listen.c_str(),
                 e.what());
    return 1;
  }
  exposer->RegisterCollectable(collector);
  std::fprintf(stderr,
               "wirespeed-control: serving http://%s/metrics (and /healthz, /readyz) from %s\n",
               settings.listen.c_str(), settings.segment_path.c_str());

  int sig = 0;
  sigwait(&stop, &sig);
  std::fprintf(stderr, "wirespeed-control: %s, exiting\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  exposer.reset();  // stop the server threads before the collector and health go away
  g_health = nullptr;
  return 0;
}

}  // namespace ws::cli
