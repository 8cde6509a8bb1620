#include "dataplane/services.hpp"

#include <sys/resource.h>

#include "stack/apps/http_client.hpp"
#include "stack/apps/http_service.hpp"
#include "stack/apps/iperf3_service.hpp"
#include "stack/apps/tcp_clients.hpp"
#include "stack/apps/tcp_services.hpp"
#include "stack/apps/udp_clients.hpp"
#include "stack/apps/udp_services.hpp"

namespace ws::dp {

namespace {

using config::Protocol;
using config::ServiceKind;

ClientParams client_params(const config::ServiceConfig& sc, const config::Config& cfg,
                           ClientShare share) {
  ClientParams cp;
  if (sc.target) cp.target = *sc.target;
  cp.message_size = sc.message_size;
  cp.connections = static_cast<uint32_t>(share.of(sc.connections));
  cp.duration = Duration::seconds(sc.duration_s);
  cp.rate = share.of(sc.rate);
  cp.count = share.of(sc.count);
  cp.reconnect = sc.reconnect;
  cp.max_connecting = sc.max_connecting;
  cp.framing = sc.framing == config::Framing::none ? Framing::kNone : Framing::kLength32;
  // TCP services with length32 framing send through one TX batch pipeline per connection.
  cp.pipeline.max_batch_bytes = cfg.pipeline.max_batch_bytes;
  cp.pipeline.backoff = Duration::micros(cfg.pipeline.backoff_us);
  cp.pipeline.batching = cfg.pipeline.batching;
  cp.pipeline.max_batches = cfg.pipeline.max_batches;
  cp.pipeline.mss_multiple = cfg.pipeline.mss_multiple;
  return cp;
}

std::unique_ptr<Service> udp_service(const config::ServiceConfig& sc, const config::Config& cfg,
                                     const ClientParams& cp) {
  // UDP clients bind a port of their own: one per configured service.
  uint16_t udp_local = 49152;
  for (const auto& s : cfg.services) {
    if (&s == &sc) break;
    ++udp_local;
  }
  switch (sc.kind) {
    case ServiceKind::source:
      return std::make_unique<UdpSourceService>(sc.name, cp, udp_local);
    case ServiceKind::ping:
      return std::make_unique<UdpPingService>(sc.name, cp, udp_local);
    case ServiceKind::echo:
      return std::make_unique<UdpEchoService>(sc.name, sc.port);
    case ServiceKind::sink:
      return std::make_unique<UdpSinkService>(sc.name, sc.port);
    default:
      return nullptr;
  }
}

std::unique_ptr<Service> iperf3_service(const config::ServiceConfig& sc, tcp::TcpStack& tcp) {
  auto svc = std::make_unique<Iperf3Service>(sc.name, sc.port, tcp);
  // The service runs on its core's thread, so that thread's clock is its CPU use.
  svc->set_cpu_clock([] {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    auto d = [](const timeval& tv) {
      return Duration::micros(static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec);
    };
    return CpuTimes{d(ru.ru_utime), d(ru.ru_stime)};
  });
  return svc;
}

std::unique_ptr<Service> tcp_service(const config::ServiceConfig& sc, const ClientParams& cp,
                                     tcp::TcpStack& tcp) {
  switch (sc.kind) {
    case ServiceKind::echo:
      return std::make_unique<TcpEchoService>(sc.name, sc.port, tcp, cp.framing, cp.pipeline);
    case ServiceKind::sink:
      return std::make_unique<TcpSinkService>(sc.name, sc.port, tcp, cp.framing);
    case ServiceKind::source:
      return std::make_unique<TcpSourceService>(sc.name, cp, tcp);
    case ServiceKind::ping:
      return std::make_unique<TcpPingService>(sc.name, cp, tcp);
    case ServiceKind::iperf3:
      return iperf3_service(sc, tcp);
    case ServiceKind::http: {
      std::vector<HttpRoute> routes;
      routes.reserve(sc.responses.size());
      for (const auto& r : sc.responses)
        routes.push_back({r.path, r.status, r.content_type, r.body, r.body_bytes});
      return std::make_unique<HttpService>(sc.name, sc.port, tcp, std::move(routes), HttpLimits{});
    }
    case ServiceKind::http_client: {
      const config::HttpClientConfig& hc = sc.http_client;
      HttpClientParams hp{hc.path, hc.requests_per_connection, hc.expect_status,
                          hc.expect_body_bytes, hc.check_body};
      return std::make_unique<HttpClientService>(sc.name, cp, std::move(hp), tcp);
    }
    default:
      return nullptr;
  }
}

}  // namespace

std::unique_ptr<Service> make_service(const config::ServiceConfig& sc, const config::Config& cfg,
                                      tcp::TcpStack& tcp, std::string& why, ClientShare share) {
  ClientParams cp = client_params(sc, cfg, share);
  std::unique_ptr<Service> svc =
      sc.protocol == Protocol::udp ? udp_service(sc, cfg, cp) : tcp_service(sc, cp, tcp);
  if (svc != nullptr) return svc;
  why = std::string("kind ") + std::string(config::to_string(sc.kind)) + " over " +
        std::string(config::to_string(sc.protocol)) +
        " is not implemented yet in this build; the service is not started";
  return nullptr;
}

}  // namespace ws::dp
