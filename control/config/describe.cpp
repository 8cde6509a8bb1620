// A one-paragraph summary of a valid config, for `--check` and logs: enough to confirm that
// the file says what the operator meant, without repeating every default.
#include <cstdio>
#include <sstream>

#include "control/config/config.hpp"

namespace ws::config {

namespace {

template <typename T>
std::string plural(T n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

void describe_port(std::ostringstream& os, const PortConfig& p) {
  os << p.name << " (" << (p.pci.empty() ? p.device : "pci " + p.pci) << ", "
     << p.address.to_string() << ", mtu " << p.mtu << ", " << p.rx_queues << "/" << p.tx_queues
     << " rx/tx queues";
  for (const auto& a : p.addresses6) os << ", " << a.to_string();
  if (p.gateway) os << ", gateway " << p.gateway->to_string();
  if (p.gateway6) os << ", gateway6 " << p.gateway6->to_string();
  if (p.mac) os << ", mac " << p.mac->to_string();
  if (p.frame_buffers != FrameBuffers::automatic)
    os << ", " << to_string(p.frame_buffers) << " frame buffers";
  if (p.tso != Tso::automatic) os << ", tso " << to_string(p.tso);
  if (p.l4_checksums != L4Checksums::on) os << ", l4_checksums " << to_string(p.l4_checksums);
  for (const auto& n : p.neighbors)
    os << ", neighbour " << n.address.to_string() << " at " << n.mac.to_string();
  os << ")";
}

void describe_service(std::ostringstream& os, const ServiceConfig& s) {
  os << s.name << " (" << to_string(s.kind) << " " << to_string(s.protocol);
  if (is_client(s.kind)) {
    if (s.target) os << " to " << s.target->to_string();
    if (s.kind == ServiceKind::http_client) {
      os << ", GET " << s.http_client.path;
      if (s.http_client.requests_per_connection != 0)
        os << ", " << s.http_client.requests_per_connection << " per connection";
    } else {
      os << ", " << s.message_size << "-byte messages";
    }
    if (s.connections != 1) os << ", " << s.connections << " connections";
    if (s.count != 0)
      os << ", " << s.count << (s.kind == ServiceKind::ping ? " round trips" : " messages");
    if (s.duration_s != 0) os << ", " << s.duration_s << " s";
    if (s.rate != 0)
      os << ", " << s.rate << (s.kind == ServiceKind::http_client ? " requests/s" : " msg/s");
    if (!s.report.empty()) os << ", report " << s.report;
  } else {
    os << "/" << s.port;
    if (s.kind == ServiceKind::http) os << ", " << plural(s.responses.size(), "path", "paths");
  }
  os << ")";
}

// Names, modes and SPIs only: a key never appears in --check output.
void describe_ipsec(std::ostringstream& os, const IpsecConfig& c) {
  if (c.sas.empty()) return;
  os << " IPsec: " << plural(c.sas.size(), "SA", "SAs") << ": ";
  for (size_t i = 0; i < c.sas.size(); ++i) {
    const SaConfig& s = c.sas[i];
    char spi[16];
    std::snprintf(spi, sizeof spi, "0x%08x", s.spi);
    os << (i ? ", " : "") << s.name << " (" << ipsec::to_string(s.direction) << " "
       << ipsec::to_string(s.mode) << " " << ipsec::to_string(s.cipher) << ", spi " << spi << ", "
       << s.local.to_string() << (s.direction == ipsec::Direction::outbound ? " -> " : " <- ")
       << s.remote.to_string() << (s.esn ? ", esn" : "") << ")";
  }
  os << "; " << plural(c.policies.size(), "policy", "policies") << ".";
}

}  // namespace

std::string describe(const Config& c) {
  std::ostringstream os;
  const DataplaneConfig& dp = c.dataplane;
  os << "Config version " << c.version << ": " << plural(dp.lcores.size(), "lcore", "lcores")
     << " [";
  for (size_t i = 0; i < dp.lcores.size(); ++i) os << (i ? " " : "") << dp.lcores[i];
  os << "]" << (dp.lcores_auto ? " (auto: the CPUs this process may run on)" : "") << ", idle "
     << to_string(dp.idle) << ", " << (dp.hugepages ? "hugepages" : "no hugepages") << ", "
     << dp.memory_mb << " MB, file prefix " << dp.file_prefix << ". ";

  os << plural(c.ports.size(), "port", "ports") << ": ";
  for (size_t i = 0; i < c.ports.size(); ++i) {
    if (i) os << ", ";
    describe_port(os, c.ports[i]);
  }
  os << ". ";

  if (c.services.empty()) {
    os << "No services. ";
  } else {
    os << plural(c.services.size(), "service", "services") << ": ";
    for (size_t i = 0; i < c.services.size(); ++i) {
      if (i) os << ", ";
      describe_service(os, c.services[i]);
    }
    os << ". ";
  }

  os << "TCP " << to_string(c.tcp.congestion) << ", receive buffer "
     << (c.tcp.receive_buffer_bytes ? std::to_string(*c.tcp.receive_buffer_bytes) + " bytes"
                                    : std::string("autotuned"))
     << "; TX batching " << (c.pipeline.batching ? "on" : "off") << " (max "
     << c.pipeline.max_batch_bytes << " bytes). Metrics on " << c.control.metrics_listen.to_string()
     << ".";
  describe_ipsec(os, c.ipsec);
  return os.str();
}

}  // namespace ws::config
