#include "dataplane/ipsec.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dataplane/steering.hpp"
#include "stack/wire/ipv4.hpp"

namespace ws::dp {

namespace {

uint8_t protocol_number(config::PolicyProtocol p) {
  switch (p) {
    case config::PolicyProtocol::tcp:
      return wire::kIpProtoTcp;
    case config::PolicyProtocol::udp:
      return wire::kIpProtoUdp;
    case config::PolicyProtocol::icmp:
      return wire::kIpProtoIcmp;
    case config::PolicyProtocol::any:
      break;
  }
  return 0;
}

}  // namespace

std::unique_ptr<ipsec::EspLayer> make_esp_layer(const config::Config& cfg, uint32_t core,
                                                const FlowOwner& owner, std::string& error) {
  const config::IpsecConfig& c = cfg.ipsec;
  if (c.sas.empty()) return nullptr;
  std::vector<ipsec::SaSpec> sas;
  for (const auto& s : c.sas) {
    ipsec::SaSpec spec;
    spec.name = s.name;
    spec.direction = s.direction;
    spec.spi = s.spi;
    spec.mode = s.mode;
    spec.local = s.local;
    spec.remote = s.remote;
    spec.cipher = s.cipher;
    spec.key = s.key;
    spec.replay_window = s.replay_window;
    spec.esn = s.esn;
    spec.here = s.direction == ipsec::Direction::inbound || sa_owner(s, owner) == core;
    sas.push_back(std::move(spec));
  }
  std::vector<ipsec::PolicySpec> policies;
  for (const auto& p : c.policies) {
    policies.push_back({p.remote, protocol_number(p.protocol), p.local_port, p.remote_port,
                        p.action, p.outbound_sa, p.inbound_sa});
  }
  // The state directory holds sequence records only: private to the data plane.
  if (!c.state_dir.empty() && ::mkdir(c.state_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    error = "ipsec.state_dir '" + c.state_dir + "': " + std::strerror(errno);
    return nullptr;
  }
  auto layer = std::make_unique<ipsec::EspLayer>();
  std::vector<std::string> warnings;
  if (!layer->init(sas, policies, c.state_dir, error, warnings)) return nullptr;
  for (const auto& w : warnings) std::fprintf(stderr, "wirespeed: ipsec: %s\n", w.c_str());
  if (core != 0) return layer;
  std::printf("wirespeed: ipsec: %zu SAs, %zu policies, ipsec-mb %s (%.*s)\n", sas.size(),
              policies.size(), IMB_VERSION_STR, static_cast<int>(layer->engine().arch().size()),
              layer->engine().arch().data());
  return layer;
}

void esp_housekeeping(ipsec::EspLayer& esp) {
  for (const auto& e : esp.refill()) std::fprintf(stderr, "wirespeed: ipsec: %s\n", e.c_str());
  // An SA that used up its sequence space stops sending (RFC 4303 3.3.3); say so once.
  for (const auto& sa : esp.outbound()) {
    if (sa->seq.exhausted() && !sa->exhaustion_logged) {
      sa->exhaustion_logged = true;
      std::fprintf(stderr,
                   "wirespeed: ipsec: SA '%s' used its whole sequence space and stopped "
                   "sending; configure a new SA (new SPI and key)\n",
                   sa->name.c_str());
    }
  }
}

}  // namespace ws::dp
