// /healthz and /readyz next to /metrics, for Kubernetes probes and load balancers. Both
// judge the data plane from its stats segment, as the exporter does:
//   /healthz  200 while the data plane runs and beats; 503 when it is absent, stopped, dead
//             or hung (heartbeat older than --stale-after). A liveness probe of the data
//             plane's container restarts a hung data plane.
//   /readyz   200 when healthy and every port's link is up; 503 otherwise. A readiness probe
//             takes the pod out of service while a link is down.
// The body is one line saying why.
#pragma once

#include <mutex>
#include <string>

#include "control/stats/reader.hpp"

namespace ws::cli {

struct HealthAnswer {
  int status = 503;
  std::string body;
};

class Health {
 public:
  Health(std::string segment_path, stats::ReaderOptions options);
  // Thread-safe: the HTTP server calls it from its worker threads.
  HealthAnswer healthz();
  HealthAnswer readyz();

 private:
  HealthAnswer judge(bool need_links);

  std::mutex mutex_;
  stats::Reader reader_;
};

}  // namespace ws::cli
