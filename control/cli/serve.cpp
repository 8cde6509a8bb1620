#include "control/cli/serve.hpp"

#include <CivetServer.h>
#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <prometheus/exposer.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

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

// One TCP connection to 127.0.0.1:`port`, closed at once (refused if the exposer listens
// on another address: then stopping just takes its usual time).
void poke(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  close(fd);
}

// CivetWeb's accept thread looks at its stop flag only between polls of the listening
// sockets, and each poll waits up to 2 s for a connection (SOCKET_TIMEOUT_QUANTUM in
// CivetWeb 1.15), so a stop alone took 2 s. A connection now and then while the exposer
// stops wakes that poll: the process exits in milliseconds.
void stop_promptly(std::unique_ptr<prometheus::Exposer>& exposer) {
  const std::vector<int> ports = exposer->GetListeningPorts();
  std::atomic<bool> stopped{false};
  std::thread waker([&ports, &stopped] {
    for (int i = 0; i < 100 && !stopped.load(); ++i) {  // at most about 2 s, like the poll
      for (int port : ports) poke(port);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  exposer.reset();
  stopped.store(true);
  waker.join();
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
  stop_promptly(exposer);  // stop the server threads before the collector and health go away
  g_health = nullptr;
  return 0;
}

}  // namespace ws::cli
