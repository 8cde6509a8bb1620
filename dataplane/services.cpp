#include "dataplane/services.hpp"

#include "stack/apps/tcp_services.hpp"
#include "stack/apps/udp_services.hpp"

namespace ws::dp {

std::unique_ptr<Service> make_service(const config::ServiceConfig& sc, const config::Config& cfg,
                                      tcp::TcpStack& tcp, std::string& why) {
  (void)cfg;
  using config::Protocol;
  using config::ServiceKind;
  if (sc.protocol == Protocol::udp) {
    switch (sc.kind) {
      case ServiceKind::echo:
        return std::make_unique<UdpEchoService>(sc.name, sc.port);
      case ServiceKind::sink:
        return std::make_unique<UdpSinkService>(sc.name, sc.port);
      default:
        break;
    }
  } else {
    switch (sc.kind) {
      case ServiceKind::echo:
        return std::make_unique<TcpEchoService>(sc.name, sc.port, tcp);
      case ServiceKind::sink:
        return std::make_unique<TcpSinkService>(sc.name, sc.port, tcp);
      default:
        break;
    }
  }
  why = std::string("kind ") + std::string(config::to_string(sc.kind)) + " over " +
        std::string(config::to_string(sc.protocol)) +
        " is not implemented yet in this build; the service is not started";
  return nullptr;
}

}  // namespace ws::dp
